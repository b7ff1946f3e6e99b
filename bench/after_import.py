"""Remember right after a bulk import, through MCP stdio, code versions side by side.

What a user meets after ``memtree-mcp import``: the server a client starts next opens the store
the import just wrote, and the agent's first remembers go through it while it settles. For each
``--case NAME=CODE_DIR`` (``git archive <commit> memtree_mcp | tar -x -C CODE_DIR``, with the commit
in ``CODE_DIR/COMMIT``; ``.`` is this checkout), ``--size`` memories of ``scale.py``'s corpus
(LoCoMo dev turns recycled with other names and words) are imported by that code's own
``memtree-mcp import`` with the default embedder, and the store is kept untouched. Then, in
rounds, the cases take turns (so the machine's load falls on all alike): a fresh copy of the
case's imported store, a fresh ``memtree-mcp serve`` on stdio with ``PYTHONPATH=CODE_DIR``,
driven by the SDK's client, ``tools/list`` as a client starts, and at once ``--remembers``
remembers of the corpus's next turns. The result: per case, remember p50 and p95 at the client,
each case's p50 against the first case's, and each import's rate.

    python bench/after_import.py ../shared/bench/locomo/locomo-dev.json \
        --case 4a36e47=/tmp/memtree-bench/code-4a36e47 --case now=. --out bench/results/after-import.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import scale
from cases import imported, parse_cases, quantiles, stdio_client, timed_call, written


async def one_round(code: Path, home: Path, contents: list[str]) -> list[float]:
    """Remember each of ``contents`` through a fresh server on ``home``: the times at the client, ms."""
    async with stdio_client(code, home) as client:
        return [await timed_call(client, "remember", {"content": content}) for content in contents]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", required=True, help="NAME=CODE_DIR (repeatable)")
    parser.add_argument("data", type=Path, nargs="?", default=scale.DEFAULT_DATA, help="LoCoMo JSON")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--remembers", type=int, default=60)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memtree-bench/after-import"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/after-import.json"))
    args = parser.parse_args(argv)
    cases = parse_cases(args.case)
    args.workdir.mkdir(parents=True, exist_ok=True)
    turns, speakers, _ = scale.load_locomo(args.data)
    corpus = scale.corpus(turns, speakers, args.size + args.rounds * args.remembers)
    records = args.workdir / "import.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in corpus[: args.size]))
    rates = {}
    for name, code in cases.items():
        home = args.workdir / f"imported-{name}"
        shutil.rmtree(home, ignore_errors=True)
        seconds = imported(code, home, records)
        rates[name] = {"seconds": round(seconds, 1), "memories_per_s": round(args.size / seconds, 1)}
        print(f"{name}: imported {args.size:,} in {seconds:.1f} s", file=sys.stderr, flush=True)
    load_start = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for round_no in range(args.rounds):
        fresh = corpus[args.size + round_no * args.remembers :][: args.remembers]
        for name, code in cases.items():
            home = args.workdir / f"serving-{name}"
            shutil.rmtree(home, ignore_errors=True)
            shutil.copytree(args.workdir / f"imported-{name}", home)  # as the import left it
            runs[name] += anyio.run(one_round, code, home, [r["content"] for r in fresh])
    first = next(iter(cases))
    summary: dict[str, Any] = {name: quantiles(values) for name, values in runs.items()}
    for name in cases:
        summary[name]["vs_first"] = round(summary[name]["p50_ms"] / summary[first]["p50_ms"], 3)
        summary[name]["import"] = rates[name]
    report = {
        "benchmark": f"remember through MCP stdio right after an import of {args.size:,} memories",
        "summary": summary,
        "rounds": args.rounds,
        "remembers_per_round": args.remembers,
    }
    written(report, cases, load_start, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

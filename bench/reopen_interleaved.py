"""Reopening a namespace from its snapshot, two code versions taking turns on one copy of a store.

    python bench/reopen_interleaved.py STORE --before CODE_DIR --runs 6 --out bench/results/X.json

``STORE`` is a MEMTREE_HOME holding the namespace ``scale`` (``bench/scale.py --keep`` makes one);
it is copied once, never changed. This checkout reads the copy once (saving a current snapshot),
then the two versions reopen it in fresh processes, alternating which goes first, ``--runs`` times
each, with ``bench/reopen.py``'s ``run``. On a machine whose speed drifts from minute to minute,
taking turns compares the versions where running one after the other compares the minutes. Both
versions must read the same snapshot format and tokenize alike, or the second one re-tokenizes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from reopen import run

HERE = Path(__file__).resolve().parent
FIGURES = ("first_recall_ms", "first_recall_cpu_ms", "resume_ms", "memory_load_ms", "snapshot_read_ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument(
        "--before", type=Path, required=True, help="a directory holding the other memtree_mcp/"
    )
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, help="where to copy the store (default: a temporary one)")
    args = parser.parse_args()
    cases = {"before": args.before.resolve(), "after": HERE.parent}
    work = Path(tempfile.mkdtemp(prefix="reopen-interleaved-", dir=args.workdir))
    home = work / "home"
    shutil.copytree(args.store, home, symlinks=True)
    try:
        run(cases["after"], home)  # a snapshot of the table as it stands
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
        for turn in range(args.runs):
            order = list(cases) if turn % 2 == 0 else list(reversed(cases))
            for name in order:
                result = run(cases[name], home)
                runs[name].append(result)
                print(name, json.dumps({k: result.get(k) for k in FIGURES}), flush=True)
    finally:
        shutil.rmtree(work)
    summary = {
        name: {k: statistics.median(r[k] for r in rows if k in r) for k in (*FIGURES, "rss_mib_store_loaded")}
        for name, rows in runs.items()
    }
    report = {
        "benchmark": "reopen from the snapshot, two code versions taking turns (bench/reopen_interleaved.py)",
        "command": " ".join([sys.executable, *sys.argv]),
        "store": str(args.store),
        "summary": summary,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Reopening a namespace in a fresh process: with its snapshot, without, and by other code.

    python bench/reopen.py STORE --out bench/results/reopen-open16-10k.json [--before CODE_DIR] [--repeat 3]

``STORE`` is a MEMTREE_HOME holding the namespace ``scale`` (``bench/scale.py --keep`` makes one);
it is copied first, never changed. Each case runs ``bench/scale.py --reopen`` in a new interpreter
(model load, then the first recall, which opens the namespace; RSS after the second recall):

- ``before``: the code in ``--before`` (e.g. ``git archive main memtree_mcp | tar -x -C DIR``);
- ``whole``: this code without a snapshot: reads the table whole, then saves a snapshot;
- ``snapshot``: this code again, opening from that snapshot (``--repeat`` times).

The machine is shared: each run records the load average before and after, and the CPU time of
the first recall next to its wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUERIES = ("What does Caroline like to do on weekends?", "When did Melanie go camping?")


def run(code: Path, home: Path) -> dict[str, Any]:
    """One fresh process's reopen of ``home`` with the package at ``code``."""
    environment = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{HERE}"}
    before = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, str(HERE / "scale.py"), "--reopen", str(home), *QUERIES],
        capture_output=True,
        text=True,
        env=environment,
        timeout=3600,
        check=False,
    )
    after = os.getloadavg()[0]
    if done.returncode != 0:
        return {"error": done.stderr[-3000:], "load_before": before, "load_after": after}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "load_before": before, "load_after": after}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("store", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--before", type=Path, help="a directory holding the code before (memtree_mcp/)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="where to copy the store (default: a temporary one)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reopen-", dir=args.workdir))
    home = work / "home"
    shutil.copytree(args.store, home, symlinks=True)
    snapshot = home / ".snapshots" / "scale.arrow"
    snapshot.unlink(missing_ok=True)
    out: dict[str, Any] = {
        "benchmark": "reopen of namespace 'scale' in a fresh process: first recall, CPU, RSS",
        "command": " ".join([sys.executable, *sys.argv]),
        "store": str(args.store),
        "machine": {"cpus": os.cpu_count()},
        "runs": [],
    }
    code = HERE.parent
    cases: list[tuple[str, Path]] = []
    if args.before is not None:
        cases.append(("before", args.before))
    cases.append(("whole", code))
    cases += [("snapshot", code)] * args.repeat
    for case, where in cases:
        if case == "whole":
            snapshot.unlink(missing_ok=True)
        result = run(where, home)
        result["case"] = case
        if case != "before":
            result["snapshot_mib"] = round(snapshot.stat().st_size / 2**20, 1) if snapshot.exists() else None
        out["runs"].append(result)
        print(json.dumps(result), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Cold start: from spawning `memtree-mcp serve` (stdio) to the answer of `tools/list`.

Next to a bare one-tool `MCPServer` started the same way (same Python), runs interleaved, median
of ``--runs``. The target (DESIGN §6) is at most 1.5 times the bare server. The sessions are the
ones of ``bench/latency.py``, which also times the first recall after start-up.

Run from the repository root::

    python bench/coldstart.py [--runs 9] [--out bench/results/coldstart.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from latency import BARE_SERVER, console_script, one_session, script_python


async def measure(runs: int) -> dict[str, Any]:
    memtree = console_script()
    python = script_python(memtree)
    times: dict[str, list[float]] = {"bare": [], "memtree": []}
    with tempfile.TemporaryDirectory(prefix="memtree-coldstart-") as scratch:
        bare = Path(scratch) / "bare_server.py"
        bare.write_text(BARE_SERVER)
        with open(os.devnull, "w") as errlog:
            for run in range(runs):
                home = Path(scratch) / f"home-{run}"
                home.mkdir()
                times["bare"].append(
                    (await one_session(python, [str(bare)], {}, errlog, None))["tools_list_ms"]
                )
                row = await one_session(str(memtree), ["serve"], {"MEMTREE_HOME": str(home)}, errlog, None)
                times["memtree"].append(row["tools_list_ms"])
    bare_ms, memtree_ms = statistics.median(times["bare"]), statistics.median(times["memtree"])
    return {
        "runs": runs,
        "median_ms": {"bare": bare_ms, "memtree": memtree_ms, "ratio": round(memtree_ms / bare_ms, 2)},
        "per_run_ms": times,
        "command": shlex.join([sys.executable, *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", type=Path, default=Path("bench/results/coldstart.json"))
    args = parser.parse_args(argv)
    report = anyio.run(measure, args.runs)
    median = report["median_ms"]
    print(f"spawn -> tools/list, median of {args.runs}: bare {median['bare']:.0f} ms, ", end="")
    print(f"memtree-mcp {median['memtree']:.0f} ms, ratio {median['ratio']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A long-running server's resident memory: 4,000 remembers over stdio, next to a fresh server.

Issue 31: over stdio, 4,000 small remembers took a server from 339 to 1,522 MB, not given back
after a minute idle, where a fresh server on the same store used 457 MB; the growth was native
(Lance's metadata cache: each commit is a new table version, and each version's manifest and file
metadata were kept, up to 1 GiB). This bench spawns ``memtree-mcp serve`` (stdio) on a fresh
store, sends ``--remembers`` small remembers one by one (sampling the server's RSS from /proc),
lets it idle ``--idle`` seconds and reads its RSS; then spawns a fresh server on the same store,
sends it one recall and one remember, lets it idle as long, and reads its RSS. The target: the
long-running server within 1.3 times the fresh one.

The servers import memtree_mcp from this process's PYTHONPATH (so any checkout can be measured).
Linux only (/proc).

Run from the repository root::

    python bench/longrun.py [--remembers 4000] [--idle 30] [--out bench/results/longrun.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from latency import machine_info, source_state
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
WORDS = (
    "the team release staging database deploy pipeline review customer invoice report meeting "
    "schedule budget design server cluster backup migration test latency error roadmap quarter "
    "feature branch merge ticket support holiday office travel laptop editor garden recipe concert"
).split()
TARGET = 1.3


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def server_pid() -> int:
    """The one ``memtree-mcp serve`` process that is a child of this one."""
    mine = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = stat.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                args = cmdline.read().split(b"\0")
        except OSError:
            continue
        if parent == mine and b"serve" in args:
            found.append(int(entry))
    if len(found) != 1:
        raise RuntimeError(f"expected one server process, found {found}")
    return found[0]


def note(i: int, rng: random.Random) -> str:
    return f"Note {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))) + "."


async def session(home: str, calls: int, idle: float, every: int) -> dict[str, Any]:
    """Spawn a server on ``home``; ``calls`` remembers (0: one recall and one remember), then idle."""
    params = StdioServerParameters(command=COMMAND, args=["serve"], env={**os.environ, "MEMTREE_HOME": home})
    rng = random.Random(calls)
    samples: dict[int, float] = {}
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as client:
            pid = server_pid()
            started = time.perf_counter()
            if calls == 0:
                await client.call_tool("recall", {"query": "staging database backup"})
                await client.call_tool("remember", {"content": "A fresh server's first note."})
            for i in range(calls):
                done = await client.call_tool("remember", {"content": note(i, rng)})
                if done.is_error:
                    raise RuntimeError(f"remember {i} failed: {done.content}")
                if i % every == 0 or i == calls - 1:
                    samples[i + 1] = round(rss_mb(pid), 1)
                    print(f"  {i + 1} remembers: {samples[i + 1]} MB", flush=True)
            seconds = time.perf_counter() - started
            busy = rss_mb(pid)
            await anyio.sleep(idle)
            return {
                "calls_seconds": round(seconds, 1),
                "rss_mb_after_calls": round(busy, 1),
                "rss_mb_after_idle": round(rss_mb(pid), 1),
                "rss_mb_by_remembers": samples,
            }


async def measure(remembers: int, idle: float, every: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memtree-longrun-") as home:
        print(f"a server taking {remembers} remembers:", flush=True)
        long = await session(home, remembers, idle, every)
        print("a fresh server on the same store:", flush=True)
        fresh = await session(home, 0, idle, every)
    ratio = long["rss_mb_after_idle"] / fresh["rss_mb_after_idle"]
    return {
        "remembers": remembers,
        "idle_seconds": idle,
        "long_running": long,
        "fresh": fresh,
        "ratio": round(ratio, 2),
        "target": TARGET,
        "command": shlex.join([sys.executable, *sys.argv]),
        "pythonpath": os.environ.get("PYTHONPATH", ""),
        "source": source_state(),
        "machine": machine_info(),  # its load averages are the run's end
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--remembers", type=int, default=4000)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds idle before the RSS is read")
    parser.add_argument("--every", type=int, default=500, help="sample the RSS every N remembers")
    parser.add_argument("--out", type=Path, default=Path("bench/results/longrun.json"))
    args = parser.parse_args(argv)
    report = anyio.run(measure, args.remembers, args.idle, args.every)
    long, fresh = report["long_running"], report["fresh"]
    print(
        f"after {args.remembers} remembers and {args.idle:.0f} s idle: {long['rss_mb_after_idle']} MB; "
        f"a fresh server on the same store: {fresh['rss_mb_after_idle']} MB; ratio {report['ratio']} "
        f"(target <= {TARGET})"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["ratio"] <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

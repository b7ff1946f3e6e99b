"""A long-running server's resident memory: 4,000 remembers over stdio, next to a fresh server.

Issue 31: over stdio, 4,000 small remembers took a server from 339 to 1,522 MB, not given back
after a minute idle, where a fresh server on the same store used 457 MB; the growth was native
(Lance's metadata cache: each commit is a new table version, and each version's manifest and file
metadata were kept, up to 1 GiB). This bench spawns ``memtree-mcp serve`` (stdio) on a fresh
store, sends ``--remembers`` small remembers one by one (sampling the server's RSS from /proc),
lets it idle ``--idle`` seconds and reads its RSS; then spawns a fresh server on the same store,
sends it one recall and one remember, lets it idle as long, and reads its RSS. The target: the
long-running server within 1.2 times the fresh one (issue 47; 1.3 before).

``--trace N`` looks for what grows instead: one process serves N remembers through the MCP server
in memory (the SDK's client, the tools, the service, the store), and reports what Python holds
more of after them than after a warm-up: tracemalloc's allocations by line, the objects the
garbage collector tracks by type, and the RSS, before and after ``malloc_trim`` (what glibc holds
free). Native memory (Lance, onnxruntime) shows only in the RSS, which here also holds
tracemalloc's own records: compare RSS with the stdio run.

The servers import memtree_mcp from this process's PYTHONPATH (so any checkout can be measured).
Linux only (/proc).

Run from the repository root::

    python bench/longrun.py [--remembers 4000] [--idle 30] [--out bench/results/longrun.json]
    python bench/longrun.py --trace 2000 --out /tmp/longrun-trace.json
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
TARGET = 1.2


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


async def trace(remembers: int, warm_up: int = 200, top: int = 20) -> dict[str, Any]:
    """What Python holds more of after ``remembers`` remembers than after ``warm_up`` of them, in
    one process serving them through the MCP server in memory."""
    import gc
    import tracemalloc
    from collections import Counter

    from memtree_mcp.config import Settings
    from memtree_mcp.server import build_server
    from memtree_mcp.service import MemoryService

    def objects() -> Counter[str]:
        gc.collect()
        return Counter(type(o).__name__ for o in gc.get_objects())

    rng = random.Random(remembers)
    with tempfile.TemporaryDirectory(prefix="memtree-longrun-trace-") as home:
        service = MemoryService(Settings(home=home, namespace="default"))
        try:
            async with Client(build_server(service)) as client:
                for i in range(warm_up):
                    await client.call_tool("remember", {"content": note(i, rng)})
                before_objects = objects()
                before_rss = rss_mb(os.getpid())
                tracemalloc.start(8)
                before = tracemalloc.take_snapshot()
                started = time.perf_counter()
                for i in range(warm_up, warm_up + remembers):
                    done = await client.call_tool("remember", {"content": note(i, rng)})
                    if done.is_error:
                        raise RuntimeError(f"remember {i} failed: {done.content}")
                seconds = time.perf_counter() - started
                after_objects = objects()
                after = tracemalloc.take_snapshot()
                tracemalloc.stop()
                after_rss = rss_mb(os.getpid())
                trimmed_rss = _trimmed_rss()
        finally:
            service.close()
    grown = after.compare_to(before, "traceback")
    by_type = after_objects.copy()
    by_type.subtract(before_objects)
    return {
        "remembers": remembers,
        "warm_up": warm_up,
        "calls_seconds": round(seconds, 1),
        "rss_mb": {
            "after_warm_up": round(before_rss, 1),
            "after_remembers": round(after_rss, 1),
            "after_malloc_trim": trimmed_rss,
        },
        "python_allocated_growth_kib": round(sum(stat.size_diff for stat in grown) / 1024, 1),
        "python_growth_by_traceback": [
            {
                "kib": round(stat.size_diff / 1024, 1),
                "blocks": stat.count_diff,
                "where": [f"{frame.filename}:{frame.lineno}" for frame in stat.traceback][-4:],
            }
            for stat in grown[:top]
        ],
        "gc_objects_growth_by_type": dict(by_type.most_common(top)),
        "gc_objects": {
            "after_warm_up": sum(before_objects.values()),
            "after_remembers": sum(after_objects.values()),
        },
    }


def _trimmed_rss() -> float | None:
    """The RSS once glibc has given back the free memory it holds (``malloc_trim``): what of the
    growth is heap left free, not memory in use. None where there is no glibc."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return None
    return round(rss_mb(os.getpid()), 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--remembers", type=int, default=4000)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds idle before the RSS is read")
    parser.add_argument("--every", type=int, default=500, help="sample the RSS every N remembers")
    parser.add_argument("--out", type=Path, default=Path("bench/results/longrun.json"))
    parser.add_argument(
        "--trace", type=int, default=0, metavar="N", help="trace what N remembers grow, in process"
    )
    args = parser.parse_args(argv)
    if args.trace:
        found = anyio.run(trace, args.trace)
        found |= {"command": shlex.join([sys.executable, *sys.argv]), "source": source_state()}
        found["machine"] = machine_info()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(found, indent=2) + "\n")
        print(json.dumps({k: found[k] for k in ("rss_mb", "python_allocated_growth_kib", "gc_objects")}))
        return 0
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

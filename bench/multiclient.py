"""Several clients, one memory: what a recall costs right after another server process wrote.

People run several agents at once (a desktop client, an IDE agent, a terminal agent), each with
its own `memtree-mcp serve` over stdio on the same store. Each process keeps the trees in memory,
so after another process commits, the next call must catch up first: before issue 16 by reading
the whole table again, now by applying the rows appended since (``Spaces.follow``).

What it measures, on a store of N memories (``--size``) built once with
``MemoryService.import_memories`` (the path of ``memtree-mcp import``, the corpus of
``bench/scale.py``) and kept in ``--workdir``:

1. ``--servers`` real server processes (``memtree-mcp serve``, started by the MCP client over
   stdio with this Python, ``PYTHONPATH`` passed on so they run this checkout), each warmed up
   with one recall (that first call reads the store whole).
2. Quiet recall: the last server recalls ``--quiet`` questions, nothing written meanwhile.
3. Recall after a foreign write, ``--rounds`` times: server 0 remembers a new memory, then every
   other server recalls a question (the first of them pays for catching up).
4. Recall after a foreign forget, ``--forgets`` times: server 0 forgets one of the memories it
   remembered in 3, then the others recall.
   With ``--pause S`` the other servers recall S seconds after each write instead of at once, as
   an agent's next turn comes after another's (a server follows in the background meanwhile,
   ``Spaces.watch``), and the quiet recalls of 2 come S seconds apart too, so that both are asked
   of a server idle as long; the default, 0, is the worst case for following.

Times are measured at the client: the whole tool call over stdio, the question's embedding
included. Each server logs memtree's own DEBUG lines (not the SDK's) to a file, and the counts of
whole reads ("loaded namespace") and incremental follows ("followed namespace") per server are in
the results, so a figure from a server that fell back to reading the table whole shows as such.
The machine is shared with other work: the load average at start and end is recorded.

Run from the project root::

    python bench/multiclient.py --size 10000                   # builds the store once (~2 min)
    python bench/multiclient.py --size 10000 --servers 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from latency import machine_info, package_version, source_state, summary_ms
from scale import DEFAULT_DATA, copies_needed, corpus, load_locomo, queries

NAMESPACE = "default"
CALL_TIMEOUT_S = 600.0
# `memtree-mcp serve`, with memtree's own logger at DEBUG (the root logger, and so the SDK's and
# LanceDB's, stays at the default WARNING: logging every message would slow the calls measured).
SERVE = """
import logging, sys
logging.getLogger("memtree_mcp").setLevel(logging.DEBUG)
from memtree_mcp.cli import main
sys.exit(main(["serve"]))
"""


def build_store(home: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Import ``records`` into a fresh store at ``home``; returns how long it took."""
    from memtree_mcp.config import Settings
    from memtree_mcp.providers.local import MiniLMEmbedder
    from memtree_mcp.service import MemoryService

    if home.exists():
        shutil.rmtree(home)
    service = MemoryService(Settings(home=str(home), namespace=NAMESPACE), embedder=MiniLMEmbedder())
    started = time.perf_counter()
    try:
        added, skipped = service.upkeep.import_memories(records, namespace=NAMESPACE)
    finally:
        service.close()
    return {"memories": added, "skipped": skipped, "seconds": round(time.perf_counter() - started, 1)}


def store_size(home: Path) -> int:
    """How many memories the store at ``home`` holds."""
    from memtree_mcp.config import Settings
    from memtree_mcp.providers.local import MiniLMEmbedder
    from memtree_mcp.service import MemoryService

    service = MemoryService(Settings(home=str(home), namespace=NAMESPACE), embedder=MiniLMEmbedder())
    try:
        memory = service.memory()
        return 0 if memory is None else len(memory.leaves)
    finally:
        service.close()


def server_env(home: Path, code: str | None) -> dict[str, str]:
    """The servers' environment: the store, and ``code`` (else this process's PYTHONPATH) to import."""
    env = {"MEMTREE_HOME": str(home), "MEMTREE_NAMESPACE": NAMESPACE, "MEMTREE_LLM": "none"}
    path = code or os.environ.get("PYTHONPATH")
    if path:
        env["PYTHONPATH"] = path
    return env


async def timed_call(client: Any, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return elapsed, result


async def quiet_call(client: Any, question: str, pause: float) -> float:
    """A recall with nothing written since, ``pause`` seconds after the call before it (idle as long
    as the recalls after a write are, so that the two differ only by the write)."""
    await anyio.sleep(pause)
    return (await timed_call(client, "recall", {"query": question, "k": 10}))[0]


async def run_clients(
    home: Path,
    servers: int,
    records: Sequence[dict[str, Any]],
    questions: Sequence[str],
    rounds: int,
    quiet: int,
    forgets: int,
    logs: Sequence[Path],
    code: str | None,
    pause: float = 0.0,
) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    # Started in the work folder: `python -c` puts its folder first on sys.path, before PYTHONPATH.
    params = StdioServerParameters(
        command=sys.executable, args=["-c", SERVE], env=server_env(home, code), cwd=str(home.parent)
    )
    out: dict[str, Any] = {}
    asked = iter(questions)
    async with AsyncExitStack() as stack:
        clients = []
        for log in logs:
            errlog = stack.enter_context(log.open("w"))
            clients.append(
                await stack.enter_async_context(
                    Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S)
                )
            )
        warm = []
        for client in clients:
            elapsed, _ = await timed_call(client, "recall", {"query": "warm up", "k": 10})
            warm.append(elapsed)
        out["first_recall_s"] = [round(x, 2) for x in warm]

        reader = clients[-1]
        times = [await quiet_call(reader, next(asked), pause) for _ in range(quiet)]
        out["quiet_recall"] = summary_ms(times)

        remember: list[float] = []
        after: list[list[float]] = [[] for _ in clients[1:]]
        remembered: list[str] = []
        for record in records[:rounds]:
            elapsed, result = await timed_call(
                clients[0],
                "remember",
                {
                    "content": record["content"],
                    "role": record["role"],
                    "timestamp": record["timestamp"],
                    "session": record["session"],
                },
            )
            remember.append(elapsed)
            remembered += result.structured_content["ids"]
            await anyio.sleep(pause)
            for i, client in enumerate(clients[1:]):
                after[i].append((await timed_call(client, "recall", {"query": next(asked), "k": 10}))[0])
        out["remember_on_server_0"] = summary_ms(remember)
        out["recall_after_foreign_remember"] = summary_ms(after[0])
        if len(after) > 1:
            out["recall_after_foreign_remember_by_server"] = [summary_ms(a) for a in after]

        forget: list[float] = []
        after_forget: list[float] = []
        for leaf_id in remembered[:forgets]:
            elapsed, _ = await timed_call(clients[0], "forget", {"ids": [leaf_id]})
            forget.append(elapsed)
            await anyio.sleep(pause)
            after_forget.append((await timed_call(clients[1], "recall", {"query": next(asked), "k": 10}))[0])
        out["forget_on_server_0"] = summary_ms(forget)
        out["recall_after_foreign_forget"] = summary_ms(after_forget)

        again = [await quiet_call(reader, next(asked), pause) for _ in range(quiet)]
        out["quiet_recall_at_end"] = summary_ms(again)
    return out


def follow_counts(log: Path) -> dict[str, Any]:
    """Whole reads and incremental follows a server logged, with the follows' own durations."""
    text = log.read_text(errors="replace")
    follows = [
        float(m) for m in re.findall(r"followed namespace \S+ to version \d+ .*? in ([\d.]+) ms", text)
    ]
    return {
        "whole_reads": len(re.findall(r"loaded namespace ", text)),
        "incremental_follows": len(follows),
        "follow_ms": summary_ms([f / 1000 for f in follows]),
        "errors": len(re.findall(r"^(ERROR|Traceback)", text, flags=re.MULTILINE)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--servers", type=int, default=2, help="server processes (2 or more)")
    parser.add_argument("--rounds", type=int, default=100, help="remember/recall rounds")
    parser.add_argument("--quiet", type=int, default=50, help="quiet recalls (before and after)")
    parser.add_argument("--forgets", type=int, default=20, help="forget/recall rounds")
    parser.add_argument(
        "--pause", type=float, default=0.0, help="seconds between a write and the other servers' recalls"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON to recycle")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memtree-multiclient"))
    parser.add_argument("--rebuild", action="store_true", help="build the store again even if kept")
    parser.add_argument("--out", type=Path, default=Path("bench/results/multiclient.json"))
    parser.add_argument(
        "--server-code",
        default=None,
        help="a folder holding another memtree_mcp for the servers to run (e.g. `git archive` of an "
        "older commit, to measure before and after on the same machine); the run is keyed 'before'",
    )
    args = parser.parse_args(argv)
    if args.servers < 2:
        parser.error("--servers needs at least 2")

    turns, speakers, all_questions = load_locomo(args.data)
    records = corpus(turns, speakers, args.size + args.rounds)
    asked = queries(
        all_questions, speakers, copies_needed(len(turns), args.size), 2 * args.quiet + 4 * args.rounds
    )
    kept = args.workdir / f"store-{args.size}"
    entry: dict[str, Any] = {"size": args.size, "servers": args.servers, "pause_s": args.pause}
    if args.rebuild or not kept.exists():
        print(f"building a store of {args.size:,} memories in {kept} ...", file=sys.stderr, flush=True)
        entry["build"] = build_store(kept, records[: args.size])
    # Each run works on a copy, so that every run starts from the same N memories.
    home = args.workdir / f"run-{args.size}"
    if home.exists():
        shutil.rmtree(home)
    shutil.copytree(kept, home)
    entry["memories_at_start"] = store_size(home)
    entry["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    started = datetime.now(UTC)
    logs = [args.workdir / f"server-{i}.log" for i in range(args.servers)]
    print(
        f"{args.servers} servers on {entry['memories_at_start']:,} memories ...", file=sys.stderr, flush=True
    )
    entry.update(
        anyio.run(
            run_clients,
            home,
            args.servers,
            records[args.size :],
            asked,
            args.rounds,
            args.quiet,
            args.forgets,
            logs,
            args.server_code,
            args.pause,
        )
    )
    entry["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    entry["servers_log"] = [follow_counts(log) for log in logs]
    quiet = entry["quiet_recall"]["p50"]
    entry["ratio_p50_after_remember_to_quiet"] = round(
        entry["recall_after_foreign_remember"]["p50"] / quiet, 2
    )
    entry["ratio_p95_after_remember_to_quiet_p50"] = round(
        entry["recall_after_foreign_remember"]["p95"] / quiet, 2
    )
    entry["started_utc"] = started.isoformat(timespec="seconds")
    entry["wall_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    entry["command"] = shlex.join([sys.executable, *sys.argv])
    entry["source"] = source_state()
    if args.server_code:
        entry["server_code"] = args.server_code
    shutil.rmtree(home, ignore_errors=True)

    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    runs = dict(previous.get("runs", {}))
    key = f"{args.size}x{args.servers}" + (f"-pause{args.pause:g}s" if args.pause else "")
    runs[key + ("-before" if args.server_code else "")] = entry
    report = {
        "benchmark": "memtree-mcp: recall right after another server process wrote (bench/multiclient.py)",
        "note": "Times at the client, over stdio, the query's embedding included. The machine (2 cores) "
        "is shared with other work; each run records its load averages (1, 5, 15 min).",
        "machine": machine_info(),
        "packages": {name: package_version(name) for name in ("memtree-mcp", "lancedb", "mcp", "numpy")},
        "runs": dict(sorted(runs.items())),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(entry, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

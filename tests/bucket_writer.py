"""One writing server on a bucket home, as a process of its own: the driver of tests/test_bucket_writers.py
and bench/bucket_soak.py.

    python tests/bucket_writer.py HOME LOCK_DIR WRITER COUNT [--forget-every N] [--recall-every N]
                                  [--large-every N]

It opens a MemoryService on HOME (MEMTREE_* and AWS_* from the environment, its own lock folder
LOCK_DIR, as on a machine of its own) and remembers COUNT facts of its own, forgetting one of the
facts it stored every N remembers, recalling every N, and making every N-th remember a large one
(about 12,000 characters: a dozen chunks, a long commit); each outcome is one JSON line on stdout,
flushed at once, so the parent knows what was acknowledged even if it kills this process:
``{"acked": id, "text": …, "ms": …}``, ``{"error": …, "text": …}``, ``{"forgot": id}``,
``{"recall": ok, "ms": …}``, and ``{"ready": pid}`` first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# After PYTHONPATH: bench/bucket_soak.py runs it over an older checkout to compare.
sys.path.append(str(Path(__file__).resolve().parent.parent))

import memtree_mcp
from memtree_mcp.config import Settings
from memtree_mcp.errors import MemtreeError
from memtree_mcp.service import MemoryService


def recall(service: MemoryService, query: str, k: int) -> Any:
    """A recall of ``k`` hits, asked as the checkout under test asks it: ``look_up`` with one
    request, or, in a checkout older than the request (a baseline bench/bucket_soak.py compares
    against), ``recall`` with keywords."""
    if not hasattr(service, "look_up"):
        return service.recall(query, k=k)  # type: ignore[attr-defined]
    from memtree_mcp.service.requests import RecallRequest

    return service.look_up(RecallRequest(query, k=k))


def fact(writer: int, i: int) -> str:
    """Writer ``writer``'s ``i``-th fact, unlike every other's."""
    topics = ["deploy window", "on-call rota", "budget review", "design doc", "database migration"]
    return f"Server {writer} note {i}: the {topics[i % 5]} is owned by person {writer * 1000 + i}."


def large(writer: int, i: int) -> str:
    """Writer ``writer``'s ``i``-th fact written out at length: a dozen chunks of its own."""
    lines = [
        f"Server {writer} long note {i}, paragraph {p}: "
        + " ".join(
            f"item {writer}-{i}-{p}-{w} belongs to the {['deploy', 'budget', 'rota', 'design'][w % 4]} plan"
            for w in range(14)
        )
        for p in range(12)
    ]
    return "\n\n".join(lines)


def say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("home")
    parser.add_argument("lock_dir")
    parser.add_argument("writer", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("--forget-every", type=int, default=0)
    parser.add_argument("--recall-every", type=int, default=0)
    parser.add_argument("--large-every", type=int, default=0)
    parser.add_argument("--import-every", type=int, default=0)
    args = parser.parse_args()
    settings = Settings(home=args.home, namespace="default", lock_dir=args.lock_dir)
    service = MemoryService(settings)
    recall(service, "warm up the embedder", k=1)
    say(ready=os.getpid(), code=str(Path(memtree_mcp.__file__).parent))
    stored: list[str] = []
    try:
        for i in range(args.count):
            big = bool(args.large_every) and i % args.large_every == args.large_every - 1
            text = large(args.writer, i) if big else fact(args.writer, i)
            started = time.perf_counter()
            try:
                done = service.remember(text)
                ms = (time.perf_counter() - started) * 1000
                say(acked=done.ids[0], ids=done.ids, text=text, ms=ms, large=big)
                stored.append(done.ids[0])
            except MemtreeError as exc:
                say(error=str(exc), text=text)
            if args.forget_every and i % args.forget_every == args.forget_every - 1 and stored:
                victim = stored.pop(0)
                try:
                    service.forget(ids=[victim])
                    say(forgot=victim)
                except MemtreeError as exc:
                    say(error=str(exc), forget=victim)
            if args.import_every and i % args.import_every == args.import_every - 1:
                records = [
                    {"content": f"Server {args.writer} imported {i}-{j}: batch {i} item {j}."}
                    for j in range(5)
                ]
                try:
                    added, _ = service.upkeep.import_memories(records)
                    say(imported=[r["content"] for r in records], added=added)
                except MemtreeError as exc:
                    say(error=str(exc), imported=[])
            if args.recall_every and i % args.recall_every == 0:
                started = time.perf_counter()
                try:
                    topic = ["budget review", "design doc"][i % 2]
                    hits = recall(service, f"who owns the {topic}?", k=3).hits
                    say(recall=bool(hits), ms=(time.perf_counter() - started) * 1000)
                except MemtreeError as exc:
                    say(recall=False, error=str(exc))
    finally:
        service.close()
    say(done=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

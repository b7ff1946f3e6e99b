"""Remember on stores whose temporal tree is wide: where a memory's time is placed, and what it costs.

Issue 47: on 10,000 memories one a year, remember took 11-40 s and navigate at the temporal root
answered 1.5 million characters. Timestamps are now bounded to the years 1900-2199, so the stores
measured are 10,000 memories spread over those 300 years (``centuries``: the temporal root holds
300 years), one a day over 27 years (``days``), and ``--sessions`` memories in one day, each its
own session (``one-day``: the widest node a bounded calendar allows, a day of that many sessions).

Each store is built through ``MemoryService.import_memories`` (the build's time is reported), then
``--calls`` remembers are timed end to end, half at the end of time (in order) and half between
two memories (backdated), each its own session; a few are profiled (cProfile, the functions that
took most, cumulative). The navigate answer at the temporal root is measured in characters.

Embeddings come from a deterministic stand-in (each word a fixed random direction), because the
question is the trees' placement; the default model adds about 5 ms a remember (DESIGN §6).

Run from the repository root::

    python bench/wide_stores.py [--stores centuries,days,one-day] [--sessions 3000] [--calls 40]
        [--out bench/results/wide-stores.json]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import shlex
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from latency import machine_info, source_state

from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService, rendering

VERBS = ["played", "cooked", "repaired", "painted", "studied", "sold", "planted", "photographed"]
THINGS = [
    "the violin",
    "a risotto",
    "the bicycle",
    "the fence",
    "Portuguese",
    "the old car",
    "tulips",
    "owls",
]


class WordsEmbedder:
    """Each word a fixed random direction; a text the normalised sum of its words."""

    identity = "bench:words-64"
    dimension = 64

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            for word in text.lower().split():
                row += np.random.default_rng(zlib.crc32(word.strip(".,").encode())).normal(
                    size=self.dimension
                )
            row /= np.linalg.norm(row) or 1.0
        return rows


def times(store: str, count: int) -> list[datetime]:
    if store == "centuries":
        first, step = datetime(1900, 1, 1, 12, tzinfo=UTC), timedelta(days=300 * 365.2425 / count)
    elif store == "days":
        first, step = datetime(1999, 1, 1, 12, tzinfo=UTC), timedelta(days=1)
    else:
        first, step = datetime(2020, 5, 5, tzinfo=UTC), timedelta(seconds=8)
    return [first + i * step for i in range(count)]


def memories(store: str, count: int) -> Iterator[dict[str, str]]:
    for i, when in enumerate(times(store, count)):
        record = {
            "content": f"Note {i}: the user {VERBS[i % 8]} {THINGS[i // 8 % 8]}.",
            "timestamp": when.isoformat(),
        }
        if store == "one-day":
            record["session"] = f"s{i}"
        yield record


def top_functions(profile: cProfile.Profile, count: int = 12) -> list[str]:
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(count)
    lines = [line.strip() for line in out.getvalue().splitlines() if "/" in line or "{" in line]
    return lines[:count]


def measure(store: str, count: int, calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"memtree-wide-{store}-") as home:
        service = MemoryService(Settings(home=home, namespace="default"), embedder=WordsEmbedder())
        try:
            started = time.perf_counter()
            service.upkeep.import_memories(memories(store, count))
            built = time.perf_counter() - started
            service.remember("A warm-up note about tulips.", timestamp=times(store, count)[-1].isoformat())
            stamps = times(store, count)
            late, early = [], []
            profile = cProfile.Profile()
            for i in range(calls):
                backdated = i % 2 == 1
                at = stamps[(i * 7919) % (count - 1)] + (stamps[1] - stamps[0]) / 2 if backdated else None
                when = (at or stamps[-1] + timedelta(seconds=60 * (i + 1))).isoformat()
                profiled = i < 4
                if profiled:
                    profile.enable()
                started = time.perf_counter()
                service.remember(f"Extra note {i}: the user sold owls.", timestamp=when, session=f"x{i}")
                elapsed = (time.perf_counter() - started) * 1000
                if profiled:
                    profile.disable()
                (early if backdated else late).append(elapsed)
            shown = rendering.navigate_text(service.navigate(tree="temporal"))
            memory = service.memory()
            assert memory is not None
            root = memory.temporal.root
        finally:
            service.close()
    return {
        "memories": count,
        "build_seconds": round(built, 1),
        "temporal_root_children": len(root.children),
        "widest_temporal_node": max(len(b.children) for b in memory.temporal.branches.values()),
        "remember_ms_in_order": {
            "p50": round(statistics.median(late), 1),
            "max": round(max(late), 1),
        },
        "remember_ms_backdated": {
            "p50": round(statistics.median(early), 1),
            "max": round(max(early), 1),
        },
        "navigate_temporal_root_chars": len(shown),
        "profile_of_4_remembers": top_functions(profile),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--stores", default="centuries,days,one-day")
    parser.add_argument("--memories", type=int, default=10_000, help="for centuries and days")
    parser.add_argument("--sessions", type=int, default=3_000, help="for one-day")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("bench/results/wide-stores.json"))
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    for store in args.stores.split(","):
        count = args.sessions if store == "one-day" else args.memories
        print(f"{store}: {count} memories", flush=True)
        report[store] = measure(store, count, args.calls)
        print(
            json.dumps({k: v for k, v in report[store].items() if k != "profile_of_4_remembers"}), flush=True
        )
    report |= {
        "command": shlex.join([sys.executable, *sys.argv]),
        "source": source_state(),
        "machine": machine_info(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time in order at scale: what a memory remembered out of time order costs next to one in order.

A store of 10,000 memories over about a year (sessions of 40 memories with ids, a turn every four
minutes, a session every day or two, some days with memories without ids) is built through the
service's import; then remembers take turns, in one process: one **in order** (after the latest
memory, in a new session of its own day) and one **out of order** (at a random moment of the
year: inside a past day, between two sessions, or months back, with and without a session id).
For each kind: p50 and p95 of ``remember`` in milliseconds, and the ratio of the p50s (the target:
out of order within 1.5× of in order). At the end: ``doctor``'s problems on the store read afresh
(the target: none) and whether the temporal tree's siblings are in time order.

    python bench/time_order.py --out bench/results/time-order.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from latency import machine_info, source_state

from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService

START = datetime(2025, 11, 3, 9, 0, tzinfo=UTC)
WORDS = (
    "billing invoice deploy staging database index migration review onboarding designer budget "
    "cloud cost alert kafka consumer lag search analyzer terraform state android release printer "
    "toner offsite porto password template webhook secret rotation vpn client macos etl bucket"
).split()


def records(count: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """``count`` memories in time order: sessions of 40 with ids, and loose ones without."""
    moment = START
    made = 0
    while made < count:
        moment += timedelta(days=rng.choice([1, 1, 2]))
        session = f"s-{made // 40}"
        for turn in range(min(40, count - made)):
            words = " ".join(rng.sample(WORDS, 6))
            loose = turn % 13 == 12
            yield {
                "content": f"Turn {made}: {words}.",
                "timestamp": (moment + timedelta(minutes=4 * turn)).isoformat(),
                **({} if loose else {"session": session}),
            }
            made += 1


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=60, help="remembers of each kind, taking turns")
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "memtree-bench" / "time-order"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/time-order.json"))
    args = parser.parse_args(argv)

    rng = random.Random(40)
    home = args.workdir / f"store-{args.memories}"
    settings = Settings(home=str(home), namespace="default", llm="none")
    service = MemoryService(settings, background=False)
    built = time.perf_counter()
    if not home.exists() or not service.namespaces():
        service.upkeep.import_memories(list(records(args.memories, rng)))
    build_seconds = time.perf_counter() - built
    memory = service.memory()
    first = min(leaf.timestamp for leaf in memory.leaves.values())
    latest = max(leaf.timestamp for leaf in memory.leaves.values())

    times: dict[str, list[float]] = {"in_order": [], "out_of_order": []}
    for round_number in range(args.rounds):
        latest += 3 * 3600.0
        kinds = [
            ("in_order", latest, f"late-{round_number}"),
            (
                "out_of_order",
                rng.uniform(first - 120 * 86_400.0, latest - 86_400.0),
                rng.choice([None, "past"]),
            ),
        ]
        rng.shuffle(kinds)
        for kind, moment, session in kinds:
            text = f"Remembered {kind} {round_number}: " + " ".join(rng.sample(WORDS, 6)) + "."
            when = datetime.fromtimestamp(moment, tz=UTC).isoformat()
            began = time.perf_counter()
            service.remember(text, timestamp=when, session=session)
            times[kind].append((time.perf_counter() - began) * 1000.0)
    service.close()

    check = MemoryService(settings, background=False)
    problems = [str(problem) for problem in check.upkeep.doctor()]
    memory = check.memory()
    size = len(memory.leaves)
    check.close()

    summary = {
        kind: {
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(percentile(values, 0.95), 2),
            "calls": len(values),
        }
        for kind, values in times.items()
    }
    ratio = summary["out_of_order"]["p50_ms"] / summary["in_order"]["p50_ms"]
    report = {
        "what": __doc__.split("\n", 1)[0],
        "memories": size,
        "build_seconds": round(build_seconds, 1),
        "summary": summary,
        "out_of_order_vs_in_order_p50": round(ratio, 2),
        "doctor_problems": problems,
        "command": " ".join(["python", "bench/time_order.py", *(argv if argv is not None else sys.argv[1:])]),
        "source": source_state(),
        "machine": machine_info(),
        "load": os.getloadavg(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        json.dumps({k: report[k] for k in ("memories", "summary", "out_of_order_vs_in_order_p50")}, indent=2)
    )
    print(f"doctor: {len(problems)} problems")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())

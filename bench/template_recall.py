"""Recall and remember on a store of similar memories, through MCP stdio, code versions side by side.

LoCoMo's turns are diverse, so its timings hide what a store of look-alike memories costs: there,
every memory has many close neighbours (an update rule that judged pairs at read time made recall
4.5 times slower on such a store). This builds one: 10,000 memories of one template, "<person>
<verb> the <thing> in <city> <manner>; <person> said it cost <n> euros (note <i>).", 20 people, 15
things, 15 cities, 40 memories a session, 7 minutes apart; seeded, the same every run.

Each ``--case NAME=CODE_DIR`` is a code version (``git archive <commit> memtree_mcp | tar -x -C
CODE_DIR``, with the commit written into ``CODE_DIR/COMMIT``; ``.`` is this checkout). Each gets a
store of its own, built by its own ``memtree-mcp import`` of the same JSONL file, so each reads a
store it wrote. Then, in rounds, the cases take turns (so the machine's load falls on all alike):
a fresh ``memtree-mcp serve`` on stdio with ``PYTHONPATH=CODE_DIR``, driven by the SDK's client,
answers ``--recalls`` recalls of rotating template questions (the first two, which load the
store and the model, are left out) and ``--remembers`` remembers of new template memories. The
result: per case, p50 and p95 of recall and remember at the client, and each case's p50 against
the first case's.

    python bench/template_recall.py --case before=/tmp/code-4ac89d6 --case after=. \
        --out bench/results/template-recall.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from cases import imported, parse_cases, quantiles, stdio_client, timed_call, written

PEOPLE = [
    "Alice", "Bruno", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas",
    "Kemal", "Lucia", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tamar",
]  # fmt: skip
VERBS = ["repaired", "inspected", "painted", "moved", "sold", "bought", "cleaned", "measured"]
THINGS = [
    "boiler", "piano", "bicycle", "garden shed", "roof", "staircase", "fridge", "boat", "van",
    "fence", "chimney", "sofa", "printer", "greenhouse", "kiln",
]  # fmt: skip
CITIES = [
    "Lisbon", "Porto", "Lyon", "Turin", "Ghent", "Leipzig", "Krakow", "Bergen", "Tartu", "Split",
    "Bilbao", "Aarhus", "Graz", "Brno", "Cork",
]  # fmt: skip
MANNERS = ["carefully", "quickly", "in the rain", "before noon", "with a friend", "reluctantly"]
PER_SESSION = 40
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def template_memories(count: int, seed: int = 7) -> list[dict[str, str]]:
    rng = random.Random(seed)
    records = []
    for i in range(count):
        person, other = rng.choice(PEOPLE), rng.choice(PEOPLE)
        text = (
            f"{person} {rng.choice(VERBS)} the {rng.choice(THINGS)} in {rng.choice(CITIES)} "
            f"{rng.choice(MANNERS)}; {other} said it cost {rng.randint(20, 900)} euros (note {i})."
        )
        session, slot = divmod(i, PER_SESSION)
        moment = START + timedelta(days=session, minutes=7 * slot)
        records.append(
            {
                "content": text,
                "timestamp": moment.isoformat().replace("+00:00", "Z"),
                "session": f"s{session}",
            }
        )
    return records


def questions(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        f"How much did {rng.choice(PEOPLE)} say the {rng.choice(THINGS)} in {rng.choice(CITIES)} cost?"
        for _ in range(count)
    ]


async def one_round(
    code: Path, home: Path, asked: list[str], remembers: int, round_no: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"recall": [], "remember": []}
    async with stdio_client(code, home) as client:
        for number, question in enumerate(asked):
            took = await timed_call(client, "recall", {"query": question})
            if number >= 2:  # the first two load the store and the model
                times["recall"].append(took)
        for i in range(remembers):
            content = f"Round {round_no}: Alice fixed the piano in Lisbon; Bruno said it cost {i} euros."
            times["remember"].append(await timed_call(client, "remember", {"content": content}))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", required=True, help="NAME=CODE_DIR (repeatable)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--recalls", type=int, default=52, help="recalls a round (the first two not counted)")
    parser.add_argument("--remembers", type=int, default=10)
    parser.add_argument("--workdir", type=Path, help="keep the stores here (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/template-recall.json"))
    args = parser.parse_args(argv)
    cases = parse_cases(args.case)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memtree-template-"))
    work.mkdir(parents=True, exist_ok=True)
    records = work / "template.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in template_memories(args.size)))
    built = {}
    for name, code in cases.items():
        home = work / f"store-{name}"
        if not home.exists():
            built[name] = round(imported(code, home, records, timeout=3_600), 1)
    asked = questions(args.recalls)
    load_start = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, dict[str, list[float]]] = {name: {"recall": [], "remember": []} for name in cases}
    for round_no in range(args.rounds):
        for name, code in cases.items():
            times = anyio.run(one_round, code, work / f"store-{name}", asked, args.remembers, round_no)
            for tool, values in times.items():
                runs[name][tool] += values
    first = next(iter(cases))
    summary = {
        name: {tool: quantiles(values) for tool, values in tools.items()} for name, tools in runs.items()
    }
    for name in cases:
        for tool in ("recall", "remember"):
            summary[name][tool]["vs_first"] = round(
                summary[name][tool]["p50_ms"] / summary[first][tool]["p50_ms"], 3
            )
    report = {
        "benchmark": f"recall and remember through MCP stdio on {args.size:,} template memories",
        "summary": summary,
        "import_seconds": built,
        "rounds": args.rounds,
    }
    written(report, cases, load_start, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

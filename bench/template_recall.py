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
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from firstcall import code_commit
from latency import CALL_TIMEOUT_S, console_script, machine_info, source_state

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


def environment(code: Path, home: Path) -> dict[str, str]:
    return {
        "MEMTREE_HOME": str(home),
        "PYTHONPATH": str(code.resolve()),
        "PATH": os.environ.get("PATH", ""),
        "OPENBLAS_NUM_THREADS": "1",
    }


def build(code: Path, home: Path, records: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [str(console_script()), "import", str(records)],
        env=environment(code, home),
        check=True,
        capture_output=True,
        timeout=3_600,
    )
    return time.perf_counter() - started


async def one_round(
    code: Path, home: Path, asked: list[str], remembers: int, round_no: int
) -> dict[str, list[float]]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(console_script()), args=["serve"], env=environment(code, home))
    times: dict[str, list[float]] = {"recall": [], "remember": []}
    with anyio.fail_after(CALL_TIMEOUT_S * 10), open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            await client.list_tools()
            for number, question in enumerate(asked):
                started = time.perf_counter()
                result = await client.call_tool("recall", {"query": question})
                if result.is_error:
                    raise RuntimeError(str(result.content)[:300])
                if number >= 2:  # the first two load the store and the model
                    times["recall"].append(1000 * (time.perf_counter() - started))
            for i in range(remembers):
                content = f"Round {round_no}: Alice fixed the piano in Lisbon; Bruno said it cost {i} euros."
                started = time.perf_counter()
                result = await client.call_tool("remember", {"content": content})
                if result.is_error:
                    raise RuntimeError(str(result.content)[:300])
                times["remember"].append(1000 * (time.perf_counter() - started))
    return times


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[max(0, int(0.95 * len(ordered)) - 1)], 2),
        "n": len(ordered),
    }


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
    cases = {name: Path(code) for name, _, code in (case.partition("=") for case in args.case)}
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memtree-template-"))
    work.mkdir(parents=True, exist_ok=True)
    records = work / "template.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in template_memories(args.size)))
    built = {}
    for name, code in cases.items():
        home = work / f"store-{name}"
        if not home.exists():
            built[name] = round(build(code, home, records), 1)
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
        "cases": {name: {"code": str(code), "commit": code_commit(code)} for name, code in cases.items()},
        "import_seconds": built,
        "rounds": args.rounds,
        "loadavg_at_start": load_start,
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_info(),
        "source": source_state(),
        "command": shlex.join([sys.executable, *sys.argv]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What background LLM refinement costs `remember`, and how fast the summaries catch up.

The same LoCoMo turns are remembered twice through MemoryService, each into a fresh store:
once with ``MEMTREE_LLM=none`` and once with ``MEMTREE_LLM=litellm:openai/fake`` pointed at the
tests' OpenAI-compatible fake server on 127.0.0.1, which answers every chat call after ``--delay``
seconds (a slow model; no network). Every ``remember`` is timed, embedding included. For the LLM
run it also reports how many branches the turns touched (each marked pending), how many LLM calls
were made (the rest were coalesced), and how long after the last ``remember`` the queue ran dry.

Run from the project root:
    python bench/refinement.py ../shared/bench/locomo/locomo-dev.json [--turns 200] [--delay 0.5]
Writes bench/results/refinement.json. Timings are wall-clock: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.latency import load_turns, machine_info, source_state, summary_ms
from memtree_mcp.config import Settings
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from tests.fake_openai import fake_openai


def pending(service: MemoryService) -> int:
    memory = service.memory()
    if memory is None:
        return 0
    return sum(b.pending for tree in (memory.semantic, memory.temporal) for b in tree.branches.values())


def run(turns: Sequence[Any], settings: Settings, embedder: MiniLMEmbedder) -> dict[str, Any]:
    service = MemoryService(settings, embedder=embedder)
    timings: list[float] = []
    try:
        service.remember("warm-up: open the store before timing")
        for turn in turns:
            started = time.perf_counter()
            service.remember(turn.text, timestamp=turn.timestamp, session=turn.session)
            timings.append(time.perf_counter() - started)
        result: dict[str, Any] = {"remember_ms": summary_ms(timings)}
        if service.refining:
            finished = time.perf_counter()
            drained = service.refiner.wait_idle(timeout=3_600)
            result |= {
                "drained": drained,
                "catch_up_s": round(time.perf_counter() - finished, 2),
                "branch_touches": service.refiner.touched,
                "touches_coalesced_in_queue": service.refiner.coalesced,
                "llm_calls": service.refiner.refined + service.refiner.failures,
                "summaries_written": service.refiner.refined,
                "still_pending": pending(service),
            }
        return result
    finally:
        service.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds the fake model takes a call")
    parser.add_argument("--out", type=Path, default=Path("bench/results/refinement.json"))
    args = parser.parse_args(argv)
    data = json.loads(args.locomo.read_text(encoding="utf-8"))
    turns = list(load_turns(data))[: args.turns]
    embedder = MiniLMEmbedder()
    embedder.embed_batch(["load the model"])
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as plain_home:
        plain = run(turns, Settings(home=plain_home), embedder)
    with fake_openai() as server, tempfile.TemporaryDirectory() as llm_home:
        server.delay = args.delay
        server.reply = "A summary written by the fake model."
        settings = Settings(
            home=llm_home,
            llm="litellm:openai/fake-model",
            llm_api_base=server.url,
            llm_api_key="sk-bench",
            llm_retries=0,
        )
        refined = run(turns, settings, embedder)
        refined["chat_requests_seen_by_server"] = sum(p.endswith("/chat/completions") for p in server.paths())
    report = {
        "command": " ".join(["python", *sys.argv]),
        "turns": len(turns),
        "delay_s": args.delay,
        "machine": machine_info(),
        "source": source_state(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "without_llm": plain,
        "with_slow_llm": refined,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name in ("without_llm", "with_slow_llm"):
        ms = report[name]["remember_ms"]
        print(f"{name:14} remember p50 {ms['p50']:.1f} ms  p95 {ms['p95']:.1f} ms  max {ms['max']:.1f} ms")
    print(
        f"LLM: {refined['llm_calls']} calls for {refined['branch_touches']} branch touches "
        f"({refined['touches_coalesced_in_queue']} coalesced in the queue); "
        f"queue dry {refined['catch_up_s']} s after the last remember"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

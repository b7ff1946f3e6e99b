"""Claude Code's hooks, played as Claude Code runs them: a fresh process per hook, JSON on stdin.

A store of 10,000 memories (the time-order benchmark's, built through the service's import when it
is not there yet) and a session of 20 prompts and turns: ``SessionStart`` first (no worker is up:
the cold start), then for each turn ``UserPromptSubmit`` with a prompt about one stored memory and
``Stop`` with a transcript holding the turn. A prompt names the memory's turn number and three
of its words (the memories are look-alikes of one vocabulary: the number tells one apart). Each
hook is the installed ``memtree-mcp hook`` command, timed from before its process starts to after
it exits. Reported: the latency of each
hook (the first ones apart), p50 and p95 of the warm prompts and of the stops, whether context
arrived for each prompt (and named the memory it was about), the worker's RSS at the end, and
whether every turn was stored once.

    python bench/hook.py --out bench/results/hook.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from latency import machine_info, source_state
from time_order import records

from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build_store(home: Path, count: int) -> None:
    service = MemoryService(Settings(home=str(home), namespace="default", llm="none"), background=False)
    try:
        if not service.namespaces():
            service.upkeep.import_memories(list(records(count, random.Random(40))))
    finally:
        service.close()


def hook(command: Path, env: dict[str, str], event: dict[str, Any]) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(
        [str(command), "hook"], input=json.dumps(event), capture_output=True, text=True, env=env, timeout=60
    )
    took = (time.perf_counter() - began) * 1000.0
    if done.returncode != 0:
        raise SystemExit(f"hook failed ({done.returncode}): {done.stderr}")
    return took, done.stdout


def worker_rss_mib(home: str) -> float | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"--worker" in argv and f"MEMTREE_HOME={home}".encode() in environ:
            os.kill(int(entry.name), signal.SIGTERM)
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20)
    scratch = Path(tempfile.gettempdir()) / "memtree-bench" / "hook"
    parser.add_argument("--workdir", type=Path, default=scratch)
    parser.add_argument("--out", type=Path, default=Path("bench/results/hook.json"))
    args = parser.parse_args(argv)

    source = args.workdir / f"store-{args.memories}"
    build_store(source, args.memories)
    home = args.workdir / "session-home"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(source, home)
    command = Path(sys.executable).parent / "memtree-mcp"
    runtime = tempfile.mkdtemp(prefix="mtb")
    env = {name: value for name, value in os.environ.items() if not name.startswith("MEMTREE_")}
    env |= {"MEMTREE_HOME": str(home), "XDG_RUNTIME_DIR": runtime, "MEMTREE_NAMESPACE": "default"}

    service = MemoryService(Settings(home=str(home), namespace="default"), background=False)
    stored = sorted(service.memory().leaves.values(), key=lambda leaf: leaf.seq)
    service.close()
    rng = random.Random(41)
    picked = rng.sample(stored, args.turns)
    session = {"session_id": "bench-session", "cwd": str(home)}

    start_ms, _ = hook(command, env, session | {"hook_event_name": "SessionStart", "transcript_path": "/x"})
    prompts: list[dict[str, Any]] = []
    stops: list[float] = []
    for number, leaf in enumerate(picked):
        turn, _, said = leaf.text.partition(": ")
        prompt = f"what did {turn.lower()} say about {' '.join(said.rstrip('.').split()[:3])}?"
        took, out = hook(command, env, session | {"hook_event_name": "UserPromptSubmit", "prompt": prompt})
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
        prompts.append({"ms": round(took, 1), "context": bool(context), "named": leaf.id in context})
        transcript = args.workdir / f"transcript-{number}.jsonl"
        lines = [
            {"type": "user", "message": {"content": prompt}},
            {"type": "assistant", "message": {"content": [{"type": "text", "text": f"Answer {number}."}]}},
        ]
        transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
        took, _ = hook(
            command, env, session | {"hook_event_name": "Stop", "transcript_path": str(transcript)}
        )
        stops.append(took)

    deadline = time.monotonic() + 120
    queue = home / "hook-queue"
    while list(queue.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    rss = worker_rss_mib(str(home))
    check = MemoryService(Settings(home=str(home), namespace="default"), background=False)
    added = len(check.memory().leaves) - len(stored)
    check.close()
    shutil.rmtree(runtime, ignore_errors=True)

    warm = [p["ms"] for p in prompts[1:]]
    report = {
        "what": __doc__.split("\n", 1)[0],
        "memories": len(stored),
        "session_start_ms": round(start_ms, 1),
        "first_prompt_ms": prompts[0]["ms"],
        "warm_prompts": {
            "p50_ms": round(statistics.median(warm), 1),
            "p95_ms": round(percentile(warm, 0.95), 1),
        },
        "stops": {"p50_ms": round(statistics.median(stops), 1), "p95_ms": round(percentile(stops, 0.95), 1)},
        "context": sum(p["context"] for p in prompts),
        "named_the_memory": sum(p["named"] for p in prompts),
        "prompts": len(prompts),
        "prompt_ms": [p["ms"] for p in prompts],
        "turns_stored": added,
        "worker_rss_mib": round(rss, 1) if rss is not None else None,
        "command": " ".join(["python", "bench/hook.py", *(argv if argv is not None else sys.argv[1:])]),
        "source": source_state(),
        "machine": machine_info(),
        "load": os.getloadavg(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    shown = ("session_start_ms", "first_prompt_ms", "warm_prompts", "stops", "context", "named_the_memory")
    print(
        json.dumps({key: report[key] for key in (*shown, "turns_stored", "worker_rss_mib", "load")}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Big writes: one 100,000-character ``remember``, then three at once, on a real HTTP server.

Issue 14 measured one such remember at 14.8 s and 1.66 GB at its peak, three at once taking the
server from 441 MB to 1.75 GB for good, and a recall waiting 23 s behind one of them (the
embedding ran inside the namespace's locks). This bench starts ``memtree-mcp serve --transport
streamable-http`` on a fresh store, seeds it, and for each scenario reports the remember's time,
the server's resident memory before, at its peak (sampled every 10 ms from /proc) and after, and
the latency of recalls sent on another session, back to back, while the remember runs.

The server imports memtree_mcp from this process's PYTHONPATH, so the same bench measures any
checkout (``PYTHONPATH=/path/to/other/checkout``). Linux only (/proc).

Run from the repository root::

    python bench/bigwrite.py [--chars 100000] [--out bench/results/bigwrite.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
WORDS = (
    "the team release staging database deploy pipeline review customer invoice report meeting "
    "schedule budget design server cluster backup migration test latency error budget roadmap "
    "quarter feature branch merge ticket support rota holiday office travel laptop editor cat "
    "garden recipe concert weekend morning evening project client contract vendor network"
).split()
QUERY = {"query": "when is the seed note discussed?", "k": 3}
SEED_MEMORIES = [f"Seed note {i}: the {WORDS[i % len(WORDS)]} is discussed on day {i}." for i in range(20)]


def text_of(chars: int, seed: int) -> str:
    """Deterministic English-like prose of ``chars`` characters, in paragraphs of a few sentences."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + "."
            for _ in range(rng.randint(3, 7))
        ]
        paragraphs.append(" ".join(sentences))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join(paragraphs)[:chars]


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of process ``pid`` in MB."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


class PeakSampler:
    """The highest VmRSS of a process, sampled every 10 ms while running."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid)[0])
            self._stop.wait(0.01)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


async def scenario(base: str, pid: int, texts: list[str]) -> dict[str, Any]:
    """Remember ``texts`` at once on one session each while another session recalls back to back."""
    before = rss_mb(pid)[0]
    latencies: list[float] = []
    durations: list[float] = []
    writing = anyio.Event()
    done = 0

    async def remember(text: str) -> None:
        nonlocal done
        async with Client(f"{base}/mcp") as writer:
            writing.set()
            started = time.perf_counter()
            result = await writer.call_tool("remember", {"content": text})
            durations.append(time.perf_counter() - started)
            assert not result.is_error, result.content
        done += 1

    async def recall_meanwhile() -> None:
        async with Client(f"{base}/mcp") as reader:
            await writing.wait()
            while done < len(texts):
                started = time.perf_counter()
                result = await reader.call_tool(
                    "recall", {"query": "when is the seed note discussed?", "k": 3}
                )
                latencies.append(time.perf_counter() - started)
                assert not result.is_error, result.content

    with PeakSampler(pid) as sampler:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(recall_meanwhile)
            for text in texts:
                tasks.start_soon(remember, text)
    after = rss_mb(pid)[0]
    await anyio.sleep(2)  # what the process keeps once it has settled
    settled = rss_mb(pid)[0]
    return {
        "remembers": len(texts),
        "chars_each": len(texts[0]),
        "seconds": round(max(durations), 2),
        "seconds_each": [round(d, 2) for d in sorted(durations)],
        "rss_mb": {
            "before": round(before, 1),
            "peak": round(sampler.peak, 1),
            "peak_added": round(sampler.peak - before, 1),
            "after": round(after, 1),
            "after_2s": round(settled, 1),
        },
        "recall_during_ms": {
            "count": len(latencies),
            "median": round(1000 * statistics.median(latencies), 1) if latencies else None,
            "max": round(1000 * max(latencies), 1) if latencies else None,
        },
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def measure(chars: int) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="memtree-bigwrite-") as home:
        env = {**os.environ, "MEMTREE_HOME": home, "MEMTREE_MAX_CONTENT_CHARS": str(max(chars, 100_000))}
        server = subprocess.Popen(
            [COMMAND, "serve", "--transport", "streamable-http", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(600):  # bounded polling until it listens
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    await anyio.sleep(0.1)
            async with Client(f"{base}/mcp") as seeder:
                for note in SEED_MEMORIES:
                    await seeder.call_tool("remember", {"content": note})
                await seeder.call_tool("recall", {"query": "seed note", "k": 3})
            started_mb = rss_mb(server.pid)[0]
            one = await scenario(base, server.pid, [text_of(chars, seed=1)])
            three = await scenario(base, server.pid, [text_of(chars, seed=s) for s in (2, 3, 4)])
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "server_rss_mb_after_seeding": round(started_mb, 1),
        "one_remember": one,
        "three_at_once": three,
        "command": shlex.join([sys.executable, *sys.argv]),
        "pythonpath": os.environ.get("PYTHONPATH", ""),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("bench/results/bigwrite.json"))
    args = parser.parse_args(argv)
    report = anyio.run(measure, args.chars)
    for name in ("one_remember", "three_at_once"):
        row = report[name]
        rss, recall = row["rss_mb"], row["recall_during_ms"]
        print(
            f"{name}: {row['seconds']} s; RSS {rss['before']} -> peak {rss['peak']} -> {rss['after_2s']} MB; "
            f"recall meanwhile: {recall['count']} calls, median {recall['median']} ms, max {recall['max']} ms"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

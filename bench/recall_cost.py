"""What ``gather`` costs next to ``hybrid`` at a given size, in memory and for the query embedding.

The LoCoMo dev turns are recycled into one memory of ``--size`` leaves (copy c: the cached
vectors nudged by noise and renormalised, sessions renamed, timestamps moved c spans later, so
that the tree and the segments grow as they would), built in core with ``Memory.add_leaf``. Then
the dev questions are recalled (k = 10) with each strategy in turn, question by question, with
``rank(memory, request)`` (the query vectors precomputed; ``gather`` gets the question without the
speakers' names as its second vector, as the service gives it), and the default embedder embeds
one question, and the question with its name-free twin in one batch, as the service does for each
strategy. ``recall`` through the service costs about the embedding + the in-memory recall + the
version check (0.9 to 1.3 ms at 10k in every ``bench/scale.py`` result kept, 3 to 7 ms under load:
two calls into LanceDB's runtime, ``checkout_latest`` and ``version``). Recalls here are asked as
the benchmarks ask (``min_relevance`` 0: updates marked, not moved) and timed by the wall clock
and by the CPU time of their thread.

Run from the repository root::

    python bench/recall_cost.py ../shared/bench/locomo/locomo-dev.json --size 10000
        [--out bench/results/recall-cost-10k.json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from locomo_data import Turn, load_conversations
from locomo_sweep import cached_vectors

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.recall import RankRequest, rank
from memtree_mcp.core.trees.model import Leaf


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": len(values),
        "p50": round(1000 * statistics.median(ordered), 3),
        "p95": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 3),
        "mean": round(1000 * statistics.fmean(ordered), 3),
    }


def recycled_memory(
    turns: Sequence[Turn], vectors: dict[str, np.ndarray], size: int, module: Any = None
) -> Memory:
    """One memory of ``size`` leaves made of copies of ``turns`` (copy c: vectors nudged by noise
    and renormalised, text marked " (c)", sessions renamed, timestamps moved c spans later), built
    by ``module`` (``core.memory`` of another version of the code; by default this one's)."""
    rng = np.random.default_rng(0)
    memory = Memory(384) if module is None else module.Memory(384)
    make_leaf = Leaf if module is None else importlib.import_module(module.__package__ + ".model").Leaf
    span = turns[-1].timestamp - turns[0].timestamp + 86400.0
    for seq in range(size):
        copy, turn = divmod(seq, len(turns))
        source = turns[turn]
        vector = vectors[source.text].astype(np.float64)
        if copy:
            vector = vector + rng.normal(0, 0.02, size=vector.shape)
        memory.add_leaf(
            make_leaf(
                id=f"m{seq:07d}",
                text=source.text if not copy else f"{source.text} ({copy})",
                vector=(vector / np.linalg.norm(vector)).astype(np.float32),
                seq=seq,
                timestamp=source.timestamp + copy * span,
                role=source.text.split(" said", 1)[0][:32] or "user",
                session=f"{source.session}-{copy}",
            )
        )
    return memory


def recycled_arguments(parser: argparse.ArgumentParser, out: str) -> argparse.Namespace:
    """The arguments every benchmark on the recycled memory takes (the data, ``--size``,
    ``--queries``, ``--cache``, ``--out`` defaulting to ``bench/results/OUT``)."""
    parser.add_argument("data", type=Path)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memtree-locomo"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results") / out)
    return argparse.Namespace()


def recycled_material(args: argparse.Namespace) -> tuple[list[Turn], list[str], dict[str, np.ndarray]]:
    """The dev turns, the first ``--queries`` questions and the cached vectors of both."""
    conversations = load_conversations(args.data, None)
    turns = [t for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions][: args.queries]
    return turns, questions, cached_vectors([t.text for t in turns] + questions, args.cache)


def written(report: dict[str, Any], out: Path, load_start: tuple[float, float, float]) -> int:
    """``report`` with the load average at start and end and the command, printed and written to ``out``."""
    report["load_average_start"] = [round(x, 2) for x in load_start]
    report["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    report["command"] = shlex.join([sys.executable, *sys.argv])
    print(json.dumps(report, indent=2))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    args = parser.parse_args(argv, namespace=recycled_arguments(parser, "recall-cost-10k.json"))
    load_start = os.getloadavg()
    turns, questions, vectors = recycled_material(args)
    started = time.perf_counter()
    memory = recycled_memory(turns, vectors, args.size)
    build = time.perf_counter() - started
    content_text = {q: memory.content_text(q) for q in questions}
    content_vectors = cached_vectors([t for t in content_text.values() if t is not None], args.cache)
    times: dict[str, list[float]] = {"gather": [], "hybrid": []}
    # CPU time of the recall thread too: numpy runs on one thread here, so it is the recall's own
    # work, much less disturbed than the wall clock by other processes on a shared machine.
    cpu: dict[str, list[float]] = {"gather": [], "hybrid": []}
    for q in questions[:5]:  # warm-up
        rank(memory, RankRequest(query=vectors[q], k=10, query_text=q, strategy="gather"))
    for q in questions:
        text = content_text[q]
        second = content_vectors[text] if text is not None else None
        for strategy in times:
            started, started_cpu = time.perf_counter(), time.thread_time()
            rank(
                memory,
                RankRequest(
                    query=vectors[q],
                    k=10,
                    query_text=q,
                    strategy=strategy,  # type: ignore[arg-type]
                    content_query=second if strategy == "gather" else None,
                    supersede=True,
                ),
            )
            times[strategy].append(time.perf_counter() - started)
            cpu[strategy].append(time.thread_time() - started_cpu)
    from memtree_mcp.providers.local import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.embed_batch(["warm-up"])
    one: list[float] = []
    two: list[float] = []
    for q in questions[:100]:
        started = time.perf_counter()
        embedder.embed_batch([q])
        one.append(time.perf_counter() - started)
        text = content_text[q]
        started = time.perf_counter()
        embedder.embed_batch([q] if text is None else [q, text])
        two.append(time.perf_counter() - started)
    report: dict[str, Any] = {
        "size": len(memory.leaves),
        "build_seconds": round(build, 1),
        "queries": len(questions),
        "named_an_author": sum(t is not None for t in content_text.values()),
        "memory_recall_k10": {name: percentiles(values) for name, values in times.items()},
        "memory_recall_k10_cpu": {name: percentiles(values) for name, values in cpu.items()},
        "embedding_one_text": percentiles(one),
        "embedding_as_gather_asks": percentiles(two),
    }
    return written(report, args.out, load_start)


if __name__ == "__main__":
    sys.exit(main())

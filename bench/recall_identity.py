"""What recall returns, written down whole, so that a change meant only to make it cheaper can be
shown to change nothing: run it on the code before and after and compare the two files.

For every LoCoMo dev question, under ``gather`` and ``hybrid``: the hits of the five dev
conversations' memories (built in core as ``bench/locomo_sweep.py`` builds them, k = 25,
``min_relevance`` 0 and the service's default cut-off, with ``supersede``), and the same questions
over one recycled memory of ``--size`` leaves (``bench/recall_cost.py``'s, where copies of a turn
differ by a number and so update each other: the ``superseded_by`` marks and the moves get used).
Each hit is written as its id, score, relevance and ``superseded_by``.

Run from the repository root, once per version of the code::

    PYTHONPATH=<checkout> python bench/recall_identity.py ../shared/bench/locomo/locomo-dev.json \
        --out /tmp/before.json
    python bench/recall_identity.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from locomo_data import load_conversations
from locomo_sweep import build, cached_vectors
from recall_cost import recycled_memory

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.recall import RankRequest, RecallFilter, rank
from memtree_mcp.core.ranking.relevance import DEFAULT_MIN_RELEVANCE

STRATEGIES = ("gather", "hybrid")


def answers(
    memory: Memory, questions: Sequence[str], vectors: dict[str, np.ndarray], cache: Path
) -> list[Any]:
    """Every question's hits under each strategy and cut-off, as plain values."""
    content_text = {q: memory.content_text(q) for q in questions}
    content = cached_vectors([t for t in content_text.values() if t is not None], cache)
    out: list[Any] = []
    for q in questions:
        text = content_text[q]
        for strategy in STRATEGIES:
            for cut_off in (0.0, DEFAULT_MIN_RELEVANCE):
                hits = rank(
                    memory,
                    RankRequest(
                        query=vectors[q],
                        k=25,
                        query_text=q,
                        strategy=strategy,  # type: ignore[arg-type]
                        where=RecallFilter(kind="leaf"),
                        min_relevance=cut_off,
                        supersede=True,
                        content_query=content[text] if text is not None and strategy == "gather" else None,
                    ),
                )
                out.append(
                    [q, strategy, cut_off, [[h.id, h.score, h.relevance, h.superseded_by] for h in hits]]
                )
    return out


def same_hits(before: list[Any], after: list[Any]) -> bool:
    """The same hits in the same order with the same marks, and scores and relevance equal to
    the last bits: relevance sums idf weights over a set of words, whose order (and so the
    rounding) changes with each process's string hashing."""
    return len(before) == len(after) and all(
        a[0] == b[0]
        and a[3] == b[3]
        and math.isclose(a[1], b[1], rel_tol=1e-12)
        and math.isclose(a[2], b[2], rel_tol=1e-12)
        for a, b in zip(before, after, strict=True)
    )


def compare(before: Path, after: Path) -> int:
    old, new = json.loads(before.read_text()), json.loads(after.read_text())
    differ = 0
    for part in old:
        for a, b in zip(old[part], new[part], strict=True):
            if a[:3] != b[:3] or not same_hits(a[3], b[3]):
                differ += 1
                if differ <= 5:
                    print(f"{part}: {a[:3]} differs\n  before {a[3][:5]}\n  after  {b[3][:5]}")
    total = sum(len(v) for v in old.values())
    marks = sum(1 for v in old.values() for a in v for h in a[3] if h[3] is not None)
    print(f"{differ} of {total} recalls differ ({marks} superseded_by marks before)")
    return 1 if differ else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path, nargs="?")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memtree-locomo"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.data is None or args.out is None:
        parser.error("give the LoCoMo file and --out (or --compare BEFORE AFTER)")
    conversations = load_conversations(args.data, None)
    turns = [t for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions]
    vectors = cached_vectors([t.text for t in turns] + questions, args.cache)
    report: dict[str, list[Any]] = {}
    for conv in conversations:
        memory, _ = build(conv, vectors)
        report[conv.sample_id] = answers(memory, [q.text for q in conv.questions], vectors, args.cache)
    report[f"recycled-{args.size}"] = answers(
        recycled_memory(turns, vectors, args.size), questions[: args.queries], vectors, args.cache
    )
    args.out.write_text(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A core-level harness for recall strategies on LoCoMo: many settings over one build.

``bench/locomo.py`` measures strategies through the service (LanceDB commits, the real write
path) and takes a minute per build; this harness builds each conversation's ``Memory`` in core
only, from embeddings computed once and cached, and then asks ``rank(memory, request)`` the questions under
each setting, so a grid of settings costs seconds each. The same protocol (``locomo_data.py``):
one leaf per turn in order, role = speaker, session = ``session_<n>``, timestamp = the session's
date; ``recall(k=25, kind="leaf", min_relevance=0)`` as the service calls it (its
``supersede`` only marks hits when there is no cut-off, so it is left out here).
Leaf ids here are the turn order, so ties break the same way in every run (the service's are random).

Besides recall@5/10/25 it reports engram-search's session metric: whether any evidence session is
among the first 5 / 10 distinct sessions of a ranking (the ranking to depth ``SESSION_DEPTH``).

Run from the repository root::

    python bench/locomo_sweep.py ../shared/bench/locomo/locomo-dev.json --grid NAME
        [--out bench/results/locomo-sweep-NAME.json]

Grids are defined in ``GRIDS`` below: each is a list of (label, strategy, settings) where settings
override fields of the recall's ``Weights`` (``core/ranking/recall.py``) for that run.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from locomo_data import (
    CATEGORIES,
    K_MAX,
    KS,
    Conversation,
    Question,
    Scores,
    SessionScores,
    load_conversations,
)

from memtree_mcp.core.embedding import embed_queries, recall_weights
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.recall import RankRequest, RecallFilter, Weights, rank
from memtree_mcp.core.trees.model import Leaf

SESSION_DEPTH = 50  # leaves asked for when the session metric is computed (as bench/locomo.py)


def cached_vectors(texts: Sequence[str], cache: Path, *, query: bool = False) -> dict[str, np.ndarray]:
    """Embeddings of ``texts`` by text (as questions when ``query``), computed once with the
    embedder MEMTREE_EMBEDDER names (``--embedder``; the default's otherwise) and cached."""
    from memtree_mcp.providers import make_embedder

    embedder = make_embedder(os.environ.get("MEMTREE_EMBEDDER", "local"))
    texts = sorted(set(texts))
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    kind = "" if embedder.identity.startswith("local:all-MiniLM") else f"{embedder.identity}-{query}-"
    path = cache / f"locomo-vectors-{kind.replace(':', '_').replace('+', '_')}{digest}.npz"
    if path.exists():
        stored = np.load(path)
        return dict(zip(texts, stored["vectors"], strict=True))
    embed = (lambda batch: embed_queries(embedder, batch)) if query else embedder.embed_batch
    vectors = np.concatenate([embed(texts[i : i + 64]) for i in range(0, len(texts), 64)])
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=vectors)
    return dict(zip(texts, vectors, strict=True))


@functools.cache
def embedder_weights() -> dict[str, Any]:
    """Recall's constants the embedder MEMTREE_EMBEDDER names sets otherwise (its ``recall_weights``)."""
    from memtree_mcp.providers import make_embedder

    return recall_weights(make_embedder(os.environ.get("MEMTREE_EMBEDDER", "local")))


def content_vector(
    content_of: dict[tuple[str, str], str],
    vectors: dict[str, np.ndarray],
    conv: Conversation,
    question: Question,
) -> np.ndarray | None:
    text = content_of.get((conv.sample_id, question.text))
    return None if text is None else vectors[text]


def build(conv: Conversation, vectors: dict[str, np.ndarray]) -> tuple[Memory, dict[str, str]]:
    """The conversation's memory, and the turn id of each leaf id."""
    memory = Memory(384)
    turn_of: dict[str, str] = {}
    by_text: dict[str, str] = {}
    for seq, turn in enumerate(conv.turns):
        if turn.text in by_text:  # the service stores an exact repeat once
            continue
        leaf_id = f"t{seq:05d}"
        memory.add_leaf(
            Leaf(
                id=leaf_id,
                text=turn.text,
                vector=vectors[turn.text],
                seq=memory.next_seq,
                timestamp=turn.timestamp,
                role=turn.text.split(" said", 1)[0][:32] or "user",
                session=turn.session,
                content_hash=turn.text,
            )
        )
        by_text[turn.text] = leaf_id
        turn_of[leaf_id] = turn.id
    return memory, turn_of


def evaluate(
    memories: Sequence[tuple[Conversation, Memory, dict[str, str], np.ndarray, list[np.ndarray | None]]],
    strategy: str,
    values: dict[str, Any],
    session_metric: bool,
) -> dict[str, Any]:
    scores = Scores()
    sessions = SessionScores()
    per_conv: dict[str, Scores] = {}
    started = time.perf_counter()
    asked = 0
    # The embedder's own constants (``recall_weights``) under the grid's.
    weights = Weights(**{**embedder_weights(), **values})
    for conv, memory, turn_of, qvectors, content in memories:
        own = per_conv[conv.sample_id] = Scores()
        depth = SESSION_DEPTH if session_metric else K_MAX
        for question, vector, content_query in zip(conv.questions, qvectors, content, strict=True):
            hits = rank(
                memory,
                RankRequest(
                    query=vector,
                    k=depth,
                    query_text=question.text,
                    strategy=strategy,  # type: ignore[arg-type]
                    where=RecallFilter(kind="leaf"),
                    min_relevance=0.0,
                    supersede=False,  # with no cut-off it only marks: the same order
                    content_query=content_query,
                    weights=weights,
                ),
            )
            asked += 1
            turns = [turn_of[h.id] for h in hits]
            scores.add(question, dict.fromkeys(KS, turns))
            own.add(question, dict.fromkeys(KS, turns))
            if session_metric:
                sessions.add(question, turns)
    elapsed = time.perf_counter() - started
    out = scores.summary()
    out["per_conversation"] = {name: s.summary()["overall"] for name, s in per_conv.items()}
    if session_metric:
        out["sessions"] = sessions.summary()
    out["ms_per_recall_core"] = round(1000 * elapsed / max(asked, 1), 2)
    return out


Grid = list[tuple[str, str, dict[str, Any]]]
GRIDS: dict[str, Callable[[], Grid]] = {
    "baseline": lambda: [("hybrid", "hybrid", {}), ("gather", "gather", {})],
    # gather's fusion for a stronger dense score (issue 29, e5-small): the BM25 weight, the segment
    # lift and the neighbours' decay around the defaults (0.5, 0.5, 0.4); run with --embedder e5-small.
    "gather-dense": lambda: [
        (
            f"gather lexical {w} segment {g} decay {d}",
            "gather",
            {"lexical_weight": w, "segment_weight": g, "neighbour_decay": d},
        )
        for w in (0.2, 0.35, 0.5)
        for g in (0.25, 0.5)
        for d in (0.2, 0.4)
    ],
    # gather's weights around the default (author 0.5, segment 0.5, content 0.5), every
    # combination, without the date lift (these were measured before it was added:
    # bench/results/locomo-sweep-gather-before-dates.json).
    "gather": lambda: [
        (
            f"gather author {a} segment {g} content {c}",
            "gather",
            {"author_weight": a, "segment_weight": g, "content_share": c, "date_weight": 0.0},
        )
        for a in (0.25, 0.5, 1.0)
        for g in (0.25, 0.5, 0.75)
        for c in (0.3, 0.5, 0.7)
    ],
    # The date lift alone, the other weights at their defaults.
    "gather-dates": lambda: [
        (f"gather date {d}", "gather", {"date_weight": d}) for d in (0.0, 0.5, 1.0, 2.0, 3.0)
    ],
    # hybrid's own neighbours under gather: the lexical weight and the neighbour decay (without
    # the date lift, as the "gather" grid).
    "gather-hybrid-knobs": lambda: [
        (
            f"gather lexical {w} decay {d}",
            "gather",
            {"lexical_weight": w, "neighbour_decay": d, "date_weight": 0.0},
        )
        for w in (0.4, 0.5, 0.7)
        for d in (0.3, 0.4, 0.5)
    ],
}


def row(label: str, summary: dict[str, Any]) -> str:
    overall = summary["overall"]
    cats = [summary["per_category"][f"{c} {n}"]["R@10"] for c, n in CATEGORIES.items()]
    cells = [f"{overall[f'R@{k}']:.1f}" for k in KS] + [f"{c:.1f}" for c in cats]
    if "sessions" in summary:
        cells += [f"{summary['sessions']['S@5']:.1f}", f"{summary['sessions']['S@10']:.1f}"]
    return f"| {label} | " + " | ".join(cells) + " |"


Prepared = tuple[Conversation, Memory, dict[str, str], np.ndarray, list["np.ndarray | None"]]


def prepare(data: Path, limit: int | None, cache: Path) -> list[Prepared]:
    """Each conversation's memory built in core, its leaf-to-turn map, its questions' vectors and
    the vectors of the questions without the authors they name (what the service embeds for
    ``gather``; None for a question that names none)."""
    conversations = load_conversations(data, limit)
    vectors = cached_vectors([t.text for c in conversations for t in c.turns], cache)
    vectors.update(cached_vectors([q.text for c in conversations for q in c.questions], cache, query=True))
    memories = []
    for conv in conversations:
        memory, turn_of = build(conv, vectors)
        memories.append((conv, memory, turn_of, np.stack([vectors[q.text] for q in conv.questions])))
    # What the service embeds with each question for gather: the question without the authors.
    content_of = {
        (conv.sample_id, q.text): text
        for conv, memory, _, _ in memories
        for q in conv.questions
        if (text := memory.content_text(q.text)) is not None
    }
    content_vectors = cached_vectors(list(content_of.values()), cache, query=True)
    prepared = [
        (
            conv,
            memory,
            turn_of,
            qvectors,
            [content_vector(content_of, content_vectors, conv, q) for q in conv.questions],
        )
        for conv, memory, turn_of, qvectors in memories
    ]
    return prepared


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--grid", default="baseline", choices=sorted(GRIDS))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--embedder", help="MEMTREE_EMBEDDER of the vectors: local (default) or e5-small")
    parser.add_argument("--sessions", action="store_true", help="also engram-search's session metric")
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memtree-locomo"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.embedder:
        os.environ["MEMTREE_EMBEDDER"] = args.embedder
    started = time.perf_counter()
    prepared = prepare(args.data, args.limit, args.cache)
    print(f"built {len(prepared)} memories in {time.perf_counter() - started:.1f} s", flush=True)
    head = "| setting | R@5 | R@10 | R@25 | " + " | ".join(f"R@10 {n}" for n in CATEGORIES.values())
    head += " | S@5 | S@10 |" if args.sessions else " |"
    print(head, flush=True)
    results = []
    for label, strategy, values in GRIDS[args.grid]():
        summary = evaluate(prepared, strategy, values, args.sessions)
        print(row(label, summary), f"{summary['ms_per_recall_core']} ms", flush=True)
        results.append({"label": label, "strategy": strategy, "settings": values, **summary})
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "data": str(args.data),
            "grid": args.grid,
            "command": shlex.join([sys.executable, *sys.argv]),
            "results": results,
        }
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

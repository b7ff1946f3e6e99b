"""LoCoMo turn-evidence recall of memtree-mcp's recall strategies, next to flat baselines.

Every conversation becomes one namespace of a fresh store, filled through the public service API:
one ``remember`` per turn, in order (role = speaker, timestamp = the session's date, session =
``session_<n>``). Each question is then asked with ``recall(question, k=50, kind="leaf",
strategy=S, min_relevance=0)`` (the relevance cut-off off, so the ranking is measured down to
50) for every strategy S (``S+expand`` adds ``expand=True``: summaries that make the cut are
replaced by their best memories); recall@5/10/25 is the share of the question's evidence turns
among the first 5/10/25 leaves (protocol: ``locomo_data.py``), and S@5/10, engram-search's
session metric, whether any evidence session is among the first 5/10 distinct sessions of the
ranking (its first 50 leaves). The flat baselines of the protocol
are computed in the same run from the same leaf vectors: dense (cosine top-k), BM25 (the project's
own lexical index) and their reciprocal-rank fusion (constant 60).

Run from the repository root::

    python bench/locomo.py ../shared/bench/locomo/locomo-dev.json [--strategies a,b] [--limit N]
        [--out bench/results/locomo.json]

It prints a markdown table (overall and per category) and writes the full results to JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `memtree-mcp serve` runs

import numpy as np
from locomo_data import CATEGORIES, KS, Conversation, Scores, SessionScores, load_conversations

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import embed_queries
from memtree_mcp.core.indexes.lexical import LexicalIndex
from memtree_mcp.core.names import STRATEGIES as RECALL_STRATEGIES
from memtree_mcp.providers import make_embedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest

RRF_K = 60
DEPTH = 50  # leaves asked for: 25 for recall@25, more for the sessions of S@10


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


def rrf(*rankings: Sequence[str], k: int = RRF_K) -> list[str]:
    """Reciprocal-rank fusion of several rankings, best first; ties by id."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(fused, key=lambda item: (-fused[item], item))


def run(
    data: Path, strategies: Sequence[str], limit: int | None, embedder_name: str = "local"
) -> dict[str, Any]:
    conversations: list[Conversation] = load_conversations(data, limit)
    embedder = make_embedder(embedder_name)
    embedder.embed_batch(["warm-up"])
    baselines = {name: Scores() for name in ("dense", "bm25", "rrf")}
    results = {name: Scores() for name in strategies}
    sessions = {name: SessionScores() for name in [*baselines, *strategies]}
    build_seconds = 0.0
    query_seconds = dict.fromkeys(strategies, 0.0)
    questions = 0
    with tempfile.TemporaryDirectory(prefix="memtree-locomo-") as home:
        service = MemoryService(Settings(home=home, embedder=embedder_name), embedder=embedder)
        for conv in conversations:
            namespace = conv.sample_id
            started = time.perf_counter()
            turn_of: dict[str, set[str]] = {}
            for turn in conv.turns:
                stored = service.remember(
                    turn.text,
                    role=turn.text.split(" said", 1)[0][:32] or "user",
                    timestamp=iso(turn.timestamp),
                    session=turn.session,
                    namespace=namespace,
                )
                # An exact repeat of a turn is stored once; it stands for every turn with that text.
                for leaf_id in stored.ids:
                    turn_of.setdefault(leaf_id, set()).add(turn.id)
            build_seconds += time.perf_counter() - started

            memory = service.memory(namespace)
            assert memory is not None
            # The flat baselines name leaves by their order (the service's ids are random), so that
            # ties, broken by name, break the same way in every run.
            by_order = sorted(memory.leaves, key=lambda leaf_id: memory.leaves[leaf_id].seq)
            named = {f"{place:07d}": leaf_id for place, leaf_id in enumerate(by_order)}
            leaf_ids = list(named)
            matrix = np.stack([memory.leaves[named[i]].vector for i in leaf_ids])
            lexical = LexicalIndex()
            for name in leaf_ids:
                lexical.add(name, memory.leaves[named[name]].text)
            flat_turn_of = {name: turn_of.get(leaf_id, set()) for name, leaf_id in named.items()}

            def turns(ranking: Sequence[str], turn_of: dict[str, set[str]] = turn_of) -> list[str]:
                out: list[str] = []
                for leaf_id in ranking:
                    out.extend(sorted(turn_of.get(leaf_id, ())))
                return out

            vectors = embed_queries(embedder, [q.text for q in conv.questions])
            for question, vector in zip(conv.questions, vectors, strict=True):
                questions += 1
                # Whole rankings, so that the fusion sees every leaf either ranking has.
                order = np.argsort(-(matrix @ vector), kind="stable")
                dense = [leaf_ids[i] for i in order]
                bm25 = [leaf_id for leaf_id, _ in lexical.search(question.text, len(leaf_ids))]
                for name, ranking in (("dense", dense), ("bm25", bm25), ("rrf", rrf(dense, bm25))):
                    ranked_turns = turns(ranking[:DEPTH], flat_turn_of)
                    baselines[name].add(question, dict.fromkeys(KS, ranked_turns))
                    sessions[name].add(question, ranked_turns)
                for strategy in strategies:
                    started = time.perf_counter()
                    name, _, option = strategy.partition("+")
                    hits = service.look_up(
                        RecallRequest(
                            question.text,
                            k=DEPTH,
                            kind="leaf",
                            strategy=name,
                            namespace=namespace,
                            expand=option == "expand",
                            # The whole ranking, no cut-off (docs/findings/what-the-model-reads.md).
                            min_relevance=0.0,
                        )
                    ).hits
                    query_seconds[strategy] += time.perf_counter() - started
                    ranked_turns = turns([h.id for h in hits])
                    results[strategy].add(question, dict.fromkeys(KS, ranked_turns))
                    sessions[strategy].add(question, ranked_turns)
            print(f"done {conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} q", flush=True)
        service.close()

    return {
        "data": str(data),
        "conversations": [c.sample_id for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
        "questions": questions,
        "embedder": embedder.identity,
        "embedder_setting": embedder_name,
        "baselines": {name: scores.summary() for name, scores in baselines.items()},
        "strategies": {name: scores.summary() for name, scores in results.items()},
        "sessions": {name: scores.summary() for name, scores in sessions.items()},
        "build_seconds": round(build_seconds, 2),
        "remember_ms_mean": round(1000 * build_seconds / max(1, sum(len(c.turns) for c in conversations)), 2),
        "recall_ms_mean": {s: round(1000 * t / max(1, questions), 2) for s, t in query_seconds.items()},
        "command": shlex.join([sys.executable, *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
    }


def markdown(report: dict[str, Any]) -> str:
    head = "| method | R@5 | R@10 | R@25 | " + " | ".join(f"R@10 {n}" for n in CATEGORIES.values())
    head += " | S@5 | S@10 |"
    lines = [head, "|" + "---|" * (6 + len(CATEGORIES))]
    rows = [(f"flat {n}", n, s) for n, s in report["baselines"].items()]
    rows += [(f"recall strategy={n}", n, s) for n, s in report["strategies"].items()]
    for name, key, summary in rows:
        overall = summary["overall"]
        cats = [summary["per_category"][f"{c} {n}"]["R@10"] for c, n in CATEGORIES.items()]
        cells = [f"{overall[f'R@{k}']:.1f}" for k in KS]
        cells += [f"{c:.1f}" if c is not None else "—" for c in cats]
        cells += [f"{report['sessions'][key][f'S@{n}']:.1f}" for n in (5, 10)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path, help="LoCoMo JSON, e.g. ../shared/bench/locomo/locomo-dev.json")
    parser.add_argument(
        "--strategies",
        default=",".join([*RECALL_STRATEGIES, "hybrid+expand", "collapsed+expand", "refine+expand"]),
        help="comma-separated; NAME+expand replaces summaries by their best memories",
    )
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--embedder", default="local", help="MEMTREE_EMBEDDER: local (default) or e5-small")
    parser.add_argument("--out", type=Path, default=Path("bench/results/locomo.json"))
    args = parser.parse_args(argv)
    strategies = [s for s in args.strategies.split(",") if s]
    started = time.perf_counter()
    report = run(args.data, strategies, args.limit, args.embedder)
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    print(markdown(report))
    print(f"\n{report['questions']} questions; build {report['build_seconds']} s")
    print(f"wall {report['wall_seconds']} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

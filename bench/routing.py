"""Which vector should an internal node of the semantic tree carry? A LoCoMo retrieval benchmark.

Compares three configurations (vector_mode, linkage) of :class:`memtree_mcp.core.semantic.SemanticTree`:

* ``centroid``: the leaf-count-weighted centroid of the node's children;
* ``summary``: the embedding of the node's extractive summary text (one embedder call per insert,
  covering every internal node on the insertion path).

Protocol (``shared/bench/locomo/README.md``): one :class:`~memtree_mcp.core.memory.Memory` per
conversation, every turn inserted in order as one leaf (``<speaker> said, "<text>"`` plus
`` and shared <blip_caption>`` for image turns, timestamp = the session's date, seq = running index).
Leaf embeddings are computed once per conversation in one batched call and shared by both modes, so
both trees see identical leaf vectors. Evidence ids are normalised with ``D:?(\\d+):0*(\\d+)``, ids
matching no turn are dropped and questions left without evidence are skipped.

Recall@k (k = 5, 10, 25) of a question is the share of its evidence turns among the k *leaves* a
method returns, averaged overall and per category (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial). Methods:

1. ``flat_dense``: top-k leaves by cosine; independent of the mode, computed once.
2. ``collapsed_leaves``: ``Memory.recall(q, k)`` over all nodes (default ``min_score``); only leaf hits
   among the top k nodes count, a summary takes a slot and earns nothing.
3. ``collapsed_expand``: the same collapsed ranking of all nodes (same ``min_score``), read in order;
   a leaf is taken as is, a summary is replaced by the leaves of its subtree not yet taken, ranked by
   cosine to the query, until k leaves are taken. Measures whether summaries point at the evidence.
4. ``beam_descent``: top-down from the root with a beam of width 8. At each level the children of
   the beam nodes are scored by cosine to the query; every leaf among them is collected, and the
   8 best *internal* children form the next beam. The collected leaves are ranked by cosine and the
   top k returned. Measures routing quality directly.

Per mode it also records the build time (insertion only; leaf embeddings excluded; for ``summary`` the
embedder calls made during insertion are timed and reported separately), the tree shape (height,
internal nodes, root fan-out, leaf depth) and the query time of each method.

Run from the repository root::

    python bench/routing.py ../shared/bench/locomo/locomo-dev.json [--out bench/results/routing.json]
        [--limit N]

It prints markdown tables and writes the full results (machine and exact command included) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from locomo_data import CATEGORIES, K_MAX, KS, Scores, load_conversations

from memtree_mcp.core.embedding import Matrix, Vector
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.recall import DEFAULT_WEIGHTS, RecallRequest
from memtree_mcp.core.semantic import ROOT_ID, Linkage, VectorMode
from memtree_mcp.providers.local import IDENTITY, MiniLMEmbedder

BEAM_WIDTH = 8
# name -> (vector_mode, linkage) of the semantic tree
CONFIGS: dict[str, tuple[VectorMode, Linkage]] = {
    "average": ("centroid", "average"),
    "centroid": ("centroid", "centroid"),
    "summary": ("summary", "centroid"),
}
MODES: tuple[str, ...] = tuple(CONFIGS)
MODE_METHODS = ("collapsed_leaves", "collapsed_expand", "beam_descent")


def top_order(scores: Vector, k: int) -> list[int]:
    """Indices of the ``k`` highest scores, best first; ties by index."""
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


class TimedEmbed:
    """Wraps an embed function, counting the calls, texts and seconds spent in it."""

    def __init__(self, embed: Callable[[Sequence[str]], Matrix]) -> None:
        self._embed = embed
        self.calls = 0
        self.texts = 0
        self.seconds = 0.0

    def __call__(self, texts: Sequence[str]) -> Matrix:
        start = time.perf_counter()
        out = self._embed(texts)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        self.texts += len(texts)
        return out


def subtree_leaves(memory: Memory, node_id: str) -> list[str]:
    tree = memory.semantic
    out: list[str] = []
    stack = [node_id]
    while stack:
        current = stack.pop()
        if current in memory.leaves:
            out.append(current)
        else:
            stack.extend(tree.branches[current].children)
    return out


def collapsed_expand(memory: Memory, query: Vector, k: int) -> list[str]:
    """Read the collapsed ranking of all nodes; replace each summary by its best leaves not yet taken."""
    taken: list[str] = []
    seen: set[str] = set()
    wanted = 4 * k
    consumed = 0
    while True:
        ranking = memory.index.search(query, wanted, DEFAULT_WEIGHTS.min_score)
        for node_id, _ in ranking[consumed:]:
            if node_id in memory.leaves:
                candidates = [node_id]
            else:
                leaves = [leaf for leaf in subtree_leaves(memory, node_id) if leaf not in seen]
                if not leaves:
                    continue
                scores = np.stack([memory.leaves[leaf].vector for leaf in leaves]) @ query
                candidates = [leaves[i] for i in top_order(scores, k - len(taken))]
            for leaf_id in candidates:
                if leaf_id not in seen and len(taken) < k:
                    seen.add(leaf_id)
                    taken.append(leaf_id)
            if len(taken) == k:
                return taken
        consumed = len(ranking)
        if len(ranking) < wanted or wanted >= len(memory.index):
            return taken
        wanted *= 2


@dataclass(slots=True)
class BeamStats:
    collected: list[int] = field(default_factory=list)
    coverage: list[float] = field(default_factory=list)
    flat_coverage: list[float] = field(default_factory=list)
    scored: list[int] = field(default_factory=list)


def beam_descent(
    memory: Memory, query: Vector, k: int, stats: BeamStats, evidence: frozenset[str], flat: Sequence[str]
) -> list[str]:
    """Top-down beam search; every leaf met is collected, the best internal children are expanded.

    ``stats`` also gets the share of ``evidence`` among all collected leaves, and the same share for
    the first ``len(collected)`` leaves of ``flat`` (the full flat dense ranking): routing at equal size.
    """
    tree = memory.semantic
    beam = [ROOT_ID]
    collected: list[str] = []
    scored = 0
    while beam:
        children = [child for node in beam for child in tree.branches[node].children]
        collected.extend(c for c in children if c in memory.leaves)
        internal = [c for c in children if c in tree.branches]
        if not internal:
            break
        scores = np.stack([tree.match_vector_of(c) for c in internal]) @ query
        scored += len(internal)
        beam = [internal[i] for i in top_order(scores, BEAM_WIDTH)]
    stats.collected.append(len(collected))
    stats.scored.append(scored + len(collected))
    stats.coverage.append(len(evidence.intersection(collected)) / len(evidence))
    stats.flat_coverage.append(len(evidence.intersection(flat[: len(collected)])) / len(evidence))
    if not collected:
        return []
    leaf_scores = np.stack([memory.leaves[c].vector for c in collected]) @ query
    return [collected[i] for i in top_order(leaf_scores, k)]


# -- tree shape ------------------------------------------------------------------------------------


def tree_shape(memory: Memory) -> dict[str, Any]:
    tree = memory.semantic
    internal = [b for b in tree.branches.values() if b.kind == "internal"]
    depths = [tree.depth_of(leaf_id) for leaf_id in memory.leaves]
    root_children = tree.root.children
    if tree.root.leaf_count != len(memory.leaves) or len(depths) != len(memory.leaves):
        raise AssertionError("the semantic tree does not hold every leaf exactly once")
    return {
        "height": tree.height,
        "internal_nodes": len(internal),
        "root_fanout": len(root_children),
        "root_leaf_children": sum(1 for c in root_children if c in memory.leaves),
        "largest_root_child_leaves": max(
            (tree.branches[c].leaf_count for c in root_children if c in tree.branches), default=0
        ),
        "mean_leaf_depth": float(np.mean(depths)),
        "max_leaf_depth": int(max(depths)),
        "mean_internal_fanout": float(np.mean([len(b.children) for b in internal])) if internal else 0.0,
    }


# -- main ------------------------------------------------------------------------------------------


def run(data: Path, limit: int | None) -> dict[str, Any]:
    conversations = load_conversations(data, limit)
    embedder = MiniLMEmbedder()
    embedder.embed_batch(["warm-up"])  # load the model outside every timed section

    flat = Scores()
    flat_seconds = 0.0
    scores: dict[str, dict[str, Scores]] = {m: {name: Scores() for name in MODE_METHODS} for m in MODES}
    collapsed_leaf_counts: dict[str, dict[int, list[int]]] = {m: {k: [] for k in KS} for m in MODES}
    beam_stats = {m: BeamStats() for m in MODES}
    per_mode: dict[str, dict[str, Any]] = {
        m: {
            "build_seconds": 0.0,
            "insert_embed_seconds": 0.0,
            "insert_embed_calls": 0,
            "insert_embed_texts": 0,
            "query_seconds": dict.fromkeys(MODE_METHODS, 0.0),
            "trees": {},
        }
        for m in MODES
    }
    leaf_embed_seconds = question_embed_seconds = 0.0
    per_conversation: list[dict[str, Any]] = []

    for conv in conversations:
        start = time.perf_counter()
        leaf_vectors = embedder.embed_batch([t.text for t in conv.turns])
        leaf_embed_seconds += time.perf_counter() - start
        start = time.perf_counter()
        question_vectors = embedder.embed_batch([q.text for q in conv.questions])
        question_embed_seconds += time.perf_counter() - start
        turn_ids = [t.id for t in conv.turns]

        start = time.perf_counter()
        flat_ranked = [[turn_ids[i] for i in top_order(leaf_vectors @ qv, K_MAX)] for qv in question_vectors]
        flat_seconds += time.perf_counter() - start
        for question, ranked in zip(conv.questions, flat_ranked, strict=True):
            flat.add(question, dict.fromkeys(KS, ranked))
        conv_entry: dict[str, Any] = {
            "sample_id": conv.sample_id,
            "turns": len(conv.turns),
            "questions": len(conv.questions),
            "skipped_questions": conv.skipped_questions,
            "dropped_evidence_ids": conv.dropped_ids,
        }

        for mode in MODES:
            stats = per_mode[mode]
            timed = TimedEmbed(embedder.embed_batch)
            vector_mode, linkage = CONFIGS[mode]
            memory = Memory(embedder.dimension, vector_mode=vector_mode, linkage=linkage, embed=timed)
            start = time.perf_counter()
            for seq, (turn, vector) in enumerate(zip(conv.turns, leaf_vectors, strict=True)):
                memory.add_leaf(
                    Leaf(
                        id=turn.id,
                        text=turn.text,
                        vector=vector.copy(),
                        seq=seq,
                        timestamp=turn.timestamp,
                        session=turn.session,
                    )
                )
            build = time.perf_counter() - start
            stats["build_seconds"] += build - timed.seconds
            stats["insert_embed_seconds"] += timed.seconds
            stats["insert_embed_calls"] += timed.calls
            stats["insert_embed_texts"] += timed.texts
            stats["trees"][conv.sample_id] = tree_shape(memory)

            method_scores = scores[mode]
            start = time.perf_counter()
            for question, qv in zip(conv.questions, question_vectors, strict=True):
                by_k: dict[int, Sequence[str]] = {}
                for k in KS:
                    leaves = [h.id for h in memory.recall(RecallRequest(query=qv, k=k)) if h.kind == "leaf"]
                    collapsed_leaf_counts[mode][k].append(len(leaves))
                    by_k[k] = leaves
                method_scores["collapsed_leaves"].add(question, by_k)
            stats["query_seconds"]["collapsed_leaves"] += time.perf_counter() - start

            start = time.perf_counter()
            for question, qv in zip(conv.questions, question_vectors, strict=True):
                method_scores["collapsed_expand"].add(
                    question, dict.fromkeys(KS, collapsed_expand(memory, qv, K_MAX))
                )
            stats["query_seconds"]["collapsed_expand"] += time.perf_counter() - start

            start = time.perf_counter()
            beam_seconds = 0.0
            for question, qv in zip(conv.questions, question_vectors, strict=True):
                flat_full = [turn_ids[i] for i in top_order(leaf_vectors @ qv, len(turn_ids))]
                start = time.perf_counter()
                ranked_leaves = beam_descent(
                    memory, qv, K_MAX, beam_stats[mode], question.evidence, flat_full
                )
                beam_seconds += time.perf_counter() - start
                method_scores["beam_descent"].add(question, dict.fromkeys(KS, ranked_leaves))
            stats["query_seconds"]["beam_descent"] += beam_seconds
            conv_entry[mode] = _conversation_overall(method_scores, len(conv.questions))
        conv_entry["flat_dense"] = _tail_overall(flat, len(conv.questions))
        per_conversation.append(conv_entry)
        print(
            f"done {conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions",
            file=sys.stderr,
        )

    results: dict[str, Any] = {
        "flat_dense": flat.summary() | {"query_seconds": round(flat_seconds, 3)},
    }
    for mode in MODES:
        stats = per_mode[mode]
        trees = stats["trees"].values()
        all_leaves = sum(len(c.turns) for c in conversations)
        stats["shape"] = {
            "max_height": max(t["height"] for t in trees),
            "internal_nodes": sum(t["internal_nodes"] for t in trees),
            "mean_root_fanout": float(np.mean([t["root_fanout"] for t in trees])),
            "mean_leaf_depth": sum(
                t["mean_leaf_depth"] * len(c.turns) for t, c in zip(trees, conversations, strict=True)
            )
            / all_leaves,
        }
        stats["beam_mean_collected_leaves"] = float(np.mean(beam_stats[mode].collected))
        stats["beam_mean_scored_nodes"] = float(np.mean(beam_stats[mode].scored))
        stats["beam_evidence_coverage"] = round(100 * float(np.mean(beam_stats[mode].coverage)), 2)
        stats["flat_coverage_at_beam_size"] = round(100 * float(np.mean(beam_stats[mode].flat_coverage)), 2)
        stats["collapsed_mean_leaves_returned"] = {
            f"@{k}": float(np.mean(collapsed_leaf_counts[mode][k])) for k in KS
        }
        stats["build_seconds"] = round(stats["build_seconds"], 3)
        stats["insert_embed_seconds"] = round(stats["insert_embed_seconds"], 3)
        stats["query_seconds"] = {name: round(s, 3) for name, s in stats["query_seconds"].items()}
        results[mode] = {name: scores[mode][name].summary() for name in MODE_METHODS} | {"stats": stats}

    return {
        "data": str(data),
        "conversations": [c.sample_id for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "skipped_questions": sum(c.skipped_questions for c in conversations),
        "dropped_evidence_ids": sum(c.dropped_ids for c in conversations),
        "embedder": IDENTITY,
        "beam_width": BEAM_WIDTH,
        "min_score": DEFAULT_WEIGHTS.min_score,
        "leaf_embed_seconds": round(leaf_embed_seconds, 3),
        "question_embed_seconds": round(question_embed_seconds, 3),
        "results": results,
        "per_conversation": per_conversation,
    }


def _tail_overall(scores: Scores, n: int) -> dict[str, float]:
    return {f"R@{k}": round(100 * float(np.mean(scores.per_k[k][-n:])), 2) for k in KS}


def _conversation_overall(method_scores: dict[str, Scores], n: int) -> dict[str, dict[str, float]]:
    return {name: _tail_overall(method_scores[name], n) for name in MODE_METHODS}


def markdown(report: dict[str, Any]) -> str:
    res = report["results"]
    rows: list[tuple[str, str, dict[str, Any]]] = [("flat_dense", "—", res["flat_dense"])]
    rows += [(name, mode, res[mode][name]) for name in MODE_METHODS for mode in MODES]
    cat_names = [f"{c} {n}" for c, n in CATEGORIES.items()]
    lines = [
        f"{report['questions']} questions, {report['turns']} turns, "
        f"{len(report['conversations'])} conversations",
        "",
        "| method | mode | R@5 | R@10 | R@25 | "
        + " | ".join(f"R@10 {n.split()[1]}" for n in cat_names)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(cat_names),
    ]
    for name, mode, entry in rows:
        overall = " | ".join(f"{entry['overall'][f'R@{k}']:.1f}" for k in KS)
        cats = " | ".join(
            "—" if entry["per_category"][c]["R@10"] is None else f"{entry['per_category'][c]['R@10']:.1f}"
            for c in cat_names
        )
        lines.append(f"| {name} | {mode} | {overall} | {cats} |")
    lines += [
        "",
        "| mode | build s (excl. embeds) | insert-embed s (calls / texts) | max height | internal nodes "
        "| mean root fan-out | mean leaf depth | leaves in collapsed top 10 "
        "| beam leaves collected (evidence among them; in flat top-same-size) "
        "| query s (leaves / expand / beam) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        s = res[mode]["stats"]
        q = s["query_seconds"]
        lines.append(
            f"| {mode} | {s['build_seconds']:.1f} | {s['insert_embed_seconds']:.1f} "
            f"({s['insert_embed_calls']} / {s['insert_embed_texts']}) | {s['shape']['max_height']} "
            f"| {s['shape']['internal_nodes']} | {s['shape']['mean_root_fanout']:.1f} "
            f"| {s['shape']['mean_leaf_depth']:.2f} | {s['collapsed_mean_leaves_returned']['@10']:.1f} "
            f"| {s['beam_mean_collected_leaves']:.0f} "
            f"({s['beam_evidence_coverage']:.1f} %; {s['flat_coverage_at_beam_size']:.1f} %) "
            f"| {q['collapsed_leaves']:.1f} / {q['collapsed_expand']:.1f} / {q['beam_descent']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("data", type=Path, help="LoCoMo JSON (e.g. ../shared/bench/locomo/locomo-dev.json)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/routing.json"))
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    report = run(args.data, args.limit)
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    report["command"] = shlex.join([sys.executable, *(sys.argv if argv is None else ["routing.py", *argv])])
    report["machine"] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(markdown(report))
    print(f"\nwall {report['wall_seconds']} s; results in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

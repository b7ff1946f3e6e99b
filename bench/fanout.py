"""How wide may a branch of the semantic tree grow? Insertion cost and tree quality by fan-out bound.

Two parts, each over the bounds of ``--bounds`` (``none`` is MemTree's unbounded rule):

1. Cost at scale. The leaves of a kept store (``--store``, e.g. one built by ``bench/scale.py
   --keep`` or ``bench/multiclient.py``; its vectors are reused, nothing is embedded) are inserted
   in order into one fresh :class:`~memtree_mcp.core.memory.Memory` per bound, in lockstep (each
   leaf into each memory in turn, so a busy machine slows every bound alike), timing ``add_leaf``
   (both trees, the indexes) in windows of 500 inserts, and the semantic tree's shape is recorded:
   height, mean leaf depth, root and largest fan-out, branches. The growth exponent of the median
   insert between the first and the last window (log ratio over log size ratio) says how insertion
   scales. ``--replicate R`` inserts R copies of the leaves (copy c > 0 perturbed by noise, later
   in time) to reach 100k from a 10k store without embedding anew.
2. Quality on LoCoMo (``--data``; one memory per conversation, every turn inserted in order, as
   ``bench/locomo.py`` does through the service). Leaf recall@k (k = 5, 10, 25) of the recall
   strategies that read the semantic tree: ``refine`` (top-down beam over the tree), ``collapsed``
   with ``expand`` (summaries stand for their best leaves; kind any) and ``collapsed`` summaries'
   precision, the share of a question's top-10 summary hits (``kind="summary"``) that hold at least
   one evidence turn. ``hybrid`` ranks leaves without the semantic tree and is left to
   ``bench/locomo.py``. The conversations hold ~550 turns, where the unbounded root has 15.8
   children on average: only small bounds bind there, so they stand in for 32 at 10k memories.

Run from the project root::

    python bench/fanout.py --store /tmp/memtree-multiclient/store-10000 --bounds none,8,16,32,64
    python bench/fanout.py --store /tmp/memtree-multiclient/store-10000 --bounds none,32 --replicate 10 \\
        --quality-bounds "" --out bench/results/fanout-100k.json
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from latency import machine_info, source_state, summary_ms
from locomo_data import KS, Scores, load_conversations

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.recall import RecallFilter, RecallRequest
from memtree_mcp.core.semantic import SemanticTree

DEFAULT_DATA = Path("../shared/bench/locomo/locomo-dev.json")
WINDOW = 500  # inserts per timed window


def parse_bound(text: str) -> int | None:
    return None if text.strip() in ("none", "") else int(text)


def shape(tree: SemanticTree) -> dict[str, Any]:
    depths = [tree.depth_of(leaf_id) for leaf_id in tree.parent_of]
    fan_outs = [len(b.children) for b in tree.branches.values()]
    return {
        "height": tree.height,
        "mean_leaf_depth": round(statistics.fmean(depths), 2) if depths else 0.0,
        "root_fan_out": len(tree.root.children),
        "max_fan_out": max(fan_outs),
        "branches": len(tree.branches),
    }


def stored_leaves(store: Path) -> list[Leaf]:
    """The leaves of the ``default`` namespace of a kept store, in order."""
    from memtree_mcp.providers.local import DIMENSION, IDENTITY
    from memtree_mcp.store.lance import LanceStore

    table = LanceStore(store, IDENTITY, DIMENSION).open("default", create=False)
    if table is None:
        raise SystemExit(f"no 'default' namespace in {store}")
    return table.read().leaves


def replicated(leaves: Sequence[Leaf], copies: int, seed: int = 7) -> list[Leaf]:
    """``copies`` × the leaves: copy c > 0 of each leaf is its vector plus Gaussian noise (σ = 0.02 a
    dimension), normalised, later in time; for growth beyond a kept store without embedding anew.
    The copies keep the corpus's clusters, as the reworded copies of ``bench/scale.py``'s corpus do.
    """
    rng = np.random.default_rng(seed)
    out: list[Leaf] = []
    span = leaves[-1].timestamp - leaves[0].timestamp + 86_400.0
    for c in range(copies):
        for leaf in leaves:
            vector = leaf.vector
            if c:
                noisy = vector + rng.normal(0.0, 0.02, size=vector.shape)
                vector = (noisy / np.linalg.norm(noisy)).astype(np.float32)
            out.append(
                Leaf(
                    id=f"{leaf.id}-{c}",
                    text=leaf.text,
                    vector=vector,
                    seq=len(out),
                    timestamp=leaf.timestamp + c * span,
                    role=leaf.role,
                    session=None if leaf.session is None else f"{leaf.session}-{c}",
                )
            )
    return out


def cost(leaves: Sequence[Leaf], bounds: Sequence[int | None]) -> dict[str, Any]:
    """Insert every leaf into one memory per bound, in lockstep (each leaf into each memory in
    turn), so that the load of a shared machine falls on all bounds alike; time each ``add_leaf``."""
    memories = {bound: Memory(len(leaves[0].vector)) for bound in bounds}
    for bound, memory in memories.items():
        memory.semantic.max_fan_out = bound
    windows: dict[int | None, list[dict[str, Any]]] = {bound: [] for bound in bounds}
    times: dict[int | None, list[float]] = {bound: [] for bound in bounds}
    for count, leaf in enumerate(leaves, start=1):
        for bound, memory in memories.items():
            started = time.perf_counter()
            memory.add_leaf(copy.copy(leaf))
            times[bound].append(time.perf_counter() - started)
        if count % WINDOW == 0:
            for bound in bounds:
                windows[bound].append({"size": count, **summary_ms(times[bound])})
                times[bound] = []
            if count % (20 * WINDOW) == 0:
                print(f"  {count:,} leaves inserted", file=sys.stderr, flush=True)
    out: dict[str, Any] = {}
    for bound, memory in memories.items():
        rows = windows[bound]
        first, last = rows[0], rows[-1]
        out["none" if bound is None else str(bound)] = {
            "leaves": len(memory.leaves),
            "insert_ms_windows": rows,
            "insert_p50_ms_first_last_window": [first["p50"], last["p50"]],
            "growth_exponent_p50": round(
                math.log(last["p50"] / first["p50"]) / math.log(last["size"] / first["size"]), 3
            ),
            "tree": shape(memory.semantic),
        }
    return out


def quality(data: Path, bounds: Sequence[int | None]) -> dict[str, Any]:
    from memtree_mcp.providers.local import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    conversations = load_conversations(data, None)
    out: dict[str, Any] = {}
    embedded = []
    for conv in conversations:
        turns = embedder.embed_batch([t.text for t in conv.turns])
        questions = embedder.embed_batch([q.text for q in conv.questions])
        embedded.append((conv, turns, questions))
    for bound in bounds:
        scores = {"refine": Scores(), "collapsed_expand": Scores()}
        precision: list[float] = []
        shapes = []
        for conv, turns, questions in embedded:
            memory = Memory(embedder.dimension)
            memory.semantic.max_fan_out = bound
            for seq, (turn, vector) in enumerate(zip(conv.turns, turns, strict=True)):
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
            shapes.append(shape(memory.semantic))
            leaf_only = RecallFilter(kind="leaf")
            for question, vector in zip(conv.questions, questions, strict=True):
                refined = [
                    h.id
                    for h in memory.recall(
                        RecallRequest(query=vector, k=max(KS), strategy="refine", where=leaf_only)
                    )
                ]
                scores["refine"].add(question, dict.fromkeys(KS, refined))
                expanded = [
                    h.id
                    for h in memory.recall(
                        RecallRequest(query=vector, k=max(KS), strategy="collapsed", expand=True)
                    )
                    if h.kind == "leaf"
                ]
                scores["collapsed_expand"].add(question, dict.fromkeys(KS, expanded))
                summaries = memory.recall(
                    RecallRequest(
                        query=vector, k=10, strategy="collapsed", where=RecallFilter(kind="summary")
                    )
                )
                if summaries:
                    holds = [
                        bool(set(memory.semantic.leaves_under(h.id)) & question.evidence)
                        for h in summaries
                        if h.tree == "semantic"
                    ]
                    if holds:
                        precision.append(float(np.mean(holds)))
        out["none" if bound is None else str(bound)] = {
            name: s.summary()["overall"] for name, s in scores.items()
        } | {
            "semantic_summary_precision_at_10": round(100 * float(np.mean(precision)), 2),
            "mean_root_fan_out": round(statistics.fmean(s["root_fan_out"] for s in shapes), 1),
            "max_height": max(s["height"] for s in shapes),
            "mean_leaf_depth": round(statistics.fmean(s["mean_leaf_depth"] for s in shapes), 2),
        }
        print(f"quality, bound {bound}: {out['none' if bound is None else str(bound)]}", file=sys.stderr)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--store", type=Path, default=None, help="a kept store whose leaves to insert")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON")
    parser.add_argument("--bounds", default="none,8,16,32,64", help="fan-out bounds for the cost part")
    parser.add_argument(
        "--quality-bounds", default="none,4,8,16", help="fan-out bounds for the quality part ('' for none)"
    )
    parser.add_argument(
        "--replicate",
        type=int,
        default=1,
        help="insert the store's leaves this many times (perturbed copies)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/fanout.json"))
    args = parser.parse_args(argv)
    import os

    report: dict[str, Any] = {
        "benchmark": "semantic tree fan-out bound (bench/fanout.py)",
        "machine": machine_info(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "command": shlex.join([sys.executable, *sys.argv]),
        "source": source_state(),
    }
    if args.store is not None:
        leaves = stored_leaves(args.store)
        if args.replicate > 1:
            leaves = replicated(leaves, args.replicate)
        report["cost_leaves"] = len(leaves)
        report["cost_replicated"] = args.replicate
        report["cost"] = cost(leaves, [parse_bound(t) for t in args.bounds.split(",")])
        for bound, found in report["cost"].items():
            print(
                f"cost, bound {bound}: {found['tree']} {found['insert_p50_ms_first_last_window']}",
                file=sys.stderr,
            )
    if args.quality_bounds:
        report["quality"] = quality(args.data, [parse_bound(t) for t in args.quality_bounds.split(",")])
    report["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("cost", "quality") if k in report}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

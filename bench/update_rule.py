"""How well the update rule (``updates.supersedes``) tells updates from look-alikes, on labelled pairs.

Protocol (data: ``update_pairs.py``, written for this benchmark)
1. Every distinct text of the pairs is embedded once with the default local embedder
   (all-MiniLM-L6-v2; with MEMTREE_EMBEDDER=e5-small, that one). Each pair becomes two leaves,
   the older one a day before the newer one.
2. The rule judges each pair twice: ``pair`` with a ``LexicalIndex`` holding only the pair's two
   memories (a fresh store of two memories, the hardest case for anything read from the index),
   and ``all`` with one index holding every distinct text of the set (one ``UpdateJudge`` for all
   pairs, as recall shares one).
3. Per variant and per split (``dev``, the pairs the rule was tuned on; ``held_out``, every third
   pair, only evaluated; ``all``): precision, recall and F1 of "update", the confusion per
   ``kind``, and every error listed. Timing: microseconds per judged pair, a fresh judge per pair
   (nothing cached) and one judge for all pairs (after a first pass, as recall's judge reads each
   memory once).

The rule measured is ``memtree_mcp.core.updates`` as imported (so ``PYTHONPATH`` chooses the
code), or the module at ``--rule PATH`` (e.g. the old rule, from a checkout of the main branch:
``--rule ../main/memtree_mcp/core/updates.py``).

Run from the repository root (a few seconds after the model has loaded)::

    PYTHONPATH=. python bench/update_rule.py [--rule PATH] [--out bench/results/update-rule.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from latency import source_state
from update_pairs import DEV, HELD_OUT, PAIRS, Pair, check

from memtree_mcp.core.lexical import LexicalIndex
from memtree_mcp.core.model import Leaf
from memtree_mcp.providers import make_embedder

DAY = 86_400.0


def load_rule(path: str | None) -> ModuleType:
    if path is None:
        import memtree_mcp.core.updates as module

        return module
    spec = importlib.util.spec_from_file_location("rule_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scores(judged: list[tuple[Pair, bool]]) -> dict[str, Any]:
    tp = sum(p.update and got for p, got in judged)
    fp = sum(not p.update and got for p, got in judged)
    fn = sum(p.update and not got for p, got in judged)
    tn = len(judged) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    per_kind: dict[str, dict[str, int]] = defaultdict(lambda: {"marked": 0, "not_marked": 0})
    for pair, got in judged:
        per_kind[pair.kind]["marked" if got else "not_marked"] += 1
    errors = [
        {"kind": p.kind, "update": p.update, "older": p.older, "newer": p.newer}
        for p, got in judged
        if got != p.update
    ]
    return {
        "pairs": len(judged),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "per_kind": dict(sorted(per_kind.items())),
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rule",
        help="path of an updates.py (or an older relevance.py) to measure instead of the imported one",
    )
    parser.add_argument("--out", default="bench/results/update-rule.json")
    args = parser.parse_args()
    check()
    rule = load_rule(args.rule)

    texts = list(dict.fromkeys(t for p in PAIRS for t in (p.older, p.newer)))
    embedder = make_embedder(os.environ.get("MEMTREE_EMBEDDER", "local"))  # the default unless set
    vectors = dict(zip(texts, embedder.embed_batch(texts), strict=True))
    ids = {text: f"t{i:03d}" for i, text in enumerate(texts)}

    def leaves(pair: Pair, i: int) -> tuple[Leaf, Leaf]:
        older = Leaf(
            id=ids[pair.older], text=pair.older, vector=vectors[pair.older], seq=2 * i, timestamp=DAY
        )
        newer = Leaf(
            id=ids[pair.newer], text=pair.newer, vector=vectors[pair.newer], seq=2 * i + 1, timestamp=2 * DAY
        )
        return older, newer

    # pair: an index of the pair's two memories, a fresh judge each time.
    pair_judged: list[tuple[Pair, bool]] = []
    fresh_seconds = 0.0
    for i, pair in enumerate(PAIRS):
        older, newer = leaves(pair, i)
        index = LexicalIndex()
        index.add(older.id, older.text)
        index.add(newer.id, newer.text)
        start = time.perf_counter()
        got = rule.UpdateJudge(index).supersedes(newer, older)
        fresh_seconds += time.perf_counter() - start
        pair_judged.append((pair, got))

    # all: one index of every text, one judge for all pairs (a second pass is timed: cached).
    everything = LexicalIndex()
    for text, leaf_id in ids.items():
        everything.add(leaf_id, text)
    judge = rule.UpdateJudge(everything)
    all_judged = [(pair, judge.supersedes(*reversed(leaves(pair, i)))) for i, pair in enumerate(PAIRS)]
    start = time.perf_counter()
    repeats = 20
    for _ in range(repeats):
        for i, pair in enumerate(PAIRS):
            judge.supersedes(*reversed(leaves(pair, i)))
    cached_seconds = (time.perf_counter() - start) / repeats

    dev, held = set(DEV), set(HELD_OUT)
    results: dict[str, Any] = {}
    for variant, judged in (("pair", pair_judged), ("all", all_judged)):
        results[variant] = {
            "dev": scores([(p, g) for p, g in judged if p in dev]),
            "held_out": scores([(p, g) for p, g in judged if p in held]),
            "all": scores(judged),
        }
    timing = {
        "fresh_judge_us_per_pair": round(1e6 * fresh_seconds / len(PAIRS), 1),
        "cached_judge_us_per_pair": round(1e6 * cached_seconds / len(PAIRS), 1),
    }

    print(f"rule: {rule.__file__}")
    print(
        f"{len(PAIRS)} pairs ({sum(p.update for p in PAIRS)} updates); "
        f"dev {len(DEV)}, held out {len(HELD_OUT)}"
    )
    print()
    print("| index | split | precision | recall | F1 | TP | FP | FN | TN |")
    print("|---|---|---|---|---|---|---|---|---|")
    for variant, by_split in results.items():
        for split, s in by_split.items():
            print(
                f"| {variant} | {split} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} "
                f"| {s['tp']} | {s['fp']} | {s['fn']} | {s['tn']} |"
            )
    print()
    print("| kind | label | marked (pair index) | marked (all) |")
    print("|---|---|---|---|")
    for kind, counts in results["pair"]["all"]["per_kind"].items():
        label = "update" if next(p for p in PAIRS if p.kind == kind).update else "not"
        everything_counts = results["all"]["all"]["per_kind"][kind]
        total = counts["marked"] + counts["not_marked"]
        print(f"| {kind} | {label} | {counts['marked']}/{total} | {everything_counts['marked']}/{total} |")
    print()
    print(
        f"timing: {timing['fresh_judge_us_per_pair']} µs per pair with a fresh judge, "
        f"{timing['cached_judge_us_per_pair']} µs with a judge that has read both memories"
    )
    print()
    print("errors (pair index):")
    for error in results["pair"]["all"]["errors"]:
        mark = "missed" if error["update"] else "FALSE "
        print(f"  {mark} [{error['kind']}] {error['older']!r} -> {error['newer']!r}")

    record = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "rule": str(rule.__file__),
        "source": source_state(),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "pairs": len(PAIRS),
        "timing": timing,
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()

"""How many pairs of chat turns the update rule (``updates.UpdateJudge``) marks as updates, on LoCoMo.

``update_rule.py`` measures the rule on labelled pairs of project facts; this counts what it does on
real conversations, where almost no turn updates another: every mark there is a candidate false
"superseded by", which recall shows and the server tells the model to trust.

Protocol
1. The LoCoMo conversations (``locomo_data.load_conversations``: one memory per turn, text
   ``<speaker> said, "<text>"``, timestamped with its session's date) are embedded with the default
   local embedder (``locomo_sweep.cached_vectors``: cached in ``--cache`` by the hash of the texts).
   An exact repeat of a turn is stored once, as the service stores it.
2. Per conversation, one ``LexicalIndex`` of all its turns (as a store of the conversation would
   have) and one ``UpdateJudge``; every pair (older turn i, newer turn j > i) whose cosine is at
   least ``UPDATE_MEANING`` (the pairs recall would judge) is judged.
3. Written: the pairs judged and marked per conversation, the total, and a seeded random sample of
   ``--sample`` marked pairs with their texts (to be labelled by hand: true update or not).

The rule measured is ``memtree_mcp.core.updates`` as imported (``PYTHONPATH`` chooses the code), or
the module at ``--rule PATH`` (as in ``update_rule.py``).

Run from the repository root (about a minute once the vectors are cached)::

    PYTHONPATH=. python bench/update_chat.py ../shared/bench/locomo/locomo-dev.json \
        [--rule PATH] [--out bench/results/update-chat.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from latency import source_state
from locomo_data import load_conversations
from locomo_sweep import cached_vectors
from update_rule import load_rule

from memtree_mcp.core.lexical import LexicalIndex
from memtree_mcp.core.model import Leaf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="locomo-dev.json")
    parser.add_argument("--rule", help="path of an updates.py to measure instead of the imported one")
    parser.add_argument("--out", default="bench/results/update-chat.json")
    parser.add_argument("--sample", type=int, default=40, help="marked pairs written with their texts")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--all", action="store_true", help="write every marked pair, not a sample")
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memtree-locomo"
    )
    args = parser.parse_args()
    rule = load_rule(args.rule)

    conversations = load_conversations(args.data, None)
    vectors = cached_vectors([t.text for c in conversations for t in c.turns], args.cache)
    per_conversation: list[dict[str, Any]] = []
    marked: list[dict[str, Any]] = []
    judged_total = 0
    seconds = 0.0
    for conv in conversations:
        leaves: list[Leaf] = []
        seen: set[str] = set()
        for turn in conv.turns:
            if turn.text in seen:  # the service stores an exact repeat once
                continue
            seen.add(turn.text)
            leaves.append(
                Leaf(
                    id=turn.id,
                    text=turn.text,
                    vector=vectors[turn.text],
                    seq=len(leaves),
                    timestamp=turn.timestamp,
                    session=turn.session,
                )
            )
        index = LexicalIndex()
        for leaf in leaves:
            index.add(leaf.id, leaf.text)
        judge = rule.UpdateJudge(index)
        matrix = np.stack([leaf.vector for leaf in leaves])
        cosines = matrix @ matrix.T
        older_of, newer_of = np.nonzero(np.triu(cosines >= rule.UPDATE_MEANING, k=1))
        marks = 0
        start = time.perf_counter()
        for i, j in zip(older_of.tolist(), newer_of.tolist(), strict=True):
            older, newer = leaves[i], leaves[j]
            if judge.supersedes(newer, older):
                marks += 1
                marked.append(
                    {
                        "conversation": conv.sample_id,
                        "older_id": older.id,
                        "newer_id": newer.id,
                        "cosine": round(float(cosines[i, j]), 3),
                        "older": older.text,
                        "newer": newer.text,
                    }
                )
        seconds += time.perf_counter() - start
        judged_total += len(older_of)
        per_conversation.append(
            {"conversation": conv.sample_id, "turns": len(leaves), "judged": len(older_of), "marked": marks}
        )
        print(f"{conv.sample_id}: {len(leaves)} turns, {len(older_of)} pairs judged, {marks} marked")

    total = sum(c["marked"] for c in per_conversation)
    per_pair = 1e6 * seconds / max(judged_total, 1)
    print(f"total: {judged_total} pairs judged, {total} marked ({per_pair:.1f} µs per pair)")
    sample = marked if args.all else random.Random(args.seed).sample(marked, min(args.sample, len(marked)))
    for pair in sample:
        print(f"  {pair['older']!r}\n    -> {pair['newer']!r}")

    record = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "rule": str(rule.__file__),
        "source": source_state(),
        "judged": judged_total,
        "marked": total,
        "per_conversation": per_conversation,
        "seed": args.seed,
        "sample": sample,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()

"""Session-ranking ideas on top of ``gather``, on the LoCoMo dev split (issue 18, second round).

The oracle of ``docs/benchmarks.md`` (the evidence sessions put first: R@10 93.2, multi-hop 70.3)
says that choosing the sessions is what is missing. Each probe here starts from ``gather``'s own
leaf scores (``Ranker.gathered`` on the memories ``bench/locomo_sweep.py`` builds, so the first
row is ``gather`` to the decimal) and adds a score of each memory's segment of the timeline (a
session in LoCoMo), standardised over the segments, times a weight:

- ``coverage``: the idf-weighted share of the query's distinct terms (names left out, as gather's
  BM25 leaves them) that occur anywhere in the segment: a segment that holds every word of the
  question somewhere, not one word many times;
- ``best-k dense``: the mean of the segment's k best cosines to gather's blended query vector
  (a session's best turns, not its centroid, which the first round tried);
- ``best-k gather``: the mean of the segment's k best gather scores;
- ``two-stage``: the N segments with the best ``best-k gather`` score first (a fixed lift), their
  memories ranked by gather within;
- ``session PRF``: the m most distinctive terms (tf-idf) of the best segment that the query lacks,
  as a second BM25 query over segments;
- ``greedy cover``: segments picked one by one, each the one that adds the most idf weight of
  query terms not yet covered by those picked, lifted by their order of picking;
- ``best-k content-only dense``: as ``best-k dense`` with the name-free vector alone; two sums of
  the above; and a cap (at most m memories of a segment before every other segment's next);
- ``length`` (a third round, a score of the memory itself): the standardised log of its number of
  distinct terms, a penalty for memories of at most m distinct terms, and the log length against
  its segment's mean.

None was kept (``docs/benchmarks.md``, issue 18, second and third rounds).

Recall@5/10/25 per category and R@10 per conversation for each setting; every row goes to
``--out``.

Run from the repository root::

    python bench/locomo_sessions.py ../shared/bench/locomo/locomo-dev.json
        [--out bench/results/locomo-sessions.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from locomo_data import CATEGORIES, KS, Question, Scores
from locomo_sweep import prepare

from memtree_mcp.core.gathering import standardised, without_names
from memtree_mcp.core.recall import DEFAULT_WEIGHTS, Ranker

# A probe: (the question's arrays) -> a score per leaf-index row to add to gather's.
Case = dict[str, Any]
Probe = Callable[[Case], np.ndarray]


def cases(data: Path, cache: Path) -> list[tuple[str, list[tuple[Question, Case]]]]:
    """Per conversation, each question with what the probes read: gather's leaf scores, the
    blended dense scores, the segment of each row, the query's name-free terms and their idf."""
    out = []
    for conv, memory, turn_of, qvectors, content in prepare(data, None, cache):
        n = len(memory.leaf_index)
        ids = memory.leaf_index.ids()
        timeline = memory.timeline()
        segment = timeline.segment_of_rows(n)
        groups = int(segment.max()) + 1
        segment_terms: list[Counter[str]] = [Counter() for _ in range(groups)]
        for row, leaf_id in enumerate(ids):
            segment_terms[segment[row]].update(memory.lexical.terms(leaf_id))
        matrix = memory.leaf_index.vectors()
        asked = []
        for q, vector, second in zip(conv.questions, qvectors, content, strict=True):
            names = memory.authors_named(q.text)
            _, scores = Ranker(memory).gathered(vector, q.text, second)
            share = DEFAULT_WEIGHTS.content_share
            blend = vector if second is None else (1 - share) * vector + share * second
            content_only = vector if second is None else second
            words = without_names(q.text, names, stand_in=" ") if names else q.text
            query_terms = list(dict.fromkeys(memory.lexical._tokenize(words)))
            asked.append(
                (
                    q,
                    {
                        "memory": memory,
                        "ids": ids,
                        "turn": [turn_of[i] for i in ids],
                        "gather": np.asarray(scores[:n], dtype=np.float64),
                        "dense": np.asarray(matrix @ blend.astype(np.float32), dtype=np.float64),
                        "content": np.asarray(matrix @ content_only, dtype=np.float64),
                        "segment": segment,
                        "groups": groups,
                        "segment_terms": segment_terms,
                        "words": words,
                        "terms": query_terms,
                        "idf": {t: memory.lexical.idf(t) for t in query_terms},
                    },
                )
            )
        out.append((conv.sample_id, asked))
    return out


def by_segment(case: Case, per_segment: np.ndarray) -> np.ndarray:
    return per_segment[case["segment"]]


def best_k(values: np.ndarray, segment: np.ndarray, groups: int, k: int) -> np.ndarray:
    """The mean of each segment's k highest values (all of them when it has fewer)."""
    out = np.full(groups, -np.inf)
    order = np.lexsort((-values, segment))
    seg_sorted, val_sorted = segment[order], values[order]
    starts = np.searchsorted(seg_sorted, np.arange(groups))
    ends = np.searchsorted(seg_sorted, np.arange(groups), side="right")
    for g in range(groups):
        if ends[g] > starts[g]:
            out[g] = float(val_sorted[starts[g] : min(ends[g], starts[g] + k)].mean())
    held = np.isfinite(out)
    out[~held] = out[held].min() if held.any() else 0.0
    return out


def coverage(case: Case) -> np.ndarray:
    idf, terms = case["idf"], case["terms"]
    total = sum(idf.values())
    if not total:
        return np.zeros(case["groups"])
    return np.asarray([sum(idf[t] for t in terms if t in seg) / total for seg in case["segment_terms"]])


def p_coverage(w: float) -> Probe:
    return lambda c: w * by_segment(c, standardised(coverage(c)))


def p_best_dense(k: int, w: float) -> Probe:
    return lambda c: w * by_segment(c, standardised(best_k(c["dense"], c["segment"], c["groups"], k)))


def p_best_content(k: int, w: float) -> Probe:
    return lambda c: w * by_segment(c, standardised(best_k(c["content"], c["segment"], c["groups"], k)))


def p_sum(*probes: Probe) -> Probe:
    return lambda c: sum((p(c) for p in probes), np.zeros(len(c["segment"])))


def p_cap(most: int) -> Probe:
    """At most ``most`` memories of one segment before any other segment's next: the ranking
    re-ordered so that each segment's (most + 1)-th memory comes after every segment's first ``most``."""

    def probe(c: Case) -> np.ndarray:
        order = np.lexsort((np.asarray(c["ids"]), -c["gather"]))
        seen: Counter[int] = Counter()
        lift = np.zeros(len(order))
        for r in order:
            g = int(c["segment"][r])
            seen[g] += 1
            if seen[g] > most:
                lift[r] = -1e6
        return lift

    return probe


def p_best_gather(k: int, w: float) -> Probe:
    return lambda c: w * by_segment(c, standardised(best_k(c["gather"], c["segment"], c["groups"], k)))


def p_two_stage(k: int, top: int, lift: float) -> Probe:
    def probe(c: Case) -> np.ndarray:
        score = best_k(c["gather"], c["segment"], c["groups"], k)
        chosen = np.zeros(c["groups"])
        chosen[np.argsort(-score, kind="stable")[:top]] = 1.0
        return lift * by_segment(c, chosen)

    return probe


def p_prf(m: int, w: float, k: int = 3) -> Probe:
    """The best segment's m most distinctive new terms, BM25 over segments as a second query."""

    def probe(c: Case) -> np.ndarray:
        memory = c["memory"]
        best = int(np.argmax(best_k(c["gather"], c["segment"], c["groups"], k)))
        asked = set(c["terms"])
        tf = c["segment_terms"][best]
        ranked = sorted(
            (t for t in tf if t not in asked and not any(ch.isdigit() for ch in t)),
            key=lambda t: (-tf[t] * memory.lexical.idf(t), t),
        )[:m]
        if not ranked:
            return np.zeros(len(c["segment"]))
        group_of_slot = np.where(memory.slot_row >= 0, c["segment"][np.maximum(memory.slot_row, 0)], -1)
        scores = memory.lexical.group_score_array(" ".join(ranked), group_of_slot, c["groups"])
        if scores is None:
            return np.zeros(len(c["segment"]))
        return w * by_segment(c, standardised(scores))

    return probe


def p_greedy_cover(picks: int, w: float) -> Probe:
    """Segments picked greedily by the idf weight of query terms not yet covered; the i-th pick
    gets w x (picks - i) / picks."""

    def probe(c: Case) -> np.ndarray:
        idf, left = c["idf"], set(c["terms"])
        lift = np.zeros(c["groups"])
        base = best_k(c["gather"], c["segment"], c["groups"], 3)
        for i in range(picks):
            gains = np.asarray([sum(idf[t] for t in left if t in seg) for seg in c["segment_terms"]])
            if not left or gains.max() <= 0:
                break
            best = int(np.lexsort((-base, -gains))[0])
            lift[best] = w * (picks - i) / picks
            left -= set(c["segment_terms"][best])
        return by_segment(c, lift)

    return probe


def _lengths(case: Case) -> np.ndarray:
    """Each memory's number of distinct terms (what it says, in BM25's words), cached per memory."""
    memory = case["memory"]
    held = _LENGTHS.get(id(memory))
    if held is None:
        held = _LENGTHS[id(memory)] = np.asarray(
            [len(memory.lexical.terms(leaf_id)) for leaf_id in case["ids"]], dtype=np.float64
        )
    return held


_LENGTHS: dict[int, np.ndarray] = {}


def p_log_length(w: float) -> Probe:
    return lambda c: w * standardised(np.log1p(_lengths(c)))


def p_short(most: int, w: float) -> Probe:
    return lambda c: -w * (_lengths(c) <= most).astype(np.float64)


def p_length_in_segment(w: float) -> Probe:
    def probe(c: Case) -> np.ndarray:
        logs, segment, groups = np.log1p(_lengths(c)), c["segment"], c["groups"]
        means = np.bincount(segment, weights=logs, minlength=groups) / np.maximum(
            np.bincount(segment, minlength=groups), 1
        )
        return w * standardised(logs - means[segment])

    return probe


def grid() -> list[tuple[str, Probe]]:
    out: list[tuple[str, Probe]] = [("gather (reference)", lambda c: np.zeros(len(c["segment"])))]
    out += [(f"coverage x {w}", p_coverage(w)) for w in (0.1, 0.25, 0.5, 1.0)]
    out += [(f"best-{k} dense x {w}", p_best_dense(k, w)) for k in (1, 3, 5) for w in (0.25, 0.5)]
    out += [(f"best-{k} dense x {w}", p_best_dense(k, w)) for k in (2,) for w in (0.15, 0.25, 0.35)]
    out += [(f"best-{k} dense x {w}", p_best_dense(k, w)) for k in (3,) for w in (0.15, 0.35)]
    out += [(f"best-{k} content-only dense x {w}", p_best_content(k, w)) for k in (1, 3) for w in (0.25, 0.5)]
    out += [
        (f"best-3 dense x {w} + greedy cover 2 picks x {v}", p_sum(p_best_dense(3, w), p_greedy_cover(2, v)))
        for w in (0.25,)
        for v in (0.25, 0.5)
    ]
    out += [(f"at most {m} memories of a segment before the others' next", p_cap(m)) for m in (2, 3, 5)]
    out += [(f"best-{k} gather x {w}", p_best_gather(k, w)) for k in (1, 3, 5) for w in (0.25, 0.5)]
    out += [
        (f"two-stage: top {top} segments by best-{k} gather, lift {lift}", p_two_stage(k, top, lift))
        for k in (3,)
        for top in (3, 5, 8)
        for lift in (0.5, 1.0)
    ]
    out += [(f"session PRF {m} terms x {w}", p_prf(m, w)) for m in (5, 10) for w in (0.25, 0.5)]
    out += [(f"greedy cover {p} picks x {w}", p_greedy_cover(p, w)) for p in (2, 3) for w in (0.25, 0.5, 1.0)]
    # Third round (a memory's own length as a prior; a leaf score, not a segment's):
    out += [(f"length: log distinct terms x {w}", p_log_length(w)) for w in (0.1, 0.2, 0.35, 0.5)]
    out += [
        (f"length: -{w} at most {m} distinct terms", p_short(m, w)) for m in (2, 3, 5) for w in (0.25, 0.5)
    ]
    out += [
        (f"length: log distinct terms against its segment's x {w}", p_length_in_segment(w))
        for w in (0.1, 0.25)
    ]
    return out


def evaluate(convs: list[tuple[str, list[tuple[Question, Case]]]], probe: Probe) -> dict[str, Any]:
    scores = Scores()
    per_conv: dict[str, Scores] = {}
    for name, asked in convs:
        own = per_conv[name] = Scores()
        for q, case in asked:
            total = case["gather"] + probe(case)
            # Ties by leaf id, as recall breaks them (ids here are the turn order).
            order = np.lexsort((np.asarray(case["ids"]), -total))[: max(KS)]
            turns = [case["turn"][r] for r in order]
            scores.add(q, dict.fromkeys(KS, turns))
            own.add(q, dict.fromkeys(KS, turns))
    out = scores.summary()
    out["per_conversation"] = {n: s.summary()["overall"]["R@10"] for n, s in per_conv.items()}
    return out


def row(label: str, s: dict[str, Any]) -> str:
    cells = [f"{s['overall'][f'R@{k}']:.1f}" for k in KS]
    cells += [f"{s['per_category'][f'{c} {n}']['R@10']:.1f}" for c, n in CATEGORIES.items()]
    cells.append(" / ".join(f"{v:.1f}" for v in s["per_conversation"].values()))
    return f"| {label} | " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path)
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memtree-locomo"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", help="run only the settings whose label contains this")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    convs = cases(args.data, args.cache)
    print(f"prepared in {time.perf_counter() - started:.1f} s", flush=True)
    print("| setting | R@5 | R@10 | R@25 | " + " | ".join(CATEGORIES.values()) + " | R@10 by conversation |")
    results = []
    for label, probe in grid():
        if args.only and args.only not in label and "reference" not in label:
            continue
        summary = evaluate(convs, probe)
        print(row(label, summary), flush=True)
        results.append({"label": label, **summary})
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        command = shlex.join([sys.executable, *sys.argv])
        report = {"data": str(args.data), "command": command, "results": results}
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

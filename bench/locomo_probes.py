"""Every ranking idea tried for issue 18 ("recall that gathers what a question spreads across
sessions"), on the LoCoMo dev split, as leaf-score functions over the same memories.

Each probe is a function of one conversation's arrays (leaf vectors, BM25 scores, sessions,
authors, the timeline, both trees) and one question, returning a score per leaf (or a ranking);
recall@5/10/25 per category are computed as in ``bench/locomo.py``. Probes score leaves directly,
so they reproduce ``hybrid`` exactly (its first row) but skip the service; the kept idea became
the ``gather`` strategy of ``core/recall.py``, measured through the service by ``bench/locomo.py``
and over its neighbouring settings by ``bench/locomo_sweep.py``. The last two rows are bounds:
the evidence sessions put first (an oracle, it reads the evidence) for what choosing sessions
could give, and a lift of 100 for the named author's memories (close to a filter) for what
filtering by author costs.

Run from the repository root (about ten minutes on a quiet machine)::

    python bench/locomo_probes.py ../shared/bench/locomo/locomo-dev.json
        [--out bench/results/locomo-probes.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from locomo_data import CATEGORIES, KS, Question, Scores, load_conversations
from locomo_sweep import build, cached_vectors

from memtree_mcp.core.lexical import LexicalIndex, tokenize
from memtree_mcp.core.recall import DEFAULT_WEIGHTS

Conv = dict[str, Any]
Probe = Callable[[Conv, Question, int], "np.ndarray | list[int]"]


def z(values: np.ndarray) -> np.ndarray:
    return (values - values.mean()) / (values.std() + 1e-6)


def strip_names(names: Sequence[str], text: str, stand_in: str) -> str:
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(r"\b" + re.escape(name) + r"('s)?\b", stand_in, text)
    return text


def group_index(texts: Sequence[str], groups: np.ndarray) -> LexicalIndex:
    index = LexicalIndex()
    for g in np.unique(groups):
        index.add(str(g), " ".join(texts[j] for j in np.flatnonzero(groups == g)))
    return index


def group_bm25(index: LexicalIndex, groups: np.ndarray, text: str) -> np.ndarray:
    """By leaf, the standardised BM25 score of its group scored as one document."""
    count = int(groups.max()) + 1
    values = np.zeros(count)
    for key, score in index.scores(text).items():
        values[int(key)] = score
    held = np.bincount(groups, minlength=count) > 0
    out = np.zeros(count)
    out[held] = z(values[held])
    return out[groups]


def group_dense(matrix: np.ndarray, groups: np.ndarray, query: np.ndarray) -> np.ndarray:
    count = int(groups.max()) + 1
    centres = np.zeros((count, matrix.shape[1]))
    np.add.at(centres, groups, matrix)
    held = np.bincount(groups, minlength=count)
    centres /= np.maximum(held, 1)[:, None]
    values = centres @ query
    out = np.zeros(count)
    out[held > 0] = z(values[held > 0])
    return out[groups]


def temporal_groups(memory: Any, ids: Sequence[str], level: int) -> np.ndarray:
    """Each leaf's temporal-tree ancestor ``level`` levels above its parent, numbered."""
    tree = memory.temporal
    found = []
    for leaf_id in ids:
        node = tree.parent_of[leaf_id]
        for _ in range(level):
            parent = tree.branches[node].parent
            if parent is None:
                break
            node = parent
        found.append(node)
    numbers = {g: k for k, g in enumerate(dict.fromkeys(found))}
    return np.asarray([numbers[g] for g in found])


def semantic_groups(memory: Any, ids: Sequence[str], most: int) -> np.ndarray:
    """Each leaf's highest semantic-tree ancestor holding at most ``most`` leaves, numbered."""
    tree = memory.semantic
    found = []
    for leaf_id in ids:
        node = tree.parent_of[leaf_id]
        group = node
        while node is not None:
            branch = tree.branches[node]
            if branch.leaf_count > most or branch.kind == "root":
                break
            group, node = node, branch.parent
        found.append(group)
    numbers = {g: k for k, g in enumerate(dict.fromkeys(found))}
    return np.asarray([numbers[g] for g in found])


def prepare(data: Path, cache: Path) -> list[Conv]:
    conversations = load_conversations(data, None)
    vectors = cached_vectors(
        [t.text for c in conversations for t in c.turns]
        + [q.text for c in conversations for q in c.questions],
        cache,
    )
    convs: list[Conv] = []
    for conv in conversations:
        memory, turn_of = build(conv, vectors)
        ids = memory.leaf_index.ids()
        texts = [memory.leaves[i].text for i in ids]
        roles = [memory.leaves[i].role for i in ids]
        sessions = np.asarray([int((memory.leaves[i].session or "session_0").split("_")[1]) for i in ids])
        names = sorted(set(roles))
        lexical = memory.lexical
        bm25, bm25_plain, plain_texts = [], [], []
        for q in conv.questions:
            for out, text in ((bm25, q.text), (bm25_plain, strip_names(names, q.text, " "))):
                array = lexical.score_array(text)
                scores = np.zeros(len(ids))
                if array is not None:
                    slots = np.flatnonzero(array > 0)
                    scores[memory.slot_row[slots]] = array[slots]
                out.append(scores)
            plain_texts.append(strip_names(names, q.text, " "))
        convs.append(
            {
                "conv": conv,
                "memory": memory,
                "ids": ids,
                "turn": [turn_of[i] for i in ids],
                "matrix": memory.leaf_index.vectors()[: len(ids)].astype(np.float64),
                "timeline": memory.timeline(),
                "roles": roles,
                "names": names,
                "sessions": sessions,
                "texts": texts,
                "queries": np.stack([vectors[q.text] for q in conv.questions]).astype(np.float64),
                "bm25": bm25,
                "bm25_plain": bm25_plain,
                "plain_texts": plain_texts,
                "session_index": group_index(texts, sessions),
            }
        )
    return convs


def add_content_vectors(convs: list[Conv], cache: Path) -> None:
    """The questions embedded with the authors' names replaced ("they") or deleted."""
    for stand_in in ("they", ""):
        wanted = [strip_names(c["names"], q.text, stand_in) for c in convs for q in c["conv"].questions]
        vectors = cached_vectors(wanted, cache)
        for c in convs:
            key = "content_they" if stand_in else "content_gap"
            c[key] = np.stack(
                [vectors[strip_names(c["names"], q.text, stand_in)] for q in c["conv"].questions]
            ).astype(np.float64)


def named(c: Conv, q: Question) -> np.ndarray:
    text = q.text.lower()
    return np.asarray([role.lower() in text for role in c["roles"]], dtype=np.float64)


def fused(
    c: Conv,
    i: int,
    query: np.ndarray | None = None,
    *,
    plain: bool = False,
    w: float = DEFAULT_WEIGHTS.lexical_weight,
):
    """hybrid's fusion before propagation: z(cosine) + w z(BM25)."""
    vector = c["queries"][i] if query is None else query
    score = z(c["matrix"] @ vector)
    bm25 = c["bm25_plain"][i] if plain else c["bm25"][i]
    if bm25.any():
        score = score + w * z(bm25)
    return score


def hybrid(c: Conv, q: Question, i: int) -> np.ndarray:
    return c["timeline"].propagate(fused(c, i))


def mmr_by_session(c: Conv, scores: np.ndarray, penalty: float, depth: int = 100) -> list[int]:
    """Greedy: each pick costs ``penalty`` for every earlier pick from the same session."""
    candidates = list(np.argsort(-scores)[:depth])
    taken: dict[int, int] = {}
    out: list[int] = []
    while candidates and len(out) < 25:
        best = max(candidates, key=lambda j: scores[j] - penalty * taken.get(int(c["sessions"][j]), 0))
        candidates.remove(best)
        out.append(int(best))
        taken[int(c["sessions"][best])] = taken.get(int(c["sessions"][best]), 0) + 1
    return out


def gather_probe(
    a: float = 0.5,
    b: float = 0.5,
    g: float = 0.5,
    *,
    plain: bool = True,
    stand_in: str = "they",
    w: float = 0.5,
) -> Probe:
    """gather: dense on a mix of the query and the query without names, BM25 without names, a lift
    for memories by a named author, propagation, plus the session's BM25."""

    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        content = c["content_they" if stand_in else "content_gap"][i]
        mixed = a * content + (1 - a) * c["queries"][i]
        score = fused(c, i, mixed, plain=plain, w=w) + b * named(c, q)
        text = c["plain_texts"][i] if plain else q.text
        return c["timeline"].propagate(score) + g * group_bm25(c["session_index"], c["sessions"], text)

    return probe


def probes() -> list[tuple[str, str, Probe]]:
    out: list[tuple[str, str, Probe]] = [("reference", "hybrid (z-fusion, neighbours in time)", hybrid)]

    for b in (0.25, 0.5, 1.0):
        out.append(
            ("author lift", f"+{b} for memories by an author the query names", _author(b)),
        )
    for m in (3, 5, 10):
        for beta in (0.5, 1.0):
            out.append(
                (
                    "second hop, vectors",
                    f"query + {beta} x mean of the top {m}, re-ranked",
                    _prf_vector(m, beta),
                )
            )
    for m in (3, 5):
        for t in (5, 10):
            for w2 in (0.25, 0.5):
                out.append(
                    (
                        "second hop, words",
                        f"session BM25 0.5 + BM25 of the top {m}'s {t} most distinctive new terms x {w2}",
                        _prf_terms(m, t, w2),
                    )
                )
    for lam in (0.1, 0.2, 0.4, 0.8):
        out.append(("coverage (MMR)", f"-{lam} per earlier pick from the same session", _mmr(lam)))
    for lam in (0.3, 0.6):
        for thr in (0.6, 0.75):
            out.append(
                ("coverage (MMR)", f"-{lam} x cosine above {thr} to an earlier pick", _mmr_cos(lam, thr))
            )
    for mode in ("leafmax", "top3", "dense", "bm25", "dense+bm25", "dense+bm25+leafmax"):
        for g in (0.25, 0.5, 1.0):
            out.append(("segments first: sessions", f"session score {mode} x {g}", _session(mode, g)))
    for g in (0.5, 0.75, 1.0):
        out.append(("segments first: sessions", f"session BM25 x {g} before propagation", _session_before(g)))
    for level in (0, 1, 2):
        for mode in ("bm25", "bm25+dense"):
            for g in (0.5, 1.0):
                out.append(
                    (
                        "segments first: temporal tree",
                        f"level-{level} segments, {mode} x {g}",
                        _tree_level(level, mode, g),
                    )
                )
    for most in (4, 8, 16, 32, 64):
        for agg in ("mean", "max"):
            for g in (0.25, 0.5):
                out.append(
                    (
                        "second hop: semantic subtree",
                        f"subtree <= {most} leaves, {agg} score x {g}",
                        _semantic(most, agg, g),
                    )
                )
    for g in (0.5, 1.0):
        for b in (0.25, 0.5, 1.0):
            out.append(
                (
                    "author + sessions",
                    f"session BM25 x {g} + author lift {b}",
                    gather_probe(0.0, b, g, plain=False),
                )
            )
    for a in (0.0, 0.5):
        for plain in (False, True):
            for b in (0.25, 0.5, 1.0):
                for g in (0.25, 0.5, 0.75):
                    out.append(
                        (
                            "authors as authors (gather grid)",
                            f"content share {a}, names out of BM25 {plain}, author {b}, session BM25 {g}",
                            gather_probe(a, b, g, plain=plain),
                        )
                    )
    for a in (0.3, 0.7, 1.0):
        out.append(("gather neighbours", f"content share {a} (author 0.5, session 0.5)", gather_probe(a)))
    for w in (0.4, 0.7, 1.0):
        out.append(("gather neighbours", f"lexical weight {w}", gather_probe(w=w)))
    out.append(("gather neighbours", "names deleted instead of 'they'", gather_probe(stand_in="")))
    for mode, beta in (
        ("role", 0.25),
        ("role", 0.5),
        ("role", 1.0),
        ("all", 0.25),
        ("all", 0.5),
        ("all", 1.0),
    ):
        out.append(
            (
                "authors without a 2nd embedding",
                f"query - {beta} x {mode} centroid, author 0.5, session 0.5",
                _centroid(mode, beta),
            )
        )
    for lam in (0.05, 0.1, 0.2):
        out.append(
            (
                "gather + coverage",
                f"gather, then -{lam} per earlier pick from the same session",
                _gather_mmr(lam),
            )
        )
    for g0 in (0.25, 0.5):
        out.append(("gather + finer segments", f"gather + level-0 segment BM25 x {g0}", _gather_level0(g0)))
    for gd in (0.25, 0.5):
        out.append(
            (
                "gather + session vectors",
                f"gather + session centroid cosine x {gd}",
                _gather_session_dense(gd),
            )
        )
    out.append(("oracle", "evidence sessions first (reads the evidence)", _oracle_sessions))
    blurred = "author lift 100 before propagation (a filter that neighbours in time blur)"
    out.append(("oracle", blurred, _author(100.0)))
    return out


def _author(b: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        return c["timeline"].propagate(fused(c, i) + b * named(c, q))

    return probe


def _prf_vector(m: int, beta: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        top = np.argsort(-hybrid(c, q, i))[:m]
        second = c["queries"][i] + beta * c["matrix"][top].mean(0)
        return c["timeline"].propagate(fused(c, i, second / np.linalg.norm(second)))

    return probe


def _prf_terms(m: int, t: int, w2: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        base = hybrid(c, q, i) + 0.5 * group_bm25(c["session_index"], c["sessions"], q.text)
        lexical = c["memory"].lexical
        asked = set(tokenize(q.text))
        weights: dict[str, float] = {}
        for j in np.argsort(-base)[:m]:
            for term, tf in lexical.terms(c["ids"][j]).items():
                if term not in asked:
                    weights[term] = weights.get(term, 0.0) + tf * lexical.idf(term)
        extra = [term for term, _ in sorted(weights.items(), key=lambda p: -p[1])[:t]]
        array = lexical.score_array(" ".join(extra))
        if array is None:
            return base
        scores = np.zeros(len(c["ids"]))
        slots = np.flatnonzero(array > 0)
        scores[c["memory"].slot_row[slots]] = array[slots]
        return base + w2 * c["timeline"].propagate(z(scores))

    return probe


def _mmr(lam: float) -> Probe:
    return lambda c, q, i: mmr_by_session(c, hybrid(c, q, i), lam)


def _mmr_cos(lam: float, thr: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> list[int]:
        scores = hybrid(c, q, i)
        candidates = list(np.argsort(-scores)[:60])
        out: list[int] = []
        while candidates and len(out) < 25:
            if out:
                similar = (c["matrix"][candidates] @ c["matrix"][out].T).max(1)
                cost = lam * np.maximum(similar - thr, 0) / (1 - thr)
            else:
                cost = np.zeros(len(candidates))
            out.append(int(candidates.pop(int(np.argmax(scores[candidates] - cost)))))
        return out

    return probe


def _session(mode: str, g: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        scores = hybrid(c, q, i)
        sessions = c["sessions"]
        count = int(sessions.max()) + 1
        held = np.bincount(sessions, minlength=count) > 0
        lift = np.zeros(len(scores))
        if "leafmax" in mode or mode == "top3":
            best = np.full(count, -np.inf)
            if mode == "top3":
                best = np.zeros(count)
                for s in np.flatnonzero(held):
                    best[s] = np.sort(scores[sessions == s])[-3:].mean()
            else:
                np.maximum.at(best, sessions, scores)
            values = np.zeros(count)
            values[held] = z(best[held])
            lift += values[sessions]
        if "dense" in mode:
            lift += group_dense(c["matrix"], sessions, c["queries"][i])
        if "bm25" in mode:
            lift += (0.5 if "dense" in mode else 1.0) * group_bm25(c["session_index"], sessions, q.text)
        return scores + g * lift

    return probe


def _session_before(g: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        lift = group_bm25(c["session_index"], c["sessions"], q.text)
        return c["timeline"].propagate(fused(c, i) + g * lift)

    return probe


def tree_level(c: Conv, level: int) -> tuple[np.ndarray, LexicalIndex]:
    """The temporal-tree groups at ``level`` and a BM25 index of their joined texts, made once."""
    key = f"tree{level}"
    if key not in c:
        groups = temporal_groups(c["memory"], c["ids"], level)
        c[key] = (groups, group_index(c["texts"], groups))
    return c[key]


def _tree_level(level: int, mode: str, g: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        groups, index = tree_level(c, level)
        lift = group_bm25(index, groups, q.text)
        if "dense" in mode:
            lift = lift + 0.5 * group_dense(c["matrix"], groups, c["queries"][i])
        return hybrid(c, q, i) + g * lift

    return probe


def _semantic(most: int, agg: str, g: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        key = f"semantic{most}"
        if key not in c:
            c[key] = semantic_groups(c["memory"], c["ids"], most)
        groups = c[key]
        scores = hybrid(c, q, i)
        count = int(groups.max()) + 1
        if agg == "mean":
            values = np.bincount(groups, weights=scores, minlength=count) / np.maximum(
                np.bincount(groups, minlength=count), 1
            )
        else:
            values = np.full(count, -np.inf)
            np.maximum.at(values, groups, scores)
        return scores + g * z(values)[groups]

    return probe


def _centroid(mode: str, beta: float) -> Probe:
    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        roles = np.asarray(c["roles"])
        if mode == "role":
            hit = [r for r in c["names"] if r.lower() in q.text.lower()]
            centre = np.mean([c["matrix"][roles == r].mean(0) for r in hit], 0) if hit else 0.0
        else:
            centre = c["matrix"].mean(0)
        score = fused(c, i, c["queries"][i] - beta * centre, plain=True) + 0.5 * named(c, q)
        return c["timeline"].propagate(score) + 0.5 * group_bm25(
            c["session_index"], c["sessions"], c["plain_texts"][i]
        )

    return probe


def _gather_mmr(lam: float) -> Probe:
    gather = gather_probe()
    return lambda c, q, i: mmr_by_session(c, np.asarray(gather(c, q, i)), lam)


def _gather_level0(g0: float) -> Probe:
    gather = gather_probe()

    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        groups, index = tree_level(c, 0)
        return np.asarray(gather(c, q, i)) + g0 * group_bm25(index, groups, c["plain_texts"][i])

    return probe


def _gather_session_dense(gd: float) -> Probe:
    gather = gather_probe()

    def probe(c: Conv, q: Question, i: int) -> np.ndarray:
        mixed = 0.5 * c["content_they"][i] + 0.5 * c["queries"][i]
        return np.asarray(gather(c, q, i)) + gd * group_dense(c["matrix"], c["sessions"], mixed)

    return probe


def _oracle_sessions(c: Conv, q: Question, i: int) -> np.ndarray:
    wanted = [int(e.split(":")[0][1:]) for e in q.evidence]
    return hybrid(c, q, i) + 100.0 * np.isin(c["sessions"], wanted)


def evaluate(convs: list[Conv], probe: Probe) -> dict[str, Any]:
    scores = Scores()
    for c in convs:
        for i, q in enumerate(c["conv"].questions):
            out = probe(c, q, i)
            order = out[:25] if isinstance(out, list) else list(np.argsort(-out, kind="stable")[:25])
            ranked = [c["turn"][j] for j in order]
            scores.add(q, dict.fromkeys(KS, ranked))
    return scores.summary()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path)
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "memtree-locomo"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/locomo-probes.json"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    convs = prepare(args.data, args.cache)
    add_content_vectors(convs, args.cache)
    print(
        "| group | setting | R@5 | R@10 | R@25 | "
        + " | ".join(f"R@10 {n}" for n in CATEGORIES.values())
        + " |"
    )
    print("|" + "---|" * (5 + len(CATEGORIES)))
    results = []
    for group, label, probe in probes():
        summary = evaluate(convs, probe)
        overall = summary["overall"]
        cats = [summary["per_category"][f"{k} {n}"]["R@10"] for k, n in CATEGORIES.items()]
        cells = [f"{overall[f'R@{k}']:.1f}" for k in KS] + [f"{v:.1f}" for v in cats]
        print(f"| {group} | {label} | " + " | ".join(cells) + " |", flush=True)
        results.append({"group": group, "setting": label, **summary})
    report = {
        "data": str(args.data),
        "command": shlex.join([sys.executable, *sys.argv]),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "probes": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

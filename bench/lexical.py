"""BM25 for hybrid recall: the project's in-memory index against LanceDB's native full-text index.

Both index the LoCoMo dev turns (one table or index per conversation, protocol in
``locomo_data.py``) and answer every question's top 25; the script reports recall@5/10/25, the
build time and the per-query latency (p50, p95) of each. LanceDB's index is built with its default
English settings (``create_fts_index("text")``, stemming and stop words on) and queried with
``search(question, query_type="fts")``.

Run from the repository root::

    python bench/lexical.py ../shared/bench/locomo/locomo-dev.json [--out bench/results/lexical.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lancedb
from locomo_data import K_MAX, KS, Scores, load_conversations

from memtree_mcp.core.lexical import LexicalIndex


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(data: Path) -> dict[str, Any]:
    conversations = load_conversations(data, None)
    scores = {"own": Scores(), "lancedb_fts": Scores()}
    build = dict.fromkeys(scores, 0.0)
    latency: dict[str, list[float]] = {name: [] for name in scores}
    with tempfile.TemporaryDirectory(prefix="memtree-fts-") as home:
        db = lancedb.connect(home)
        for conv in conversations:
            started = time.perf_counter()
            own = LexicalIndex()
            for turn in conv.turns:
                own.add(turn.id, turn.text)
            build["own"] += time.perf_counter() - started

            started = time.perf_counter()
            table = db.create_table(conv.sample_id, data=[{"id": t.id, "text": t.text} for t in conv.turns])
            table.create_fts_index("text")
            build["lancedb_fts"] += time.perf_counter() - started

            for question in conv.questions:
                started = time.perf_counter()
                ranked = [doc for doc, _ in own.search(question.text, K_MAX)]
                latency["own"].append(time.perf_counter() - started)
                scores["own"].add(question, dict.fromkeys(KS, ranked))

                started = time.perf_counter()
                try:
                    rows = table.search(question.text, query_type="fts").limit(K_MAX).select(["id"]).to_list()
                except Exception as exc:  # a query the FTS parser refuses counts as an empty answer
                    print(f"lancedb fts refused {question.text!r}: {exc}", file=sys.stderr)
                    rows = []
                latency["lancedb_fts"].append(time.perf_counter() - started)
                found = [row["id"] for row in rows]
                scores["lancedb_fts"].add(question, dict.fromkeys(KS, found))
    return {
        "results": {name: s.summary()["overall"] for name, s in scores.items()},
        "build_seconds": {name: round(t, 3) for name, t in build.items()},
        "query_ms": {
            name: {
                "p50": round(1000 * statistics.median(values), 3),
                "p95": round(1000 * percentile(values, 0.95), 3),
            }
            for name, values in latency.items()
        },
        "questions": len(latency["own"]),
        "command": shlex.join([sys.executable, *sys.argv]),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "lancedb": lancedb.__version__},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--out", type=Path, default=Path("bench/results/lexical.json"))
    args = parser.parse_args(argv)
    report = run(args.data)
    print("| index | R@5 | R@10 | R@25 | build s | query p50 ms | query p95 ms |")
    print("|---|---|---|---|---|---|---|")
    for name, overall in report["results"].items():
        q = report["query_ms"][name]
        print(
            f"| {name} | {overall['R@5']:.1f} | {overall['R@10']:.1f} | {overall['R@25']:.1f} | "
            f"{report['build_seconds'][name]} | {q['p50']} | {q['p95']} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

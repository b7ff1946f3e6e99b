"""In-memory recall of two versions of the code, timed in one process, question by question.

On a shared machine two runs minutes apart differ by a third; here the same questions are asked
of the same memory built by each version, alternately (which goes first alternates too), and
both the wall clock and the CPU time of the thread are kept. The other version is a checkout
(``--old``) whose ``memtree_mcp`` package is copied under another name, so both import side by
side. The memory is ``bench/recall_cost.py``'s recycled one (``--size`` leaves); recall is asked as
the service asks it (k = 10, ``supersede``, the service's default cut-off, ``gather`` with the
question without its authors as the second vector).

Run from the repository root::

    python bench/recall_ab.py ../shared/bench/locomo/locomo-dev.json --old ../main --size 10000
        [--out bench/results/recall-ab-10k.json]
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from locomo_sweep import cached_vectors
from recall_cost import percentiles, recycled_arguments, recycled_material, recycled_memory, written

PACKAGE = "memtree_mcp"
OLD = "memtree_mcp_old"


def old_package(checkout: Path, scratch: Path) -> Any:
    """The ``memtree_mcp`` of ``checkout`` imported as ``memtree_mcp_old``."""
    target = scratch / OLD
    shutil.copytree(checkout / PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        path.write_text(re.sub(rf"\b{PACKAGE}\b", OLD, path.read_text()))
    sys.path.insert(0, str(scratch))
    return importlib.import_module(f"{OLD}.core.memory")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the other version")
    args = parser.parse_args(argv, namespace=recycled_arguments(parser, "recall-ab-10k.json"))
    load_start = os.getloadavg()
    turns, questions, vectors = recycled_material(args)
    from memtree_mcp.core import memory as new_module
    from memtree_mcp.core.relevance import DEFAULT_MIN_RELEVANCE

    with tempfile.TemporaryDirectory() as scratch:
        old_module = old_package(args.old, Path(scratch))
        memories = {
            "old": recycled_memory(turns, vectors, args.size, old_module),
            "new": recycled_memory(turns, vectors, args.size, new_module),
        }
    content_text = {q: memories["new"].content_text(q) for q in questions}
    content = cached_vectors([t for t in content_text.values() if t is not None], args.cache)
    wall: dict[str, list[float]] = {f"{v} {s}": [] for v in memories for s in ("gather", "hybrid")}
    cpu: dict[str, list[float]] = {key: [] for key in wall}
    same = 0
    for number, q in enumerate(questions):
        text = content_text[q]
        for strategy in ("gather", "hybrid"):
            order = ["old", "new"] if number % 2 == 0 else ["new", "old"]
            found: dict[str, list[tuple[str, str | None]]] = {}
            for version in order:
                started, started_cpu = time.perf_counter(), time.thread_time()
                hits = memories[version].recall(
                    vectors[q],
                    10,
                    query_text=q,
                    strategy=strategy,
                    content_query=content[text] if text is not None and strategy == "gather" else None,
                    supersede=True,
                    min_relevance=DEFAULT_MIN_RELEVANCE,
                )
                wall[f"{version} {strategy}"].append(time.perf_counter() - started)
                cpu[f"{version} {strategy}"].append(time.thread_time() - started_cpu)
                found[version] = [(h.id, h.superseded_by) for h in hits]
            same += found["old"] == found["new"]
    report: dict[str, Any] = {
        "size": args.size,
        "queries": len(questions),
        "same_hits_and_marks": f"{same} of {2 * len(questions)}",
        "wall_ms": {key: percentiles(values) for key, values in wall.items()},
        "cpu_ms": {key: percentiles(values) for key, values in cpu.items()},
        "cpu_p50_ratio_new_to_old": {
            s: round(statistics.median(cpu[f"new {s}"]) / statistics.median(cpu[f"old {s}"]), 3)
            for s in ("gather", "hybrid")
        },
    }
    return written(report, args.out, load_start)


if __name__ == "__main__":
    sys.exit(main())

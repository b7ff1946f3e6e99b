"""Speed at scale: stores of 1k, 10k and 100k memories built and used through the real service.

What it measures, for each size N (``--sizes``):

1. Bulk import. A fresh store in a scratch directory is filled with N memories through
   ``MemoryService.import_memories`` (the path of ``memtree-mcp import``: embeddings in batches of
   256, one commit per batch) with the real local ONNX embedder; the throughput is memories per
   second, embedding included, with the time split into embedding, tree insertion
   (``Memory.add_leaf``), row building and LanceDB commits.
2. ``remember``. ``--remember-calls`` further memories are remembered one call each, on top of
   the N, each timed end to end (no LLM) with the same split per call.
3. ``recall``. ``--queries`` questions (k = 10, the default strategy) timed three ways: ``service.look_up``
   (query embedding, version check and the in-memory search), the query embedding alone, and
   ``rank(memory, request)`` with the precomputed vector (embedding excluded). The exact brute-force
   matrix-vector product over the leaves' vectors (numpy, float32) is timed on its own, and next to
   it a flat (index-less) LanceDB vector search of the same table.
4. The store: its size on disk, table rows (live nodes and superseded revisions), the trees' shape
   (height, mean leaf depth, fan-out of the semantic root, branch counts).
5. Reopening, in a fresh Python process (``python bench/scale.py --reopen …``): the embedding model
   is loaded first and timed apart, then the first ``recall`` of a new service (open the table,
   read it, rebuild both trees and the indexes in memory, answer), split into the table read and
   the in-memory load, then a second recall; the process's resident memory (RSS) before and after
   the store is loaded.

The corpus is generated, never downloaded: the LoCoMo turns of ``--data`` (the dev split shipped
with the project), recycled as many times as needed with variations so that no two memories are
the same text. Copy 0 is LoCoMo itself; in copy c every speaker gets another name and the words of
a few interchangeable groups (pets, hobbies, instruments, places, sports, foods, …) are permuted
within their group, all drawn from a random generator seeded with c; timestamps move c spans of the
data later and sessions are renamed per copy. Questions are LoCoMo's, varied like a copy that is
in the store. The same seed gives the same corpus, memory for memory.

Each size's results are merged into ``--out`` (keyed by size, so sizes can be run separately, each
entry with its own load averages, time and source state); ``--plot`` is redrawn from all entries.
The machine is shared with other work: the load average at the start and end of each size is in
the results, and figures from a loaded machine are slower than the code.

Replayed vectors (``--vectors FILE.npz``). Embedding is most of an import's time (823 of 1,237 s at
100k), and on a shared machine a 100k import takes 20 minutes or more. With ``--vectors``, the
embedder is replaced by one that replays vectors: the texts and vectors of a store built earlier
(``python bench/scale.py --save-vectors STORE_DIR FILE.npz``, e.g. the 10k store of a ``--keep``
run); record i of the corpus gets the vector of record i mod n, plus Gaussian noise (σ = 0.02 a
dimension, seeded with i, normalised) for i ≥ n, as the retired ``bench/fanout.py --replicate`` perturbed its
copies. Everything else (the trees, the commits, the store on disk, the reopen, the resident
memory) is what a real import makes; queries are embedded by the real model. The import rate
then measures the trees and the store alone.

Two more modes: ``--core STORE_DIR [OUT]`` times the core alone (read, load, recall, add_leaf) on a
store kept with ``--keep`` (run it with ``PYTHONPATH`` pointing at an older checkout to compare), and
``--s3-moto [OUT]`` remembers and recalls through the service on an ``s3://`` home served by moto on
loopback, counting the HTTP requests of each call.

Run from the project root::

    python bench/scale.py --sizes 1000,10000            # about 4 minutes
    nohup python bench/scale.py --sizes 100000 > scale-100k.log 2>&1 &   # about 20 minutes
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import io
import itertools
import json
import os
import pstats
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# As `memtree-mcp serve` does (memtree_mcp/cli/app.py), before numpy loads: one BLAS thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from latency import TimedEmbedder, machine_info, package_version, source_state, summary_ms

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import embed_queries
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.recall import RankRequest, rank
from memtree_mcp.providers import make_embedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.service.spaces import Spaces
from memtree_mcp.store import rows as store_rows
from memtree_mcp.store.table import NamespaceTable

NAMESPACE = "scale"


def embedder_name() -> str:
    """The embedder measured: MEMTREE_EMBEDDER (``--embedder`` sets it, so ``--reopen`` inherits it)."""
    return os.environ.get("MEMTREE_EMBEDDER", "local")


RECALL_K = 10
COMPARED_STRATEGIES = ("gather", "hybrid")  # timed one after the other for each question
DEFAULT_DATA = Path("../shared/bench/locomo/locomo-dev.json")
TARGETS_MS = {
    "recall_p50": {10_000: 15.0, 100_000: 40.0},
    "remember_p50": {10_000: 30.0},
}

# -- corpus -----------------------------------------------------------------------------------------

NAMES = """
Aaron Abigail Adrian Aisha Alan Alice Amara Andre Anika Ben Bianca Carlos Chloe Daniel Dara Diego
Elena Emil Erin Farah Felix Fiona Gabriel Grace Hana Hugo Ines Ivan Jade Jonas Kai Kara Leo Lena Liam
Lucia Malik Mara Marco Mei Nadia Nico Noah Olga Omar Paula Priya Quinn Rafael Rosa Sam Sara Sofia
Tariq Tess Theo Uma Victor Vera Wes Yara Yusuf Zoe Zane
""".split()

# Words a copy permutes within their group: the sentences keep their grammar, the facts change.
WORD_GROUPS = [
    "dog cat parrot rabbit hamster horse turtle puppy kitten".split(),
    "painting pottery knitting photography gardening baking sculpting drawing woodworking".split(),
    "guitar piano violin drums cello flute ukulele saxophone trumpet".split(),
    "beach mountains lake forest desert island canyon river countryside".split(),
    "soccer basketball tennis swimming running cycling hiking yoga climbing".split(),
    "book novel poem podcast movie album documentary show comic".split(),
    "coffee tea pizza pasta sushi tacos salad soup burgers".split(),
    "Paris Tokyo Berlin Lisbon Toronto Sydney Rome Madrid Oslo".split(),
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
    "school office studio gym library park cafe museum garage".split(),
    "friends family kids parents neighbors colleagues classmates cousins teammates".split(),
    "red blue green yellow purple orange pink black white".split(),
    "January February March April May June July August September".split(),
]


class Variant:
    """One copy's renaming: speakers to other names, group words to other words of their group."""

    def __init__(self, copy: int, speakers: Sequence[str]) -> None:
        rng = random.Random(copy)
        self.mapping: dict[str, str] = {}
        if copy:
            for speaker, name in zip(speakers, rng.sample(NAMES, len(speakers)), strict=True):
                self.mapping[speaker.lower()] = name
                self.mapping[speaker[:3].lower()] = name[:3]  # "Mel" for "Melanie"
            for group in WORD_GROUPS:
                shuffled = group[:]
                rng.shuffle(shuffled)
                for word, other in zip(group, shuffled, strict=True):
                    self.mapping.setdefault(word.lower(), other)
        words = sorted(self.mapping, key=len, reverse=True)
        self._pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)

    def apply(self, text: str) -> str:
        if not self.mapping:
            return text
        return self._pattern.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        word = match.group(0)
        other = self.mapping[word.lower()]
        if word.isupper() and len(word) > 1:
            return other.upper()
        return other[0].upper() + other[1:] if word[0].isupper() else other.lower()


def load_locomo(path: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """LoCoMo's turns as import records (content, role, ts, session), its speakers, its questions."""
    from locomo_data import DATE_FORMAT, SESSION_KEY, turn_text

    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[dict[str, Any]] = []
    speakers: list[str] = []
    questions: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        for key in ("speaker_a", "speaker_b"):
            if conv[key] not in speakers:
                speakers.append(conv[key])
        sessions = sorted(int(m.group(1)) for key in conv if (m := SESSION_KEY.fullmatch(key)) is not None)
        for number in sessions:
            moment = datetime.strptime(conv[f"session_{number}_date_time"].strip(), DATE_FORMAT)
            stamp = moment.replace(tzinfo=UTC).timestamp()
            for turn in conv[f"session_{number}"]:
                turns.append(
                    {
                        "content": turn_text(turn),
                        "role": turn["speaker"],
                        "ts": stamp,
                        "session": f"{sample['sample_id']}:session_{number}",
                    }
                )
        questions += [qa["question"] for qa in sample["qa"]]
    return turns, speakers, questions


def corpus(turns: list[dict[str, Any]], speakers: Sequence[str], count: int) -> list[dict[str, Any]]:
    """``count`` distinct memories as import records, in arrival order (copies of LoCoMo, varied)."""
    low = min(t["ts"] for t in turns)
    span = max(t["ts"] for t in turns) - low + 86_400.0
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    copy = 0
    while len(out) < count:
        variant = Variant(copy, speakers)
        for turn in turns:
            text = variant.apply(turn["content"])
            if text in seen:
                continue
            seen.add(text)
            moment = datetime.fromtimestamp(turn["ts"] + copy * span, tz=UTC)
            out.append(
                {
                    "content": text,
                    "role": variant.apply(turn["role"]),
                    "timestamp": moment.isoformat(timespec="seconds"),
                    "session": f"copy{copy}:{turn['session']}",
                }
            )
            if len(out) == count:
                break
        copy += 1
    return out


def copies_needed(turns: int, count: int) -> int:
    return max(1, -(-count // max(1, turns)))


def queries(questions: list[str], speakers: Sequence[str], copies: int, count: int) -> list[str]:
    """``count`` LoCoMo questions, each varied like one of the first ``copies`` copies."""
    rng = random.Random(12345)
    variants = [Variant(c, speakers) for c in range(copies)]
    return [variants[rng.randrange(copies)].apply(rng.choice(questions)) for _ in range(count)]


# -- instrumentation --------------------------------------------------------------------------------


class Probe:
    """Times chosen methods while installed: every call's duration, by label."""

    def __init__(self, targets: dict[str, tuple[Any, str]]) -> None:
        self.targets = targets
        self.durations: dict[str, list[float]] = {label: [] for label in targets}
        self._saved: list[tuple[Any, str, Any]] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[Probe]:
        for label, (owner, name) in self.targets.items():
            original = getattr(owner, name)
            self._saved.append((owner, name, original))
            setattr(owner, name, self._timed(label, original))
        try:
            yield self
        finally:
            for owner, name, original in reversed(self._saved):
                setattr(owner, name, original)
            self._saved.clear()

    def _timed(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        sink = self.durations[label]

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                sink.append(time.perf_counter() - started)

        return timed

    def mark(self) -> dict[str, int]:
        return {label: len(values) for label, values in self.durations.items()}

    def since(self, mark: dict[str, int]) -> dict[str, float]:
        """Seconds spent in each label since ``mark``."""
        return {label: sum(values[mark[label] :]) for label, values in self.durations.items()}


def write_probe() -> Probe:
    return Probe(
        {
            "tree insertion (Memory.add_leaf)": (Memory, "add_leaf"),
            "row building (rows.node_rows)": (store_rows, "node_rows"),
            "LanceDB commit (NamespaceTable.commit)": (NamespaceTable, "commit"),
            "version check (Spaces.follow)": (Spaces, "follow"),
        }
    )


def rss_mib() -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def tree_shape(memory: Memory) -> dict[str, Any]:
    semantic, temporal = memory.semantic, memory.temporal
    depths = [semantic.depth_of(leaf_id) for leaf_id in memory.leaves]
    fan_outs = [len(b.children) for b in semantic.branches.values()]
    return {
        "leaves": len(memory.leaves),
        "semantic_branches": len(semantic.branches),
        "semantic_height": semantic.height,
        "semantic_mean_leaf_depth": round(statistics.fmean(depths), 2) if depths else 0,
        "semantic_root_fan_out": len(semantic.root.children),
        "semantic_max_fan_out": max(fan_outs, default=0),
        "temporal_branches": len(temporal.branches),
        "temporal_height": temporal.height,
    }


# -- one size -------------------------------------------------------------------------------------


class ReplayEmbedder:
    """The local model's identity and dimension, with vectors replayed for the corpus's texts.

    ``texts`` and ``vectors`` come from a store built earlier (``--save-vectors``); ``records`` is
    the corpus. A text of the corpus at position i gets the vector saved for record i mod n (n saved
    records), perturbed for i ≥ n; any other text (a query) is embedded by the real model.
    """

    def __init__(self, saved: Path, records: Sequence[dict[str, Any]]) -> None:
        self.model = make_embedder(embedder_name())
        data = np.load(saved, allow_pickle=False)
        by_text = {str(t): i for i, t in enumerate(data["texts"])}
        self._vectors = data["vectors"].astype(np.float32)
        base = [by_text.get(r["content"]) for r in records]
        n = next((i for i, found in enumerate(base) if found is None), len(base))
        self._position = {r["content"]: i for i, r in enumerate(records)}
        self._base = [b for b in base[:n] if b is not None]
        if not self._base:
            raise SystemExit(f"{saved} holds none of the corpus's first records")

    @property
    def identity(self) -> str:
        return self.model.identity

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        unknown = [j for j, text in enumerate(texts) if text not in self._position]
        if unknown:
            out[unknown] = self.model.embed_batch([texts[j] for j in unknown])
        for j, text in enumerate(texts):
            i = self._position.get(text)
            if i is None:
                continue
            vector = self._vectors[self._base[i % len(self._base)]]
            if i >= len(self._base):
                noisy = vector + np.random.default_rng(i).normal(0.0, 0.02, size=vector.shape)
                vector = (noisy / np.linalg.norm(noisy)).astype(np.float32)
            out[j] = vector
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return embed_queries(self.model, texts)


def save_vectors(home: str, out: str) -> int:
    """Write the texts and vectors of the leaves of ``home``'s namespace to ``out`` (npz)."""
    from memtree_mcp.store.lance import LanceStore

    found = LanceStore(home, "?", 0).read_any(NAMESPACE)
    assert found is not None, f"no namespace {NAMESPACE!r} in {home}"
    leaves = found[0].leaves
    np.savez(
        out,
        texts=np.array([leaf.text for leaf in leaves]),
        vectors=np.stack([leaf.vector for leaf in leaves]),
    )
    print(f"saved {len(leaves):,} vectors to {out}")
    return 0


def bench_size(
    size: int,
    records: list[dict[str, Any]],
    questions: list[str],
    home: Path,
    remember_calls: int,
    profile_calls: int,
    ann: bool = False,
    vectors: Path | None = None,
) -> dict[str, Any]:
    """Build a store of ``size`` memories, remember and recall on top of it; return the timings.

    With ``vectors`` (an npz of ``--save-vectors``), vectors are replayed instead of embedded."""
    if vectors is not None:
        embedder = TimedEmbedder(ReplayEmbedder(vectors, records))  # type: ignore[arg-type]
        embedder.inner.model.embed_batch(["warm up"])  # type: ignore[attr-defined]
    else:
        embedder = TimedEmbedder(make_embedder(embedder_name()))
        embedder.inner.embed_batch(["warm up"])  # the model's load is not the import's
    service = MemoryService(
        Settings(home=str(home), namespace=NAMESPACE, embedder=embedder_name()), embedder=embedder
    )
    probe = write_probe()
    out: dict[str, Any] = {"size": size, "embedder": embedder.identity}
    try:
        with probe.installed():
            # -- bulk import
            print(f"  importing {size:,} memories ...", file=sys.stderr, flush=True)
            mark = probe.mark()
            embeds_before = len(embedder.durations)
            started = time.perf_counter()
            added, skipped = service.upkeep.import_memories(records[:size], namespace=NAMESPACE)
            import_s = time.perf_counter() - started
            parts = probe.since(mark)
            embedding_s = sum(embedder.durations[embeds_before:])
            out["import"] = {
                "memories": added,
                "duplicates_skipped": skipped,
                "wall_s": round(import_s, 2),
                "memories_per_s": round(added / import_s, 1),
                "seconds": {
                    "embedding (embed_batch)": round(embedding_s, 2),
                    **{label: round(s, 2) for label, s in parts.items()},
                },
                "commits": len(
                    probe.durations["LanceDB commit (NamespaceTable.commit)"][
                        mark["LanceDB commit (NamespaceTable.commit)"] :
                    ]
                ),
            }
            print(f"  imported in {import_s:.1f} s ({added / import_s:.0f}/s)", file=sys.stderr, flush=True)

            # -- remember, one call each
            extra = records[size : size + remember_calls]
            total: list[float] = []
            split: dict[str, list[float]] = {label: [] for label in probe.targets}
            embed_part: list[float] = []
            for record in extra:
                mark = probe.mark()
                embeds_before = len(embedder.durations)
                started = time.perf_counter()
                result = service.remember(
                    record["content"],
                    role=record["role"],
                    timestamp=record["timestamp"],
                    session=record["session"],
                    namespace=NAMESPACE,
                )
                total.append(time.perf_counter() - started)
                assert not result.deduplicated
                embed_part.append(sum(embedder.durations[embeds_before:]))
                for label, seconds in probe.since(mark).items():
                    split[label].append(seconds)
            out["remember"] = {
                "calls": len(total),
                "total": summary_ms(total),
                "embedding": summary_ms(embed_part),
                "without_embedding": summary_ms([t - e for t, e in zip(total, embed_part, strict=True)]),
                **{label: summary_ms(values) for label, values in split.items()},
            }

        # -- recall
        memory = service.memory(NAMESPACE)
        assert memory is not None
        inner = embedder.inner
        service.look_up(RecallRequest("warm-up query", k=RECALL_K, namespace=NAMESPACE))
        full: list[float] = []
        embed_only: list[float] = []
        core: list[float] = []
        follow: list[float] = []
        brute: list[float] = []
        hits: list[int] = []
        # The default strategy above; each of these too, interleaved question by question.
        by_strategy: dict[str, list[float]] = {name: [] for name in COMPARED_STRATEGIES}
        vectors = embed_queries(inner, questions)
        for question, vector in zip(questions, vectors, strict=True):
            started = time.perf_counter()
            found = service.look_up(RecallRequest(question, k=RECALL_K, namespace=NAMESPACE))
            full.append(time.perf_counter() - started)
            hits.append(len(found.hits))
            for name, times in by_strategy.items():
                started = time.perf_counter()
                service.look_up(RecallRequest(question, k=RECALL_K, namespace=NAMESPACE, strategy=name))
                times.append(time.perf_counter() - started)
            started = time.perf_counter()
            embed_queries(inner, [question])
            embed_only.append(time.perf_counter() - started)
            started = time.perf_counter()
            service.memory(NAMESPACE)
            follow.append(time.perf_counter() - started)
            started = time.perf_counter()
            rank(memory, RankRequest(query=vector, k=RECALL_K, query_text=question))
            core.append(time.perf_counter() - started)
            started = time.perf_counter()
            memory.leaf_index.search(vector, RECALL_K)
            brute.append(time.perf_counter() - started)
        out["recall"] = {
            "queries": len(questions),
            "k": RECALL_K,
            "mean_hits": round(statistics.fmean(hits), 2) if hits else 0,
            "service_recall": summary_ms(full),
            "service_recall_by_strategy": {name: summary_ms(times) for name, times in by_strategy.items()},
            "embedding_only": summary_ms(embed_only),
            "memory_recall_only": summary_ms(core),
            "version_check": summary_ms(follow),
            "numpy_bruteforce_top10": summary_ms(brute),
            "notes": {
                "service_recall": "look_up(RecallRequest(q, k=10)): embedding, version check, search",
                "memory_recall_only": "rank(memory, k=10, query_text=q): embedding excluded",
                "numpy_bruteforce_top10": "VectorIndex.search(vector, 10) over all leaves: one float32 "
                "matrix-vector product + argpartition, nothing else",
            },
        }
        out["lance_flat_search"] = lance_flat_search(service, vectors[: min(50, len(vectors))])
        if ann:
            print("  comparing with LanceDB's IVF_PQ index ...", file=sys.stderr, flush=True)
            out["ann"] = ann_comparison(memory, vectors[: min(100, len(vectors))], home.parent)
        out["tree"] = tree_shape(memory)
        out["rss_mib_builder_process"] = rss_mib()
        if profile_calls:
            out["remember_profile"] = profile_remember(
                service, records[size + remember_calls :][:profile_calls]
            )
            out["recall_profile"] = profile_recall(memory, questions[:profile_calls], vectors)
        table = service.spaces[NAMESPACE].table
        assert table is not None
        out["table_rows"] = int(table._table.count_rows())
    finally:
        service.close()
    out["store_bytes"] = disk_bytes(home)
    out["store_mib"] = round(out["store_bytes"] / 2**20, 1)
    out["reopen"] = reopen(home, questions[0], questions[1])
    return out


def lance_flat_search(service: MemoryService, vectors: np.ndarray) -> dict[str, Any]:
    """LanceDB's own exact (index-less) vector search over the namespace table, for comparison."""
    table = service.spaces[NAMESPACE].table
    assert table is not None
    if "vector" not in table._table.schema.names:
        # Schema 2 keeps a leaf's vector as bytes (``embedding``), which LanceDB does not search.
        return {"skipped": "the table has no fixed-size vector column (schema version 2)"}
    durations: list[float] = []
    for vector in vectors:
        started = time.perf_counter()
        table._table.search(vector).where("kind = 'leaf'", prefilter=True).limit(RECALL_K).to_arrow()
        durations.append(time.perf_counter() - started)
    return {
        "query": "table.search(v).where(\"kind = 'leaf'\", prefilter=True).limit(10).to_arrow(), no index",
        **summary_ms(durations),
    }


def ann_comparison(memory: Memory, queries: np.ndarray, scratch: Path) -> dict[str, Any]:
    """Exact numpy search against LanceDB on the same leaf vectors: flat, then with an IVF_PQ index.

    A table of (id, vector) rows is written to ``scratch``; the index is cosine IVF_PQ with about
    sqrt(N) partitions and 48 sub-vectors, searched with 20 probes and a refine factor of 5.
    Recall@10 is measured against numpy's exact top 10.
    """
    import lancedb
    import pyarrow as pa

    vectors = np.array(memory.leaf_index.vectors())
    ids = memory.leaf_index.ids()
    exact: list[list[str]] = []
    numpy_s: list[float] = []
    for vector in queries:
        started = time.perf_counter()
        found = memory.leaf_index.search(vector, RECALL_K)
        numpy_s.append(time.perf_counter() - started)
        exact.append([node_id for node_id, _ in found])
    db = lancedb.connect(str(scratch / "ann"))
    flat = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
    table = db.create_table("leaves", data=pa.table({"id": ids, "vector": flat}), mode="overwrite")

    def timed_search(**options: int) -> tuple[dict[str, Any], float]:
        durations: list[float] = []
        overlap = 0
        for vector, truth in zip(queries, exact, strict=True):
            query = table.search(vector).distance_type("cosine").limit(RECALL_K)
            if "nprobes" in options:
                query = query.nprobes(options["nprobes"]).refine_factor(options["refine_factor"])
            started = time.perf_counter()
            rows = query.to_arrow()
            durations.append(time.perf_counter() - started)
            overlap += len(set(rows.column("id").to_pylist()) & set(truth))
        return summary_ms(durations), round(100 * overlap / max(1, RECALL_K * len(exact)), 1)

    flat_ms, flat_recall = timed_search()
    started = time.perf_counter()
    partitions = max(2, int(np.sqrt(len(ids))))
    table.create_index(metric="cosine", index_type="IVF_PQ", num_partitions=partitions, num_sub_vectors=48)
    build_s = time.perf_counter() - started
    ann_ms, ann_recall = timed_search(nprobes=20, refine_factor=5)
    return {
        "leaves": len(ids),
        "numpy_exact_top10": summary_ms(numpy_s),
        "lance_flat_top10": flat_ms,
        "lance_flat_recall_at_10_pct": flat_recall,
        "lance_ivf_pq_build_s": round(build_s, 1),
        "lance_ivf_pq_top10": ann_ms,
        "lance_ivf_pq_recall_at_10_pct": ann_recall,
        "index": f"IVF_PQ cosine, {partitions} partitions, 48 sub-vectors; nprobes 20, refine_factor 5",
    }


def numpy_curve(sizes: Sequence[int], dimension: int = 384, repeats: int = 30) -> dict[str, Any]:
    """Brute force alone on random unit vectors: one float32 matrix-vector product + top 10."""
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {}
    for size in sizes:
        matrix = rng.standard_normal((size, dimension), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        query = matrix[0]
        durations = []
        for _ in range(repeats):
            started = time.perf_counter()
            scores = matrix @ query
            np.argpartition(-scores, RECALL_K)[:RECALL_K]
            durations.append(time.perf_counter() - started)
        out[str(size)] = summary_ms(durations)
        del matrix
    return out


def profile_remember(service: MemoryService, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    profiler = cProfile.Profile()
    profiler.enable()
    for record in records:
        service.remember(
            record["content"],
            role=record["role"],
            timestamp=record["timestamp"],
            session=record["session"],
            namespace=NAMESPACE,
        )
    profiler.disable()
    return {"calls": len(records), "top_cumulative": _top(profiler)}


def profile_recall(memory: Memory, questions: Sequence[str], vectors: np.ndarray) -> dict[str, Any]:
    profiler = cProfile.Profile()
    profiler.enable()
    for question, vector in zip(questions, vectors, strict=False):
        rank(memory, RankRequest(query=vector, k=RECALL_K, query_text=question))
    profiler.disable()
    return {"calls": len(questions), "top_cumulative": _top(profiler)}


def _top(profiler: cProfile.Profile, lines: int = 22) -> str:
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(lines)
    # Keep the table, not the header with the profile's temporary paths.
    return text.getvalue().split("ncalls", 1)[-1]


# -- reopening, in a fresh process -------------------------------------------------------------------


def reopen(home: Path, first_query: str, second_query: str) -> dict[str, Any]:
    """Run ``--reopen`` in a new interpreter: model load, first and second recall, RSS."""
    command = [sys.executable, __file__, "--reopen", str(home), first_query, second_query]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def reopen_probe(home: str, first_query: str, second_query: str) -> dict[str, Any]:
    """In this (fresh) process: what a new server pays to answer its first recall on ``home``."""
    out: dict[str, Any] = {"rss_mib_at_start": rss_mib()}
    started = time.perf_counter()
    embedder = make_embedder(embedder_name())
    embedder.embed_batch(["warm up"])
    out["model_load_ms"] = round((time.perf_counter() - started) * 1000, 1)
    out["rss_mib_model_loaded"] = rss_mib()
    try:  # as `memtree-mcp serve` does (code from before it has no such switch)
        from memtree_mcp.host.heap import freeze_after_loads

        freeze_after_loads()
    except ImportError:
        pass
    settings = Settings(home=home, namespace=NAMESPACE, embedder=embedder_name())
    service = MemoryService(settings, embedder=embedder)
    targets: dict[str, tuple[Any, str]] = {"read": (NamespaceTable, "read"), "load": (Memory, "load")}
    try:  # code with snapshots (issue 16 part 3); the code before has none of these
        from memtree_mcp.store import snapshot

        targets["read"] = (NamespaceTable, "read_latest")
        targets |= {
            "resume": (NamespaceTable, "resume"),
            "snapshot_read": (snapshot, "read"),
            "snapshot_write": (snapshot, "write"),
        }
    except ImportError:
        pass
    probe = Probe(targets)
    with probe.installed():
        started, cpu = time.perf_counter(), time.process_time()
        result = service.look_up(RecallRequest(first_query, k=RECALL_K, namespace=NAMESPACE))
        out["first_recall_ms"] = round((time.perf_counter() - started) * 1000, 1)
        # CPU time of the process (all its threads): on a shared machine the wall time is mostly
        # waiting for a core, this is what the work costs.
        out["first_recall_cpu_ms"] = round((time.process_time() - cpu) * 1000, 1)
    out["table_read_ms"] = round(sum(probe.durations["read"]) * 1000, 1)
    out["memory_load_ms"] = round(sum(probe.durations["load"]) * 1000, 1)
    for label in ("resume", "snapshot_read", "snapshot_write"):
        if label in probe.durations:
            out[f"{label}_ms"] = round(sum(probe.durations[label]) * 1000, 1)
    out["first_recall_hits"] = len(result.hits)
    started = time.perf_counter()
    service.look_up(RecallRequest(second_query, k=RECALL_K, namespace=NAMESPACE))
    out["second_recall_ms"] = round((time.perf_counter() - started) * 1000, 1)
    out["rss_mib_store_loaded"] = rss_mib()
    service.close()
    return out


# -- core alone, on a kept store ------------------------------------------------------------------------


def core_probe(home: str, data: Path, extra: int = 100) -> dict[str, Any]:
    """The in-memory core on a store built by this benchmark (``--keep``), without the service.

    Times the table read, ``Memory.load``, ``rank(memory, request)`` (200 questions, vectors precomputed)
    and ``Memory.add_leaf`` for ``extra`` further memories of the corpus. Written for both the
    current code and an older checkout (``PYTHONPATH=<checkout> python bench/scale.py --core …``),
    so it uses only what both have.
    """
    import memtree_mcp.core.memory as memory_module
    from memtree_mcp.core.trees.calendar import UTC_CALENDAR
    from memtree_mcp.core.trees.model import Leaf
    from memtree_mcp.providers.local import IDENTITY
    from memtree_mcp.service.inputs import parse_timestamp
    from memtree_mcp.service.writing import content_hash, new_leaf_id
    from memtree_mcp.store.lance import LanceStore

    turns, speakers, all_questions = load_locomo(data)
    store = LanceStore(home, IDENTITY, 384)
    table = store.open(NAMESPACE, create=False)
    assert table is not None, f"no namespace {NAMESPACE!r} in {home}"
    started = time.perf_counter()
    snapshot = table.read()
    read_s = time.perf_counter() - started
    size = len(snapshot.leaves)
    memory = Memory(384)
    started = time.perf_counter()
    memory.load(snapshot.leaves, snapshot.branches)
    load_s = time.perf_counter() - started
    embedder = make_embedder(embedder_name())
    questions = queries(all_questions, speakers, copies_needed(len(turns), size), 200)
    vectors = embed_queries(embedder, questions)
    records = corpus(turns, speakers, size + 1_000)
    known = {leaf.text for leaf in snapshot.leaves}
    fresh = [r for r in records if r["content"] not in known][:extra]
    fresh_vectors = embedder.embed_batch([r["content"] for r in fresh])
    started = time.perf_counter()
    rank(memory, RankRequest(query=vectors[0], k=RECALL_K, query_text=questions[0]))
    first_recall_s = time.perf_counter() - started
    recall_s = []
    for question, vector in zip(questions, vectors, strict=True):
        started = time.perf_counter()
        rank(memory, RankRequest(query=vector, k=RECALL_K, query_text=question))
        recall_s.append(time.perf_counter() - started)
    matrix_s: list[float] = []
    if "aggregate" in Memory.__init__.__code__.co_varnames:
        # The same recall with branch scores from the branch-vector matrix instead of averaging
        # (nodes read again: the inserts below change the first memory's in place).
        again = table.read()
        matrix = Memory(384, aggregate=False)
        matrix.load(again.leaves, again.branches)
        for question, vector in zip(questions, vectors, strict=True):
            started = time.perf_counter()
            rank(matrix, RankRequest(query=vector, k=RECALL_K, query_text=question))
            matrix_s.append(time.perf_counter() - started)
        del matrix, again
    insert_s = []
    for i, (record, vector) in enumerate(zip(fresh, fresh_vectors, strict=True)):
        leaf = Leaf(
            id=new_leaf_id(),
            text=record["content"],
            vector=vector,
            seq=memory.next_seq + i,
            timestamp=parse_timestamp(record["timestamp"], UTC_CALENDAR),
            role=record["role"],
            session=record["session"],
            content_hash=content_hash(record["content"]),
        )
        started = time.perf_counter()
        memory.add_leaf(leaf)
        insert_s.append(time.perf_counter() - started)
    out: dict[str, Any] = {
        "code": memory_module.__file__,
        "store": home,
        "leaves": size,
        "table_read_s": round(read_s, 2),
        "memory_load_s": round(load_s, 2),
        "first_recall_after_load_ms": round(first_recall_s * 1000, 1),
        "memory_recall": summary_ms(recall_s),
        "add_leaf": summary_ms(insert_s[1:]),
        "first_add_leaf_after_load_ms": round(insert_s[0] * 1000, 1),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    if matrix_s:
        out["memory_recall_branch_matrix"] = summary_ms(matrix_s)
    return out


def s3_moto(remembers: int = 100, recalls: int = 50) -> dict[str, Any]:
    """remember and recall through the service on an s3:// home served by moto on loopback.

    Counts the HTTP requests each call makes (from the server's access log). Moto is a Python
    server on this machine: the latencies say nothing about a real bucket, the request counts do.
    """
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=True)
    server.start()
    requests: list[str] = []

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if "HTTP/1.1" in message:
                verb = message.split('"')[1].split()[0]
                requests.append("LIST" if "list-type" in message else verb)

    access = logging.getLogger("werkzeug")
    access.handlers, access.propagate = [Count()], False
    access.setLevel(logging.INFO)
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        os.environ.update(
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_REGION="us-east-1",
            AWS_ENDPOINT_URL=endpoint,
        )
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="memtree")
        with tempfile.TemporaryDirectory() as locks:
            settings = Settings(home="s3://memtree/bench", namespace=NAMESPACE, lock_dir=locks)
            embedder = make_embedder(embedder_name())
            embedder.embed_batch(["warm up"])
            service = MemoryService(settings, embedder=embedder)
            topics = ["design review", "budget", "hiring plan", "infrastructure"]
            texts = [
                f"Note {i}: the {topics[i % 4]} meeting moved to room {i % 7}." for i in range(remembers + 1)
            ]
            service.remember(texts[0])
            remember_s, remember_requests, recall_s, recall_requests = [], [], [], []
            for text in texts[1:]:
                before, started = len(requests), time.perf_counter()
                service.remember(text)
                remember_s.append(time.perf_counter() - started)
                remember_requests.append(requests[before:])
            for text in texts[:recalls]:
                before, started = len(requests), time.perf_counter()
                service.look_up(RecallRequest(text, k=5))
                recall_s.append(time.perf_counter() - started)
                recall_requests.append(requests[before:])
            service.close()
            reopened = MemoryService(settings, embedder=embedder)
            started = time.perf_counter()
            reopened.look_up(RecallRequest("budget", k=3))
            reopen_s = time.perf_counter() - started
    finally:
        server.stop()

    def typical(calls: list[list[str]]) -> dict[str, int]:
        counts = sorted(calls, key=len)[len(calls) // 2]
        return {kind: counts.count(kind) for kind in sorted(set(counts))}

    return {
        "server": f"moto {package_version('moto')} ThreadedMotoServer on 127.0.0.1",
        "memories": remembers + 1,
        "remember": summary_ms(remember_s),
        "requests_per_remember_median": typical(remember_requests),
        "requests_per_remember_max": max(len(r) for r in remember_requests),
        "recall": summary_ms(recall_s),
        "requests_per_recall_median": typical(recall_requests),
        "reopen_first_recall_ms": round(reopen_s * 1000, 1),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


# -- report -----------------------------------------------------------------------------------------


def growth(entries: dict[str, Any], path: Sequence[str]) -> dict[str, float | None]:
    """How a figure grows from one size to the next: the exponent b of figure ∝ size^b."""
    sizes = sorted(entries, key=int)
    out: dict[str, float | None] = {}
    for low, high in itertools.pairwise(sizes):
        values = []
        for size in (low, high):
            node: Any = entries[size]
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            values.append(node)
        a, b = values
        if isinstance(a, int | float) and isinstance(b, int | float) and a > 0 and b > 0:
            out[f"{low}->{high}"] = round(float(np.log(b / a) / np.log(int(high) / int(low))), 2)
        else:
            out[f"{low}->{high}"] = None
    return out


GROWTH_FIGURES = {
    "remember_p50_ms": ("remember", "total", "p50"),
    "remember_without_embedding_p50_ms": ("remember", "without_embedding", "p50"),
    "tree_insertion_p50_ms": ("remember", "tree insertion (Memory.add_leaf)", "p50"),
    "commit_p50_ms": ("remember", "LanceDB commit (NamespaceTable.commit)", "p50"),
    "recall_service_p50_ms": ("recall", "service_recall", "p50"),
    "recall_memory_only_p50_ms": ("recall", "memory_recall_only", "p50"),
    "numpy_bruteforce_p50_ms": ("recall", "numpy_bruteforce_top10", "p50"),
    "store_bytes": ("store_bytes",),
    "rss_mib_store_loaded": ("reopen", "rss_mib_store_loaded"),
    "first_recall_after_reopen_ms": ("reopen", "first_recall_ms"),
    "semantic_height": ("tree", "semantic_height"),
    "semantic_mean_leaf_depth": ("tree", "semantic_mean_leaf_depth"),
}


def table_lines(entries: dict[str, Any]) -> list[str]:
    """The results as a Markdown table, one column per size."""
    sizes = sorted(entries, key=int)

    def get(entry: dict[str, Any], *path: str) -> Any:
        node: Any = entry
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    def ms(entry: dict[str, Any], *path: str) -> str:
        p50, p95 = get(entry, *path, "p50"), get(entry, *path, "p95")
        return "n/a" if p50 is None else f"{p50:.1f} / {p95:.1f}"

    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("`remember` p50 / p95 (ms)", lambda e: ms(e, "remember", "total")),
        ("… of which embedding", lambda e: ms(e, "remember", "embedding")),
        (
            "… tree insertion (`Memory.add_leaf`)",
            lambda e: ms(e, "remember", "tree insertion (Memory.add_leaf)"),
        ),
        ("… LanceDB commit", lambda e: ms(e, "remember", "LanceDB commit (NamespaceTable.commit)")),
        ("`recall` p50 / p95, service, embedding included", lambda e: ms(e, "recall", "service_recall")),
        ("… query embedding alone", lambda e: ms(e, "recall", "embedding_only")),
        (
            "`recall` p50 / p95, in memory, embedding excluded",
            lambda e: ms(e, "recall", "memory_recall_only"),
        ),
        ("numpy brute-force top 10 over the leaves", lambda e: ms(e, "recall", "numpy_bruteforce_top10")),
        ("LanceDB flat search top 10 (no index)", lambda e: ms(e, "lance_flat_search")),
        (
            "LanceDB IVF_PQ top 10 (recall@10 vs exact)",
            lambda e: (
                f"{ms(e, 'ann', 'lance_ivf_pq_top10')} ({get(e, 'ann', 'lance_ivf_pq_recall_at_10_pct')} %)"
                if "ann" in e
                else "n/a"
            ),
        ),
        ("bulk import (memories/s)", lambda e: f"{get(e, 'import', 'memories_per_s'):.0f}"),
        ("store on disk (MiB)", lambda e: f"{get(e, 'store_mib'):.1f}"),
        ("table rows (live nodes + revisions)", lambda e: f"{get(e, 'table_rows'):,}"),
        ("RSS after load, fresh process (MiB)", lambda e: f"{get(e, 'reopen', 'rss_mib_store_loaded')}"),
        ("… of which model and interpreter (MiB)", lambda e: f"{get(e, 'reopen', 'rss_mib_model_loaded')}"),
        ("reopen: first `recall` (ms)", lambda e: f"{get(e, 'reopen', 'first_recall_ms'):,.0f}"),
        (
            "… table read / in-memory load (ms)",
            lambda e: f"{get(e, 'reopen', 'table_read_ms'):,.0f} / {get(e, 'reopen', 'memory_load_ms'):,.0f}",
        ),
        (
            "semantic tree height / mean leaf depth",
            lambda e: f"{get(e, 'tree', 'semantic_height')} / {get(e, 'tree', 'semantic_mean_leaf_depth')}",
        ),
        ("semantic root fan-out", lambda e: f"{get(e, 'tree', 'semantic_root_fan_out')}"),
        ("temporal tree height", lambda e: f"{get(e, 'tree', 'temporal_height')}"),
        (
            "load average at start → end (1 min)",
            lambda e: f"{e['loadavg_at_start'][0]} → {e['loadavg_at_end'][0]}",
        ),
    ]
    lines = ["| measure | " + " | ".join(f"{int(s):,}" for s in sizes) + " |"]
    lines.append("|---|" + "---|" * len(sizes))
    for label, render in rows:
        cells = []
        for size in sizes:
            try:
                cells.append(render(entries[size]))
            except (KeyError, TypeError, ValueError):
                cells.append("n/a")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def plot(entries: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(entries, key=int)
    xs = [int(s) for s in sizes]

    def series(*keys: str) -> list[float]:
        values = []
        for size in sizes:
            node: Any = entries[size]
            for key in keys:
                node = node.get(key) if isinstance(node, dict) else None
            values.append(float(node) if isinstance(node, int | float) else float("nan"))
        return values

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for label, keys, style in (
        ("remember p50", ("remember", "total", "p50"), "o-"),
        ("remember p95", ("remember", "total", "p95"), "o--"),
        ("recall p50 (service, embedding incl.)", ("recall", "service_recall", "p50"), "s-"),
        ("recall p95 (service, embedding incl.)", ("recall", "service_recall", "p95"), "s--"),
        ("recall p50 (in memory, embedding excl.)", ("recall", "memory_recall_only", "p50"), "^-"),
        ("tree insertion p50", ("remember", "tree insertion (Memory.add_leaf)", "p50"), "v-"),
        ("LanceDB commit p50", ("remember", "LanceDB commit (NamespaceTable.commit)", "p50"), "d-"),
    ):
        left.plot(xs, series(*keys), style, label=label)
    left.scatter(
        [10_000, 100_000], [15, 40], marker="*", s=120, color="black", zorder=5, label="recall targets"
    )
    left.scatter([10_000], [30], marker="P", s=90, color="grey", zorder=5, label="remember target")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("memories in the store")
    left.set_ylabel("ms")
    left.set_title("latency against size")
    left.legend(fontsize=7)
    left.grid(True, which="both", alpha=0.3)
    right.plot(xs, series("reopen", "first_recall_ms"), "o-", label="reopen: first recall (ms)")
    right.plot(xs, series("reopen", "rss_mib_store_loaded"), "s-", label="RSS after load (MiB)")
    right.plot(xs, series("store_mib"), "^-", label="store on disk (MiB)")
    right.plot(xs, series("import", "memories_per_s"), "d-", label="bulk import (memories/s)")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("memories in the store")
    right.set_title("load, size, throughput")
    right.legend(fontsize=7)
    right.grid(True, which="both", alpha=0.3)
    fig.suptitle("memtree-mcp at scale (2-core shared machine; see loadavg in scale.json)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--reopen"]:
        print(json.dumps(reopen_probe(*argv[1:4])))
        return 0
    if argv[:1] == ["--core"]:
        # python bench/scale.py --core STORE_DIR [OUT.json]: the core alone on a kept store.
        found = core_probe(argv[1], DEFAULT_DATA)
        found["command"] = shlex.join([sys.executable, *sys.argv])
        if len(argv) > 2:
            Path(argv[2]).write_text(json.dumps(found, indent=2) + "\n")
        print(json.dumps(found, indent=2))
        return 0
    if argv[:1] == ["--save-vectors"]:
        # python bench/scale.py --save-vectors STORE_DIR OUT.npz: the vectors --vectors replays.
        return save_vectors(argv[1], argv[2])
    if argv[:1] == ["--s3-moto"]:
        # python bench/scale.py --s3-moto [OUT.json]: the service on an s3:// home served by moto.
        found = s3_moto()
        found["command"] = shlex.join([sys.executable, *sys.argv])
        if len(argv) > 1:
            Path(argv[1]).write_text(json.dumps(found, indent=2) + "\n")
        print(json.dumps(found, indent=2))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated store sizes")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON to recycle")
    parser.add_argument("--embedder", help="MEMTREE_EMBEDDER to measure: local (default) or e5-small")
    parser.add_argument("--remember-calls", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--profile-calls", type=int, default=20, help="calls to profile per size (0: none)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale.json"))
    parser.add_argument("--plot", type=Path, default=Path("bench/results/scale.png"))
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where stores are built (default: a temp dir)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the stores (in --workdir)")
    parser.add_argument(
        "--vectors", type=Path, default=None, help="replay these saved vectors instead of embedding (npz)"
    )
    parser.add_argument("--fresh", action="store_true", help="replace --out instead of merging into it")
    parser.add_argument(
        "--ann", action="store_true", help="also time LanceDB's IVF_PQ index against numpy at each size"
    )
    parser.add_argument(
        "--numpy-curve",
        default="",
        help="also time numpy brute force alone on random vectors of these sizes (e.g. 100000,300000)",
    )
    args = parser.parse_args(argv)
    if args.embedder:
        os.environ["MEMTREE_EMBEDDER"] = args.embedder
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not sizes or min(sizes) < 10:
        parser.error("--sizes needs sizes of at least 10")

    turns, speakers, all_questions = load_locomo(args.data)
    biggest = max(sizes) + args.remember_calls + args.profile_calls
    records = corpus(turns, speakers, biggest)
    previous: dict[str, Any] = {}
    if args.out.exists() and not args.fresh:
        previous = json.loads(args.out.read_text())
    entries: dict[str, Any] = dict(previous.get("sizes", {}))
    curve: dict[str, Any] = {}
    if args.numpy_curve:
        curve = numpy_curve([int(x.replace("_", "")) for x in args.numpy_curve.split(",") if x.strip()])
        curve["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    scratch = args.workdir or Path(tempfile.mkdtemp(prefix="memtree-scale-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        for size in sizes:
            home = scratch / f"store-{size}"
            if home.exists():
                shutil.rmtree(home)
            questions = queries(all_questions, speakers, copies_needed(len(turns), size), args.queries)
            load_start = [round(x, 2) for x in os.getloadavg()]
            started = datetime.now(UTC)
            print(f"size {size:,}: load average {load_start}", file=sys.stderr, flush=True)
            entry = bench_size(
                size,
                records,
                questions,
                home,
                args.remember_calls,
                args.profile_calls,
                ann=args.ann,
                vectors=args.vectors,
            )
            if args.vectors is not None:
                entry["vectors_replayed_from"] = str(args.vectors)
            entry["loadavg_at_start"] = load_start
            entry["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
            entry["started_utc"] = started.isoformat(timespec="seconds")
            entry["wall_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
            entry["command"] = shlex.join([sys.executable, *sys.argv])
            entry["source"] = source_state()
            entries[str(size)] = entry
            if not args.keep:
                shutil.rmtree(home, ignore_errors=True)
            report = {
                "benchmark": "memtree-mcp at scale",
                "note": "The machine (2 cores) is shared with other work; each size records its load "
                "averages (1, 5, 15 min) at start and end. Sizes may come from separate runs: each "
                "entry has its own time, command and source state.",
                "machine": machine_info(),
                "packages": {
                    name: package_version(name)
                    for name in ("memtree-mcp", "lancedb", "pylance", "onnxruntime", "numpy", "pyarrow")
                },
                "corpus": "LoCoMo dev turns recycled with per-copy renaming (bench/scale.py, corpus())",
                "targets_ms": TARGETS_MS,
                "growth_exponents": {name: growth(entries, path) for name, path in GROWTH_FIGURES.items()},
                "sizes": dict(sorted(entries.items(), key=lambda kv: int(kv[0]))),
            }
            if curve:
                report["numpy_bruteforce_random_vectors"] = curve
            elif "numpy_bruteforce_random_vectors" in previous:
                report["numpy_bruteforce_random_vectors"] = previous["numpy_bruteforce_random_vectors"]
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=2) + "\n")
            plot(entries, args.plot)
            print("\n".join(table_lines(report["sizes"])), flush=True)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nwritten {args.out} and {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

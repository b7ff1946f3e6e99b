"""A memory that grows: recall through LanceDB's index against ranking every memory, at 10k, 100k (and
up to 1M) memories, through the service and through MCP stdio as a client sees it.

For each size N (``--sizes``):

1. A store of N memories of ``bench/scale.py``'s corpus (LoCoMo dev turns recycled with other names
   and words) is built through ``import_memories`` (the path of ``memtree-mcp import``) with
   replayed vectors: the first ``--base`` records are embedded once by the real model (kept in
   ``--scratch``), record i gets the vector of record i mod base plus Gaussian noise, as
   ``scale.py --vectors`` does; queries are embedded by the real model. Import rate and disk.
2. The namespace's index is built (what the server's background thread does,
   ``service/indexing.py``): time, and the index's size on disk.
3. The index itself: for ``--queries`` LoCoMo questions, the share of the exact 10 nearest
   memories (a product with every vector) among the index's 10 nearest (ANN recall@10), and among
   its shortlist of ``indexing.SHORTLIST``.
4. What recall answers: the same questions through ``look_up`` (k = 10, the default strategy and
   cut-off) on the index and exactly (MEMTREE_INDEX_FROM above N): the share of the exact hits
   found, the share of identical answers, and the time of each in the process.
5. Through MCP stdio, a fresh ``memtree-mcp serve`` per mode (``index`` and ``exact``): the first
   recall after the spawn (from the spawn), RSS after it, ``--recalls`` recalls (p50/p95), RSS
   after them, and ``--remembers`` remembers (p50).

6. Three ``memtree-mcp serve`` on the one home at once, each after its first recall (exact path):
   each one's resident, private and proportional (PSS) memory, and their sums.

Every process's memory is read as resident (RSS), its own (private) and its share of pages it
maps with others (PSS): a namespace opened from its snapshot keeps the vectors in the file's
pages, which the processes that open it share (``host/mapping.py``).

Results go to ``--out`` keyed by size, each with the load average before and after. The machine is
shared: run it with nothing else running, and read the load averages.

    python bench/million.py --sizes 10000,100000 --out bench/results/million.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale
from latency import console_script, machine_info, source_state, summary_ms

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import embed_queries
from memtree_mcp.providers import make_embedder
from memtree_mcp.service import MemoryService, indexing
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.leaf_table import INDEX_DIR, LeafTable

NAMESPACE = scale.NAMESPACE
NEVER = 10**9  # MEMTREE_INDEX_FROM of the exact runs


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def base_vectors(records: Sequence[dict[str, Any]], base: int, scratch: Path) -> Path:
    """The npz of the first ``base`` records' texts and real vectors (embedded once, then kept)."""
    saved = scratch / f"vectors-{base}.npz"
    if not saved.exists():
        model = make_embedder("local")
        texts = [r["content"] for r in records[:base]]
        started = time.perf_counter()
        vectors = np.concatenate([model.embed_batch(texts[i : i + 256]) for i in range(0, len(texts), 256)])
        print(f"embedded {base:,} records in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        np.savez(saved, texts=np.array(texts), vectors=vectors)
    return saved


def build(size: int, records: list[dict[str, Any]], vectors: Path, home: Path) -> dict[str, Any]:
    embedder = scale.ReplayEmbedder(vectors, records[:size])
    service = MemoryService(
        Settings(home=str(home), namespace=NAMESPACE, index_from=NEVER), embedder=embedder
    )
    before = load()
    started = time.perf_counter()
    added, _ = service.upkeep.import_memories(records[:size], namespace=NAMESPACE)
    seconds = time.perf_counter() - started
    service.close()
    return {
        "memories": added,
        "seconds": round(seconds, 1),
        "memories_per_s": round(added / seconds, 1),
        "note": "replayed vectors: trees and store only, no embedding",
        "load": [before, load()],
    }


def top(scores: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-scores, k)[:k]
    return part[np.argsort(-scores[part])]


def index_quality(service: MemoryService, queries: np.ndarray, home: Path) -> dict[str, Any]:
    memory = service.memory(NAMESPACE)
    assert memory is not None
    ids = list(memory.leaves)
    matrix = np.stack([memory.leaves[i].vector for i in ids]).astype(np.float32)
    table = LeafTable(str(home), NAMESPACE, matrix.shape[1])
    at10, in_list, times = [], [], []
    for query in queries:
        exact = {ids[i] for i in top(matrix @ query, 10)}
        started = time.perf_counter()
        found = table.search([query], 10)
        times.append(time.perf_counter() - started)
        at10.append(len(exact & set(found)) / 10)
        in_list.append(len(exact & set(table.search([query], indexing.SHORTLIST))) / 10)
    return {
        "ann_recall_at_10": round(float(np.mean(at10)), 4),
        "exact_top10_in_shortlist": round(float(np.mean(in_list)), 4),
        "shortlist": indexing.SHORTLIST,
        "search_k10_ms": summary_ms(times),
    }


def answers(home: Path, questions: Sequence[str], embedder: Any) -> dict[str, Any]:
    """look_up on the index and exactly, in one process each, the same questions in turn."""
    indexed = MemoryService(Settings(home=str(home), namespace=NAMESPACE, index_from=1), embedder=embedder)
    exact = MemoryService(Settings(home=str(home), namespace=NAMESPACE, index_from=NEVER), embedder=embedder)
    try:
        indexed.indexes.sync(NAMESPACE)
        found, same, t_index, t_exact = [], 0, [], []
        for question in questions:
            request = RecallRequest(question, k=10)
            started = time.perf_counter()
            a = [h.id for h in indexed.look_up(request).hits]
            t_index.append(time.perf_counter() - started)
            started = time.perf_counter()
            b = [h.id for h in exact.look_up(request).hits]
            t_exact.append(time.perf_counter() - started)
            found.append(len(set(a) & set(b)) / max(1, len(b)))
            same += a == b
        return {
            "exact_hits_found": round(statistics.fmean(found), 4),
            "identical_answers": round(same / len(questions), 4),
            "look_up_ms": {"index": summary_ms(t_index[5:]), "exact": summary_ms(t_exact[5:])},
        }
    finally:
        indexed.close()
        exact.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def memory_mib(pid: int) -> dict[str, float]:
    """A process's memory (MiB): resident (``rss``), its own (``anon``: allocated by it, which no
    other process can share), the resident pages of files it maps (``files``: the page cache's,
    shared with every process that maps the same file: libraries, the model, a namespace's
    snapshot) and its proportional share of all of it (``pss``: each page divided among the
    processes that map it; what the machine pays for this process)."""
    found: dict[str, float] = {}
    names = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "files"}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in names:
            found[names[name]] = int(value.split()[0]) / 1024
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            found["pss"] = int(line.split()[1]) / 1024
    return {name: round(value, 1) for name, value in found.items()}


def server_pid(before: set[int]) -> int:
    """The ``memtree-mcp serve`` child spawned since ``before`` (a set of this process's children)."""
    for pid in children() - before:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"serve" in handle.read():
                return pid
    raise RuntimeError("the server process was not found")


def children() -> set[int]:
    me, found = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.add(int(entry.name))
    return found


async def through_stdio(
    home: Path, mode: str, questions: Sequence[str], recalls: int, remembers: int, size: int
) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        "MEMTREE_HOME": str(home),
        "MEMTREE_NAMESPACE": NAMESPACE,
        "MEMTREE_INDEX_FROM": str(1 if mode == "index" else NEVER),
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/root"),
    }
    params = StdioServerParameters(command=str(console_script()), args=["serve"], env=env)
    row: dict[str, Any] = {"mode": mode, "load": [load()]}
    before = children()
    with open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as client:
            pid = server_pid(before)
            result = await client.call_tool("recall", {"query": questions[0], "k": 10})
            assert not result.is_error, result.content
            row["first_recall_from_spawn_ms"] = round((time.perf_counter() - started) * 1000, 1)
            row["rss_after_first_recall_mib"] = rss_mib(pid)
            row["memory_after_first_recall_mib"] = memory_mib(pid)
            await anyio.sleep(3 + size / 20_000)  # the index's first sync (background), then the timing
            times = []
            for i in range(recalls):
                t0 = time.perf_counter()
                result = await client.call_tool("recall", {"query": questions[i % len(questions)], "k": 10})
                times.append(time.perf_counter() - t0)
                assert not result.is_error, result.content
            row["recall_ms"] = summary_ms(times)
            row["rss_after_recalls_mib"] = rss_mib(pid)
            row["memory_after_recalls_mib"] = memory_mib(pid)
            times = []
            for i in range(remembers):
                t0 = time.perf_counter()
                content = f"Benchmark note {i} at {time.time():.6f}: the {mode} run keeps going."
                result = await client.call_tool("remember", {"content": content})
                times.append(time.perf_counter() - t0)
                assert not result.is_error, result.content
            row["remember_ms"] = summary_ms(times)
    row["load"].append(load())
    return row


async def three_servers(home: Path, questions: Sequence[str]) -> dict[str, Any]:
    """Three ``memtree-mcp serve`` on one home at once (a desktop app, an IDE and another client),
    each after its first recall, exact path: each one's memory, and their sum."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        "MEMTREE_HOME": str(home),
        "MEMTREE_NAMESPACE": NAMESPACE,
        "MEMTREE_INDEX_FROM": str(NEVER),
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/root"),
    }
    params = StdioServerParameters(command=str(console_script()), args=["serve"], env=env)
    row: dict[str, Any] = {"load": [load()], "servers": []}
    with open(os.devnull, "w") as errlog:
        async with (
            Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as first,
            Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as second,
            Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as third,
        ):
            for at, client in enumerate((first, second, third)):
                result = await client.call_tool("recall", {"query": questions[at], "k": 10})
                assert not result.is_error, result.content
            await anyio.sleep(2)
            pids = sorted(pid for pid in children() if b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes())
            row["servers"] = [memory_mib(pid) for pid in pids]
    row["sum_mib"] = {
        name: round(sum(server[name] for server in row["servers"]), 1) for name in row["servers"][0]
    }
    row["load"].append(load())
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--data", type=Path, default=scale.DEFAULT_DATA)
    parser.add_argument("--base", type=int, default=5_000, help="records embedded by the real model")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--recalls", type=int, default=1_000)
    parser.add_argument("--remembers", type=int, default=50)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/memtree-bench/million"))
    parser.add_argument("--keep", action="store_true", help="keep the stores in --scratch")
    parser.add_argument("--out", type=Path, default=Path("bench/results/million.json"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    args.scratch.mkdir(parents=True, exist_ok=True)
    turns, speakers, questions = scale.load_locomo(args.data)
    records = scale.corpus(turns, speakers, max(sizes))
    asked = scale.queries(questions, speakers, scale.copies_needed(len(turns), max(sizes)), args.queries)
    vectors = base_vectors(records, args.base, args.scratch)
    model = make_embedder("local")
    query_vectors = embed_queries(model, asked)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.setdefault("sizes", {})
    for size in sizes:
        home = args.scratch / f"home-{size}"
        print(f"== {size:,} memories", file=sys.stderr, flush=True)
        entry: dict[str, Any] = {
            "size": size,
            "command": shlex.join([sys.executable, *sys.argv]),
            "machine": machine_info(),
            "source": source_state(),
        }
        if not (home / f"{NAMESPACE}.lance").exists():
            shutil.rmtree(home, ignore_errors=True)
            entry["import"] = build(size, records, vectors, home)
        elif "import" in results["sizes"].get(str(size), {}):
            # A store kept (--keep) from the last run: its import figures are that run's.
            previous = results["sizes"][str(size)]
            entry["import"] = {**previous["import"], "measured_by": previous["source"]}
        service = MemoryService(Settings(home=str(home), namespace=NAMESPACE, index_from=1), embedder=model)
        try:
            started = time.perf_counter()
            service.indexes.sync(NAMESPACE)
            entry["index_build_s"] = round(time.perf_counter() - started, 1)
            entry["index"] = index_quality(service, query_vectors, home)
        finally:
            service.close()
        entry["disk_bytes"] = {"store": disk(home) - disk(home / INDEX_DIR), "index": disk(home / INDEX_DIR)}
        entry["answers"] = answers(home, asked, model)
        entry["stdio"] = {
            mode: anyio.run(through_stdio, home, mode, asked, args.recalls, args.remembers, size)
            for mode in ("index", "exact")
        }
        entry["three_servers"] = anyio.run(three_servers, home, asked)
        results["sizes"][str(size)] = entry
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        print(json.dumps(entry, indent=1)[:3000], file=sys.stderr, flush=True)
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

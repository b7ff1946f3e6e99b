"""Latency of memtree-mcp: remember/recall through MemoryService, and MCP cold start over stdio.

What it measures
1. ``remember`` / ``recall`` through the public service API on a fresh store in a temporary
   directory (``Settings(home=...)``), one namespace. The first ``--turns`` LoCoMo turns are
   inserted in order, walking the conversations one after the other; each turn is one
   ``remember`` call (text ``<speaker> said, "<text>"``, the session date as an ISO 8601
   timestamp). Every call is timed, embedding included; the first call also loads the model,
   creates the table and is reported apart. Then 200 questions from the inserted conversations
   are recalled (k=10) and timed three ways: the whole ``service.look_up``, the query embedding
   alone (``service.embedder.embed_batch([q])``) and the in-memory ``rank(memory, request)``
   alone; ``service.memory(namespace)`` (the check for commits by other processes) is timed too.
   Remember timings are also grouped by quarter of the insertion and by place in the store's
   compaction cycle, and ``--profile-calls`` further calls (the next turns) run under cProfile to
   split a call into embedding, tree insertion, LanceDB commit, version check and file lock.
2. Cold start: the wall time from spawning ``memtree-mcp serve`` (stdio, a fresh empty
   MEMTREE_HOME) to receiving the answer of ``tools/list`` (median of ``--coldstart-runs``), next
   to a bare one-tool MCPServer script launched by the same Python; then the first ``recall``
   tool call after the handshake, on an empty store (the namespace does not exist: it imports
   lancedb, opens the directory and answers "no hits" without loading the model) and on the store
   built in part 1 (it imports lancedb, reads the table, builds the trees and loads the model).
   Runs are interleaved (bare, memtree empty, memtree built) so that machine drift hits all three.
3. A compact table on stdout and a JSON report (machine, load average, package versions, git
   HEAD and uncommitted files of memtree_mcp, the exact command, every remember call's timing).

Run from the project root:
    python bench/latency.py ../shared/bench/locomo/locomo-dev.json \
        [--turns 1000] [--out bench/results/latency.json] [--coldstart-runs 7] [--profile-calls 20]
Takes about 2 to 3 minutes on 2 CPUs. Timings are wall-clock: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TextIO

# As `memtree-mcp serve` does (memtree_mcp/cli/app.py), before numpy loads: one BLAS thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import anyio
import numpy as np

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder, Matrix, embed_queries
from memtree_mcp.core.ranking.recall import RankRequest, rank
from memtree_mcp.providers import make_embedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.table import COMPACT_EVERY

NAMESPACE = "bench"
# A user's first question arrives seconds after the client has listed the tools.
USER_PAUSE_S = 3.0
RECALL_QUESTIONS = 200
RECALL_K = 10
CALL_TIMEOUT_S = 120.0  # per MCP session (spawn, handshake, calls); nothing here should come close
BARE_SERVER = """\
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bare")


@mcp.tool()
def ping() -> str:
    return "pong"


mcp.run()
"""


# -- data -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    conversation: str
    dia_id: str
    speaker: str
    text: str
    timestamp: str
    session: str


def parse_session_date(value: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00' (ISO 8601, no zone: read as UTC)."""
    moment = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    return moment.isoformat(timespec="seconds")


def load_turns(data: list[dict[str, Any]]) -> Iterator[Turn]:
    """Every turn of every conversation, in order: conversations, then sessions by number."""
    for sample in data:
        conv = sample["conversation"]
        numbers = sorted(int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
        for n in numbers:
            when = parse_session_date(conv[f"session_{n}_date_time"])
            for turn in conv[f"session_{n}"]:
                text = f'{turn["speaker"]} said, "{turn["text"]}"'
                if turn.get("blip_caption"):
                    text += f" and shared {turn['blip_caption']}"
                yield Turn(
                    conversation=sample["sample_id"],
                    dia_id=turn["dia_id"],
                    speaker=turn["speaker"],
                    text=text,
                    timestamp=when,
                    session=f"{sample['sample_id']}:session_{n}",
                )


def pick_questions(data: list[dict[str, Any]], conversations: set[str], count: int) -> list[str]:
    """The first ``count`` questions of the conversations that were (at least partly) inserted."""
    questions = [
        qa["question"] for sample in data if sample["sample_id"] in conversations for qa in sample["qa"]
    ]
    return questions[:count]


# -- timing helpers ---------------------------------------------------------------------------------


class TimedEmbedder:
    """Wraps an embedder and records how long each ``embed_batch`` call takes."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.durations: list[float] = []

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        started = time.perf_counter()
        out = self.inner.embed_batch(texts)
        self.durations.append(time.perf_counter() - started)
        return out

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        started = time.perf_counter()
        out = embed_queries(self.inner, texts)
        self.durations.append(time.perf_counter() - started)
        return out


def summary_ms(seconds: Sequence[float]) -> dict[str, float | int]:
    """n, mean, p50, p95, p99, max in milliseconds."""
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "n": int(ms.size),
        "mean": round(float(ms.mean()), 3),
        "p50": round(float(np.percentile(ms, 50)), 3),
        "p95": round(float(np.percentile(ms, 95)), 3),
        "p99": round(float(np.percentile(ms, 99)), 3),
        "max": round(float(ms.max()), 3),
    }


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "cpu_count": os.cpu_count(),
    }
    if hasattr(os, "getloadavg"):
        info["loadavg_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    if hasattr(os, "sched_getaffinity"):
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["mem_total_gib"] = round(int(line.split()[1]) / 1024**2, 1)
                break
    return info


def source_state() -> dict[str, Any]:
    """The memtree_mcp code being measured: git HEAD, uncommitted files, newest source mtime."""
    import memtree_mcp

    package = Path(memtree_mcp.__file__).resolve().parent
    state: dict[str, Any] = {"package_dir": str(package)}
    newest = max((f.stat().st_mtime for f in package.rglob("*.py")), default=0.0)
    state["newest_source_mtime"] = datetime.fromtimestamp(newest, tz=UTC).isoformat(timespec="seconds")
    for key, git_args in (("git_head", ["rev-parse", "HEAD"]), ("git_status", ["status", "--porcelain"])):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(
                ["git", *git_args], cwd=package.parent, capture_output=True, text=True, timeout=10, check=True
            )
            state[key] = done.stdout.rstrip("\n").splitlines() if key == "git_status" else done.stdout.strip()
    return state


# -- part 1: service API ----------------------------------------------------------------------------


# Where a remember call spends its time: (label, file suffix, function name) looked up in cProfile.
PROFILE_PARTS = (
    ("remember (total)", "memtree_mcp/service/memory_service.py", "remember"),
    ("embedding (embed_batch)", "memtree_mcp/providers/local.py", "embed_batch"),
    ("tree insertion (Memory.add_leaf)", "memtree_mcp/core/memory.py", "add_leaf"),
    ("row building (node_rows)", "memtree_mcp/store/rows.py", "node_rows"),
    ("LanceDB commit (append + maintenance)", "memtree_mcp/store/table.py", "commit"),
    ("  of which maintenance (_maintain)", "memtree_mcp/store/table.py", "_maintain"),
    ("version check (Spaces.follow)", "memtree_mcp/service/spaces.py", "follow"),
    ("file lock (FileLock.acquire)", "filelock/_api.py", "acquire"),
    ("path for the result (ancestors)", "memtree_mcp/core/trees/semantic.py", "ancestors"),
)


def profile_remember(service: MemoryService, turns: Sequence[Turn]) -> dict[str, Any]:
    """cProfile ``remember`` over ``turns`` (after the timed run); mean ms per call for each part."""
    profiler = cProfile.Profile()
    profiler.enable()
    for turn in turns:
        service.remember(turn.text, role=turn.speaker, timestamp=turn.timestamp, session=turn.session)
    profiler.disable()
    stats = pstats.Stats(profiler)
    table: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    parts: dict[str, float] = {}
    for label, suffix, function in PROFILE_PARTS:
        seconds = sum(
            row[3] for (file, _line, name), row in table.items() if file.endswith(suffix) and name == function
        )
        parts[label] = round(seconds * 1000 / max(1, len(turns)), 2)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    return {"calls": len(turns), "mean_ms_per_call": parts, "top_cumulative": out.getvalue()}


def bench_service(
    data: list[dict[str, Any]], turns_wanted: int, home: Path, profile_calls: int
) -> dict[str, Any]:
    """Insert the first ``turns_wanted`` turns, then recall questions; returns the timings."""
    turns: list[Turn] = []
    extra: list[Turn] = []  # the turns after the first N, for the profiled calls
    for turn in load_turns(data):
        if len(turns) < turns_wanted:
            turns.append(turn)
        elif len(extra) < profile_calls:
            extra.append(turn)
        else:
            break
    if len(turns) < turns_wanted:
        print(f"note: the data holds only {len(turns)} turns; inserting all of them", file=sys.stderr)

    embedder = TimedEmbedder(make_embedder("local"))
    service = MemoryService(Settings(home=str(home), namespace=NAMESPACE), embedder=embedder)
    try:
        total: list[float] = []
        embed_part: list[float] = []
        indices: list[int] = []
        deduplicated = 0
        commit_numbers: list[int] = []  # 1-based: which table commit each timed call made
        commits = 0
        first_call_s = 0.0
        first_embed_s = 0.0
        build_started = time.perf_counter()
        for i, turn in enumerate(turns):
            embeds_before = len(embedder.durations)
            started = time.perf_counter()
            result = service.remember(
                turn.text, role=turn.speaker, timestamp=turn.timestamp, session=turn.session
            )
            elapsed = time.perf_counter() - started
            embedded = sum(embedder.durations[embeds_before:])
            commits += 0 if result.deduplicated else 1
            if i == 0:
                first_call_s, first_embed_s = elapsed, embedded
                continue
            if result.deduplicated:
                deduplicated += 1
                continue
            total.append(elapsed)
            embed_part.append(embedded)
            indices.append(i)
            commit_numbers.append(commits)
        build_s = time.perf_counter() - build_started

        memory = service.memory(NAMESPACE)
        assert memory is not None
        stored_leaves = len(memory.leaves)
        branches = len(memory.semantic.branches)

        # Growth: p50 per quarter of the insertion, and the slowest calls with their position.
        quarters = []
        size = max(1, len(total) // 4)
        for q in range(4):
            chunk = total[q * size : (q + 1) * size] if q < 3 else total[3 * size :]
            if chunk:
                quarters.append(
                    {
                        "calls": f"{indices[q * size]}..{indices[q * size] + len(chunk) - 1}",
                        **summary_ms(chunk),
                    }
                )
        slowest = sorted(zip(total, indices, strict=True), reverse=True)[:8]
        # The store compacts every COMPACT_EVERY commits (on the commit itself); between two
        # compactions the table accumulates small fragments. Group calls by their place in that cycle.
        by_cycle = []
        step = max(1, COMPACT_EVERY // 4)
        for low in range(0, COMPACT_EVERY, step):
            chunk = [
                t
                for t, c in zip(total, commit_numbers, strict=True)
                if low <= (c - 1) % COMPACT_EVERY < low + step
            ]
            by_cycle.append({"commits_since_compaction": f"{low}..{low + step - 1}", **summary_ms(chunk)})
        on_compaction = [t for t, c in zip(total, commit_numbers, strict=True) if c % COMPACT_EVERY == 0]

        # -- recall
        conversations = {t.conversation for t in turns}
        questions = pick_questions(data, conversations, RECALL_QUESTIONS)
        service.look_up(RecallRequest("warm-up query", k=RECALL_K))  # not counted
        full: list[float] = []
        embed_only: list[float] = []
        core_only: list[float] = []
        follow: list[float] = []
        hit_counts: list[int] = []
        inner = embedder.inner
        for question in questions:
            started = time.perf_counter()
            found = service.look_up(RecallRequest(question, k=RECALL_K))
            full.append(time.perf_counter() - started)
            hit_counts.append(len(found.hits))

            started = time.perf_counter()
            vector = inner.embed_batch([question])[0]
            embed_only.append(time.perf_counter() - started)

            started = time.perf_counter()
            memory = service.memory(NAMESPACE)
            follow.append(time.perf_counter() - started)
            assert memory is not None

            started = time.perf_counter()
            rank(memory, RankRequest(query=vector, k=RECALL_K))
            core_only.append(time.perf_counter() - started)

        # Last, so that recall above ran on exactly the N inserted turns.
        profile = profile_remember(service, extra) if extra else None
    finally:
        service.close()

    return {
        "namespace": NAMESPACE,
        "turns_inserted": len(turns),
        "conversations": sorted(conversations),
        "stored_leaves": stored_leaves,
        "semantic_branches": branches,
        "deduplicated_calls": deduplicated,
        "build_wall_s": round(build_s, 3),
        "remember": {
            "first_call_ms": round(first_call_s * 1000, 1),
            "first_call_note": "first call, includes model and store load (and table + id index creation)",
            "first_call_embedding_ms": round(first_embed_s * 1000, 1),
            "timed_calls_note": "calls 2..N that stored a new leaf; deduplicated calls excluded",
            "total": summary_ms(total),
            "embedding": summary_ms(embed_part),
            "without_embedding": summary_ms([t - e for t, e in zip(total, embed_part, strict=True)]),
            "by_quarter": quarters,
            "slowest": [{"call": i, "ms": round(t * 1000, 1)} for t, i in slowest],
            "compact_every": COMPACT_EVERY,
            "by_position_in_compaction_cycle": by_cycle,
            "calls_that_compacted": summary_ms(on_compaction),
            "per_call": {
                "call": indices,
                "total_ms": [round(t * 1000, 2) for t in total],
                "embedding_ms": [round(e * 1000, 2) for e in embed_part],
            },
        },
        "recall": {
            "questions": len(questions),
            "k": RECALL_K,
            "mean_hits": round(statistics.fmean(hit_counts), 2) if hit_counts else 0,
            "service_recall": summary_ms(full),
            "embedding_only": summary_ms(embed_only),
            "memory_recall_only": summary_ms(core_only),
            "follow_table_check": summary_ms(follow),
            "notes": {
                "service_recall": "look_up(RecallRequest(q, k=10)): embedding + version check + tree search",
                "embedding_only": "service.embedder.embed_batch([q])",
                "memory_recall_only": "rank(memory, k=10), in memory, embedding excluded",
                "follow_table_check": "service.memory(namespace): looks for newer table versions",
            },
        },
        "remember_profile": profile,
        "remember_profile_note": "cProfile over the turns after the first N, run after the timed calls "
        "(the store then holds N leaves); cProfile overhead inflates the Python parts",
    }


# -- part 2: cold start over stdio --------------------------------------------------------------


def console_script() -> Path:
    """The ``memtree-mcp`` script next to this Python, else the one on PATH."""
    beside = Path(sys.executable).parent / "memtree-mcp"
    if beside.exists():
        return beside
    found = shutil.which("memtree-mcp")
    if found is None:
        raise SystemExit("memtree-mcp is not installed next to this Python nor on PATH")
    return Path(found)


def script_python(script: Path) -> str:
    """The interpreter named by a console script's shebang (falls back to this Python)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        first = script.read_text().splitlines()[0]
        if first.startswith("#!") and len(first.split()) == 1:
            return first[2:].strip()
    return sys.executable


async def one_session(
    command: str,
    args: list[str],
    env: dict[str, str],
    errlog: TextIO,
    recall_query: str | None,
    pause_s: float = 0.0,
) -> dict[str, Any]:
    """Spawn a server, time spawn -> tools/list answer, optionally two recall calls, and the exit.

    ``pause_s`` waits between tools/list and the first recall, as a user typing a first question
    would; the server loads its model and store in the background meanwhile.
    """
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, env=env)
    row: dict[str, Any] = {}
    with anyio.fail_after(CALL_TIMEOUT_S):
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            row["handshake_ms"] = round((time.perf_counter() - started) * 1000, 1)
            tools = await client.list_tools()
            row["tools_list_ms"] = round((time.perf_counter() - started) * 1000, 1)
            row["tools"] = sorted(t.name for t in tools.tools)
            row["protocol_version"] = client.session.protocol_version
            if recall_query is not None:
                await anyio.sleep(pause_s)
                for label in ("first_recall_ms", "second_recall_ms"):
                    t0 = time.perf_counter()
                    result = await client.call_tool("recall", {"query": recall_query, "k": RECALL_K})
                    elapsed_ms = round((time.perf_counter() - t0) * 1000, 1)
                    if result.is_error:
                        row["error"] = f"{label} after {elapsed_ms} ms: {result.content}"
                        break
                    row[label] = elapsed_ms
                    structured = result.structured_content or {}
                    row["recall_hits"] = len(structured.get("hits", []))
            closing = time.perf_counter()
        row["shutdown_ms"] = round((time.perf_counter() - closing) * 1000, 1)
    return row


async def bench_coldstart(runs: int, populated_home: Path, query: str, scratch: Path) -> dict[str, Any]:
    """Interleaved runs of the bare server, memtree on an empty home and memtree on the built store."""
    memtree = console_script()
    python = script_python(memtree)
    bare = scratch / "bare_server.py"
    bare.write_text(BARE_SERVER)
    log_path = scratch / "servers.stderr.log"
    rows: dict[str, list[dict[str, Any]]] = {
        "bare": [],
        "memtree_empty": [],
        "memtree_populated": [],
        "memtree_populated_paused": [],
    }
    with log_path.open("w") as errlog:
        for run in range(runs):
            rows["bare"].append(await one_session(python, [str(bare)], {}, errlog, None))
            empty = scratch / f"home-{run}"
            empty.mkdir()
            rows["memtree_empty"].append(
                await one_session(str(memtree), ["serve"], {"MEMTREE_HOME": str(empty)}, errlog, query)
            )
            populated_env = {"MEMTREE_HOME": str(populated_home), "MEMTREE_NAMESPACE": NAMESPACE}
            for kind, pause_s in (("memtree_populated", 0.0), ("memtree_populated_paused", USER_PAUSE_S)):
                rows[kind].append(
                    await one_session(str(memtree), ["serve"], populated_env, errlog, query, pause_s=pause_s)
                )
    stderr_tail = log_path.read_text()[-8000:]
    failures = [
        f"{kind} run {i}: {r['error']}" for kind in rows for i, r in enumerate(rows[kind]) if "error" in r
    ]
    failures += [
        f"memtree_populated run {i}: no hits, the server did not read the built store"
        for i, r in enumerate(rows["memtree_populated"])
        if "error" not in r and not r.get("recall_hits")
    ]
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    if failures and stderr_tail:
        print(f"servers' stderr (tail):\n{stderr_tail}", file=sys.stderr)

    def median(kind: str, key: str) -> float | None:
        values = [r[key] for r in rows[kind] if key in r]
        return round(statistics.median(values), 1) if values else None

    bare_med = median("bare", "tools_list_ms")
    memtree_med = median("memtree_empty", "tools_list_ms")
    return {
        "runs": runs,
        "memtree_command": f"{memtree} serve",
        "memtree_interpreter": python,
        "bare_command": f"{python} {bare.name}",
        "same_python": os.path.realpath(python) == os.path.realpath(sys.executable),
        "median_ms": {
            "bare_tools_list": bare_med,
            "memtree_tools_list": memtree_med,
            "ratio_memtree_over_bare": round(memtree_med / bare_med, 2) if bare_med and memtree_med else None,
            "memtree_populated_tools_list": median("memtree_populated", "tools_list_ms"),
            "first_recall_empty_store": median("memtree_empty", "first_recall_ms"),
            "second_recall_empty_store": median("memtree_empty", "second_recall_ms"),
            "first_recall_built_store": median("memtree_populated", "first_recall_ms"),
            "second_recall_built_store": median("memtree_populated", "second_recall_ms"),
            "first_recall_built_store_after_pause": median("memtree_populated_paused", "first_recall_ms"),
            "bare_shutdown": median("bare", "shutdown_ms"),
            "memtree_shutdown": median("memtree_empty", "shutdown_ms"),
        },
        "failures": failures,
        "recall_query": query,
        "per_run": rows,
        "servers_stderr_tail": stderr_tail or None,
    }


# -- report -----------------------------------------------------------------------------------------


def print_table(report: dict[str, Any]) -> None:
    svc = report["service"]
    rem = svc["remember"]
    rec = svc["recall"]
    cold = report["coldstart"]["median_ms"]

    def line(label: str, s: dict[str, Any]) -> str:
        return (
            f"  {label:<34} {s['p50']:>8.2f} {s['p95']:>8.2f} {s['p99']:>8.2f} {s['max']:>8.2f}   n={s['n']}"
        )

    print(
        f"\nservice API: {svc['turns_inserted']} turns -> {svc['stored_leaves']} leaves, "
        f"{svc['semantic_branches']} branches, {len(svc['conversations'])} conversation(s), "
        f"built in {svc['build_wall_s']:.1f} s"
    )
    print(f"  {'(ms)':<34} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}")
    print(
        f"  remember first call (model + store load): {rem['first_call_ms']:.1f} ms "
        f"(embedding {rem['first_call_embedding_ms']:.1f} ms)"
    )
    print(line("remember", rem["total"]))
    print(line("  of which embedding", rem["embedding"]))
    print(line("  without embedding", rem["without_embedding"]))
    for q in rem["by_quarter"]:
        print(line(f"  remember calls {q['calls']}", q))
    for c in rem["by_position_in_compaction_cycle"]:
        if c["n"]:
            print(line(f"  {c['commits_since_compaction']} commits since compaction", c))
    if rem["calls_that_compacted"]["n"]:
        print(
            line(f"  calls that ran optimize() (every {rem['compact_every']})", rem["calls_that_compacted"])
        )
    print(line(f"recall k={rec['k']} (service)", rec["service_recall"]))
    print(line("  query embedding only", rec["embedding_only"]))
    print(line("  rank(memory, request) only", rec["memory_recall_only"]))
    print(line("  service.memory() version check", rec["follow_table_check"]))
    profile = svc.get("remember_profile")
    if profile:
        print(
            f"  remember profile, mean ms per call over {profile['calls']} calls at {svc['stored_leaves']} "
            "leaves (cProfile):"
        )
        for label, ms in profile["mean_ms_per_call"].items():
            print(f"    {label:<46} {ms:>8.2f}")

    def fmt(value: float | None) -> str:
        return f"{value:>8.1f}" if value is not None else f"{'n/a':>8}"

    print(f"\ncold start over stdio, median of {report['coldstart']['runs']} runs (ms):")
    print(f"  spawn -> tools/list   bare MCPServer {fmt(cold['bare_tools_list'])}")
    print(
        f"  spawn -> tools/list   memtree-mcp    {fmt(cold['memtree_tools_list'])}   "
        f"ratio {cold['ratio_memtree_over_bare']}"
    )
    print(
        f"  first recall call, empty store       {fmt(cold['first_recall_empty_store'])}   "
        f"(second {cold['second_recall_empty_store']})"
    )
    print(
        f"  first recall call, built store       {fmt(cold['first_recall_built_store'])}   "
        f"(second {cold['second_recall_built_store']})"
    )
    print(
        f"  first recall, built store, {USER_PAUSE_S:.0f} s after tools/list "
        f"{fmt(cold['first_recall_built_store_after_pause'])}"
    )
    print(
        f"  shutdown (stdin close -> exit)       bare {cold['bare_shutdown']}, "
        f"memtree {cold['memtree_shutdown']}"
    )
    for failure in report["coldstart"]["failures"]:
        print(f"  FAILED {failure}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("data", type=Path, help="LoCoMo JSON (e.g. locomo-dev.json)")
    parser.add_argument("--turns", type=int, default=1000, help="turns to insert (default 1000)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/latency.json"))
    parser.add_argument("--coldstart-runs", type=int, default=7)
    parser.add_argument(
        "--profile-calls",
        type=int,
        default=20,
        help="remember calls to profile after the timed run (0: none)",
    )
    args = parser.parse_args(argv)
    if args.turns < 2 or args.coldstart_runs < 1:
        parser.error("--turns must be at least 2 and --coldstart-runs at least 1")

    data = json.loads(args.data.read_text())
    source_at_start = source_state()
    load_at_start = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="memtree-latency-", ignore_cleanup_errors=True) as tmp:
        scratch = Path(tmp)
        home = scratch / "store"
        print(f"part 1: inserting {args.turns} turns into a fresh store ...", file=sys.stderr)
        service_report = bench_service(data, args.turns, home, profile_calls=args.profile_calls)
        query = pick_questions(data, set(service_report["conversations"]), 1)[0]
        print(f"part 2: cold start, {args.coldstart_runs} run(s) of each server ...", file=sys.stderr)
        cold_report = anyio.run(bench_coldstart, args.coldstart_runs, home, query, scratch)

    machine = machine_info()
    source = source_state()
    source["changed_during_run"] = any(
        source.get(key) != source_at_start.get(key) for key in ("git_head", "newest_source_mtime")
    )
    if source["changed_during_run"]:
        print(
            "WARNING: memtree_mcp sources changed during the run; the servers may have run other code "
            "than the in-process service",
            file=sys.stderr,
        )
    report = {
        "benchmark": "memtree-mcp latency",
        "started_utc": started.isoformat(timespec="seconds"),
        "command": shlex.join([sys.executable, *sys.argv]),
        "cwd": os.getcwd(),
        "data": str(args.data),
        "loadavg_at_start": load_at_start,
        "source": source,
        "machine": machine,
        "packages": {
            name: package_version(name)
            for name in ("memtree-mcp", "mcp", "lancedb", "pylance", "onnxruntime", "numpy", "pyarrow")
        },
        "service": service_report,
        "coldstart": cold_report,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print_table(report)
    print(f"load average at start {report['loadavg_at_start']}, at end {machine.get('loadavg_1_5_15')}")
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How recall treats updates: later memories that change earlier facts, read through MCP as an agent would.

Protocol (data and its invariants: ``updates_data.py``)
1. A fresh store in a temporary directory (``MemoryService(Settings(home=...))``, extractive
   summaries, the local embedder), served by ``build_server`` to an in-process ``mcp.Client``.
   ``tools/list`` is called once: the characters of its result as sent (``json.dumps`` of
   ``model_dump(by_alias=True, exclude_none=True)``) are recorded, in all and per tool.
2. Every memory of the fictional Orion project is stored with one ``remember`` tool call, in
   timestamp order (``content``, ``timestamp``, ``session``); its leaf id is read from the result
   (structured ``ids[0]``, else the first ``m`` + 15 hex digits id in the text content).
3. Every question is asked with ``recall`` and its default arguments (``{"query": q}``). From each
   result: the ranked hits (structured ``hits[i]`` when present, else one hit per text line, named
   by the first id on that line), the characters of the text content (what the model reads) and,
   apart, of ``json.dumps(structured_content)``; hit texts repeated within the result; whether a
   hit is marked superseded (a truthy ``superseded_by`` field, or "superseded" on its text line).
   Fields are read defensively: a result without structured content, hits without texts, or
   extra fields (``relevance``, ``superseded_by``) are all handled.
4. ``summarize`` with ``{"query": subject}`` for subjects that had updates: does the summary hold
   the newest version's distinctive words, and each stale version's?
5. Who marks the updates (``links`` in the JSON): the same memories stored four more times through
   the service, each in a fresh store, (a) ``none``: as above, nobody links (no mark may appear;
   the newer version must still come first); (b) ``agent``: each memory remembered, and when
   ``remember`` offers the version before it as a candidate, remembered again with ``supersedes``
   naming it, as an agent that understands would (the labels stand in for its understanding; a
   candidate that is not the version before is left alone); (c) ``explicit``: each later version
   remembered with ``supersedes`` naming the version before it, as an agent that has just recalled
   it would; (d) ``llm``: ``MEMTREE_LLM=litellm:openai/oracle``
   against the loopback fake OpenAI server of the test suite (``tests/fake_openai.py``), whose
   scripted answer to each judgement is read off the dataset's labels ("updates" for an earlier
   version of the same topic, "unrelated" otherwise; summaries: the entries, verbatim), so it
   measures the plumbing end to end (candidates chosen, prompt, parsing, stored links, recall),
   not a model. Per way, over the dataset's real update pairs (each older version of a topic with
   its newest): ``handled`` when the older version is marked by the newest (what recall's marks
   read, ``core.ranking.currency.newest_updates``); a mark naming a later version of the same topic that
   is not the newest is not handled but not false either, every other mark is a false mark
   (precision = marks that are not false / marks); per ``updated`` question (``service.recall`` with its
   defaults), ``handled`` when the newest version is shown before every older one shown and
   each older one shown is marked, and false marks on current memories among all hits.

Metrics (overall and per question kind: updated / stable / unrelated)
- top-1 / top-3: the answer (the newest version) is the first hit / among the first three. A hit is
  the answer when it is the answer's leaf, or a summary whose text contains the answer's text.
- newer above older (updated questions where the newest and an older version both appear as leaf
  hits): share where the newest leaf ranks above every older leaf. ``newer_above_older_any`` in the
  JSON also counts summaries containing a version's text (a summary holding both is a tie: not
  above). older without newest: share of updated questions where an older version appears (leaf or
  summary) but the newest does not.
- older marked superseded: share of hits that are leaves of an outdated version (in any result)
  that the result marks superseded; ``current_marked_superseded`` counts wrong marks on leaves that
  are the newest (or only) version of their topic.
- hits per result (mean, share with 0 and with at most 1; on unrelated questions the ideal is 0),
  duplicated hit texts (hits whose text equals an earlier hit's, summed over results), characters
  read per result (text content: mean and max; structured content: mean).

Run from the repository root (about a minute on 2 CPUs; fixed data, no randomness)::

    python bench/updates.py [--out bench/results/updates.json]

It prints markdown tables and writes every result (hits, ranks, sizes) to the JSON file, with the
machine, the exact command and the memtree_mcp code measured (``source``: its directory, git HEAD
and uncommitted files). To measure a commit while the working tree is being edited::

    mkdir -p /tmp/memtree-HEAD && git archive HEAD memtree_mcp | tar -x -C /tmp/memtree-HEAD
    PYTHONPATH=/tmp/memtree-HEAD python bench/updates.py --out bench/results/updates-before.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `memtree-mcp serve` runs

from mcp import Client
from updates_data import BY_KEY, KINDS, MEMORIES, QUESTIONS, SESSIONS, SUBJECTS, Question, versions

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.ranking.currency import newest_updates
from memtree_mcp.providers import make_embedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest

ROOT = Path(__file__).resolve().parent.parent

LEAF_ID = re.compile(r"\bm[0-9a-f]{15}\b")
NODE_ID = re.compile(r"\b[a-z][0-9a-f]{15}\b")  # leaves 'm…', summaries 'b…'
# In a text line, what differs between two hits of the same text: a leading rank ("1." / "2)") and
# scores in [0, 1] ("0.87").
LINE_NOISE = re.compile(r"^\s*\d+[.)]\s|(?<![\w.])[01]\.\d+(?![\w.])")
TOP = (1, 3)


# -- reading tool results defensively ---------------------------------------------------------------


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def text_of(result: Any) -> str:
    """The text content the model reads: every text block, concatenated."""
    parts = []
    for block in getattr(result, "content", None) or []:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts)


def structured_of(result: Any) -> dict[str, Any] | None:
    value = getattr(result, "structured_content", None)
    return value if isinstance(value, dict) else None


def ids_of(result: Any) -> list[str]:
    """Leaf ids of a ``remember`` result: structured ``ids``, else ids found in the text content."""
    structured = structured_of(result)
    if structured is not None:
        ids = structured.get("ids")
        if isinstance(ids, list) and ids:
            return [str(i) for i in ids]
    return unique(LEAF_ID.findall(text_of(result)))


@dataclass
class Hit:
    id: str
    text: str | None
    kind: str  # 'leaf' or 'summary'
    superseded: bool
    fields: dict[str, Any]  # the structured hit, minus its text


def hit_lines(text: str) -> dict[str, str]:
    """Text line of each hit: a line belongs to the first id on it (later ids are references)."""
    lines: dict[str, str] = {}
    for line in text.splitlines():
        found = NODE_ID.search(line)
        if found and found.group(0) not in lines:
            lines[found.group(0)] = line
    return lines


def line_text(line: str) -> str:
    return " ".join(NODE_ID.sub(" ", line).split())


def hits_of(result: Any) -> tuple[list[Hit], str]:
    """Ranked hits of a ``recall`` result, and where they were read from ('structured' or 'text')."""
    text = text_of(result)
    lines = hit_lines(text)
    structured = structured_of(result)
    raw = structured.get("hits") if structured is not None else None
    hits: list[Hit] = []
    if isinstance(raw, list) and all(isinstance(h, dict) and h.get("id") for h in raw):
        for h in raw:
            hit_id = str(h["id"])
            line = lines.get(hit_id, "")
            own = h.get("text")
            kind = h.get("kind")
            hits.append(
                Hit(
                    id=hit_id,
                    text=own if isinstance(own, str) else (line_text(line) or None),
                    kind=kind
                    if kind in ("leaf", "summary")
                    else ("leaf" if hit_id.startswith("m") else "summary"),
                    superseded=bool(h.get("superseded_by")) or "superseded" in line.lower(),
                    fields={k: v for k, v in h.items() if k != "text"},
                )
            )
        return hits, "structured"
    for hit_id, line in lines.items():
        hits.append(
            Hit(
                id=hit_id,
                text=line_text(line) or None,
                kind="leaf" if hit_id.startswith("m") else "summary",
                superseded="superseded" in line.lower(),
                fields={},
            )
        )
    return hits, "text"


def duplicates_of(result: Any, hits: Sequence[Hit]) -> int:
    """Hits whose text equals an earlier hit's text (structured texts, else the text content's lines)."""
    structured = structured_of(result)
    raw = structured.get("hits") if structured is not None else None
    if isinstance(raw, list) and any(isinstance(h, dict) and isinstance(h.get("text"), str) for h in raw):
        texts = [" ".join(h.text.split()) for h in hits if h.text]
    else:  # lines of the text content, without ids, a leading rank and relevance-like numbers
        texts = [LINE_NOISE.sub(" ", line_text(line)) for line in text_of(result).splitlines()]
        texts = [" ".join(t.split()) for t in texts if t.strip()]
    return len(texts) - len(set(texts))


def structured_chars(result: Any) -> int | None:
    structured = structured_of(result)
    return len(json.dumps(structured)) if structured is not None else None


# -- the run ----------------------------------------------------------------------------------------


def covers(hit: Hit, key: str, leaf_of: dict[str, str]) -> bool:
    """Whether ``hit`` shows memory ``key``: its leaf, or a summary that contains its text."""
    if hit.id == leaf_of.get(key):
        return True
    return hit.kind != "leaf" and bool(hit.text) and BY_KEY[key].text in (hit.text or "")


def first_rank(
    hits: Sequence[Hit], key: str, leaf_of: dict[str, str], leaves_only: bool = False
) -> int | None:
    """1-based rank of the first hit showing ``key``, or None."""
    for rank, hit in enumerate(hits, 1):
        if (hit.id == leaf_of.get(key)) if leaves_only else covers(hit, key, leaf_of):
            return rank
    return None


OUTDATED = frozenset(k for m in MEMORIES for k in versions(m.topic)[:-1])  # keys of non-newest versions


async def ask(
    client: Client, question: Question, leaf_of: dict[str, str], key_of: dict[str, str]
) -> dict[str, Any]:
    started = time.perf_counter()
    result = await client.call_tool("recall", {"query": question.text})
    seconds = time.perf_counter() - started
    hits, source = hits_of(result)
    shown = []
    for rank, hit in enumerate(hits, 1):
        keys = [key_of[hit.id]] if hit.id in key_of else [k for k in BY_KEY if covers(hit, k, leaf_of)]
        shown.append(
            {
                "rank": rank,
                "id": hit.id,
                "kind": hit.kind,
                "keys": keys,
                "outdated_leaf": hit.id in key_of and key_of[hit.id] in OUTDATED,
                "superseded": hit.superseded,
                **{
                    k: v
                    for k, v in hit.fields.items()
                    if k in ("score", "relevance", "covers", "superseded_by")
                },
            }
        )
    record: dict[str, Any] = {
        "question": question.text,
        "kind": question.kind,
        "answer": question.answer,
        "stale": list(question.stale),
        "is_error": bool(getattr(result, "is_error", False)),
        "source": source,
        "hits": shown,
        "n_hits": len(hits),
        "text_chars": len(text_of(result)),
        "structured_chars": structured_chars(result),
        "duplicates": duplicates_of(result, hits),
        "ms": round(1000 * seconds, 1),
    }
    if question.answer is not None:
        record["answer_rank"] = first_rank(hits, question.answer, leaf_of)
        record["answer_leaf_rank"] = first_rank(hits, question.answer, leaf_of, leaves_only=True)
        record["stale_ranks"] = {k: first_rank(hits, k, leaf_of) for k in question.stale}
        record["stale_leaf_ranks"] = {
            k: first_rank(hits, k, leaf_of, leaves_only=True) for k in question.stale
        }
    return record


async def summarize(client: Client) -> list[dict[str, Any]]:
    out = []
    for subject in SUBJECTS:
        result = await client.call_tool("summarize", {"query": subject.query})
        structured = structured_of(result)
        summary = structured.get("summary") if structured is not None else None
        text = summary if isinstance(summary, str) else text_of(result)
        low = text.lower()
        out.append(
            {
                "query": subject.query,
                "topic": subject.topic,
                "is_error": bool(getattr(result, "is_error", False)),
                "newest": subject.newest,
                "newest_found": subject.newest.lower() in low,
                "stale": {k: {"marker": m, "found": m.lower() in low} for k, m in subject.stale.items()},
                "text_chars": len(text_of(result)),
                "structured_chars": structured_chars(result),
                "summary": text,
            }
        )
    return out


async def session(service: MemoryService) -> dict[str, Any]:
    async with Client(build_server(service)) as client:
        listed = await client.list_tools()
        tools = {
            "total_chars": len(json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True))),
            "per_tool": {
                t.name: len(json.dumps(t.model_dump(mode="json", by_alias=True, exclude_none=True)))
                for t in listed.tools
            },
            "instructions_chars": len(client.instructions or ""),
        }

        started = time.perf_counter()
        leaf_of: dict[str, str] = {}
        for memory in MEMORIES:
            result = await client.call_tool(
                "remember", {"content": memory.text, "timestamp": memory.timestamp, "session": memory.session}
            )
            ids = ids_of(result)
            if getattr(result, "is_error", False) or not ids:
                raise RuntimeError(f"remember failed for {memory.key}: {text_of(result)[:300]}")
            leaf_of[memory.key] = ids[0]
        remember_seconds = time.perf_counter() - started
        key_of = {leaf: key for key, leaf in leaf_of.items()}

        started = time.perf_counter()
        records = [await ask(client, q, leaf_of, key_of) for q in QUESTIONS]
        recall_seconds = time.perf_counter() - started
        summaries = await summarize(client)
    return {
        "tools_list": tools,
        "leaf_ids": leaf_of,
        "remember_seconds": round(remember_seconds, 2),
        "recall_ms_mean": round(1000 * recall_seconds / len(QUESTIONS), 1),
        "records": records,
        "summarize": summaries,
    }


# -- metrics ----------------------------------------------------------------------------------------


def share(hits: int, total: int) -> float | None:
    return round(hits / total, 3) if total else None


def mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def metrics(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in records if r["answer"] is not None]
    updated = [r for r in records if r["kind"] == "updated"]
    out: dict[str, Any] = {"questions": len(records)}
    for k in TOP:
        ok = sum(1 for r in answerable if r["answer_rank"] is not None and r["answer_rank"] <= k)
        out[f"top{k}"] = share(ok, len(answerable))

    def above(ranks: dict[str, int | None], newest: int | None) -> tuple[int, int]:
        older = [v for v in ranks.values() if v is not None]
        if newest is None or not older:
            return 0, 0
        return int(newest < min(older)), 1

    pairs = [above(r["stale_leaf_ranks"], r["answer_leaf_rank"]) for r in updated]
    out["newer_above_older"] = share(sum(p[0] for p in pairs), sum(p[1] for p in pairs))
    out["newer_above_older_n"] = sum(p[1] for p in pairs)
    pairs = [above(r["stale_ranks"], r["answer_rank"]) for r in updated]
    out["newer_above_older_any"] = share(sum(p[0] for p in pairs), sum(p[1] for p in pairs))
    out["newer_above_older_any_n"] = sum(p[1] for p in pairs)
    older_only = sum(
        1
        for r in updated
        if r["answer_rank"] is None and any(v is not None for v in r["stale_ranks"].values())
    )
    out["older_without_newest"] = share(older_only, len(updated))

    outdated_hits = [h for r in records for h in r["hits"] if h["outdated_leaf"]]
    out["outdated_leaf_hits"] = len(outdated_hits)
    out["older_marked_superseded"] = share(sum(h["superseded"] for h in outdated_hits), len(outdated_hits))
    out["current_marked_superseded"] = sum(
        1
        for r in records
        for h in r["hits"]
        if h["superseded"] and not h["outdated_leaf"] and h["kind"] == "leaf"
    )

    n_hits = [r["n_hits"] for r in records]
    out["hits_mean"] = mean(n_hits)
    out["zero_hits"] = share(sum(n == 0 for n in n_hits), len(n_hits))
    out["at_most_one_hit"] = share(sum(n <= 1 for n in n_hits), len(n_hits))
    out["duplicates"] = sum(r["duplicates"] for r in records)
    out["results_with_duplicates"] = sum(r["duplicates"] > 0 for r in records)
    text = [r["text_chars"] for r in records]
    out["text_chars_mean"] = mean(text)
    out["text_chars_max"] = max(text) if text else None
    out["structured_chars_mean"] = mean(
        [r["structured_chars"] for r in records if r["structured_chars"] is not None]
    )
    out["errors"] = sum(r["is_error"] for r in records)
    return out


# -- report -----------------------------------------------------------------------------------------


# -- who marks the updates: nobody, the agent, explicit links, an LLM (scripted from the labels) -----

_FENCE = re.compile(r"<<<([A-Z_]+)>>>\n(.*?)\n<<<END_\1>>>", re.S)
BY_TEXT = {m.text: m for m in MEMORIES}
LINK_WAYS = ("none", "agent", "explicit", "llm")


def oracle(body: Any) -> str:
    """The scripted model of the ``llm`` way: a judgement answered from the dataset's labels, a
    summary with its entries verbatim."""
    user = body["messages"][-1]["content"]
    blocks = _FENCE.findall(user)
    new = next((BY_TEXT.get(t.strip()) for name, t in blocks if name == "NEW_MEMORY"), None)
    if new is None:
        return " ".join(" ".join(t.split()) for _, t in blocks) or "Nothing."
    verdicts = []
    for i, old in enumerate((BY_TEXT.get(t.strip()) for n, t in blocks if n == "EARLIER_MEMORY"), 1):
        same = old is not None and old.topic == new.topic and old.version < new.version
        verdicts.append(f"{i}: {'updates' if same else 'unrelated'}")
    return "\n".join(verdicts)


def store_all(service: MemoryService, way: str) -> tuple[dict[str, str], dict[str, int]]:
    """Every memory remembered the ``way`` given (protocol, 5); (leaf ids by key, what remember
    offered: candidates in all, on updates, naming the version before, on base facts)."""
    leaf_of: dict[str, str] = {}
    offers = {"candidates": 0, "updates": 0, "updates_named": 0, "base_facts": 0, "base_facts_offered": 0}
    for m in MEMORIES:
        before = leaf_of.get(f"{m.topic}@{m.version - 1}")
        links = [before] if way == "explicit" and before else None
        stored = service.remember(m.text, timestamp=m.timestamp, session=m.session, supersedes=links)
        leaf_of[m.key] = stored.ids[0]
        offered = [c.id for c in stored.candidates]
        offers["candidates"] += len(offered)
        if m.version > 1:
            offers["updates"] += 1
            offers["updates_named"] += before in offered
        else:
            offers["base_facts"] += 1
            offers["base_facts_offered"] += bool(offered)
        if way == "agent" and before in offered:
            service.remember(m.text, timestamp=m.timestamp, session=m.session, supersedes=[before])
    return leaf_of, offers


def marks_measured(service: MemoryService, leaf_of: dict[str, str]) -> dict[str, Any]:
    key_of = {leaf: key for key, leaf in leaf_of.items()}
    memory = service.memory()
    assert memory is not None
    marks = newest_updates(memory, list(memory.leaves.values()))
    real = {k: versions(BY_KEY[k].topic)[-1] for k in OUTDATED}
    right = sum(real.get(key_of[older]) == key_of[newer.id] for older, newer in marks.items())

    def later_version(older: str, newer: str) -> bool:
        return BY_KEY[older].topic == BY_KEY[newer].topic and BY_KEY[older].version < BY_KEY[newer].version

    # A mark naming a later version that is not the newest is no false mark, just not handled.
    false = [
        {"older": key_of[o], "newer": key_of[n.id]}
        for o, n in marks.items()
        if not later_version(key_of[o], key_of[n.id])
    ]
    handled = done = newer_first = 0
    wrong_on_hits = 0
    for question in QUESTIONS:
        hits = service.look_up(RecallRequest(question.text)).hits
        rank = {key_of[h.id]: i for i, h in enumerate(hits) if h.id in key_of}
        wrong_on_hits += sum(
            1 for h in hits if h.superseded_by and (h.id not in key_of or key_of[h.id] not in OUTDATED)
        )
        if question.kind != "updated":
            continue
        done += 1
        assert question.answer is not None
        shown = [k for k in question.stale if k in rank]
        first = question.answer in rank and all(rank[question.answer] < rank[k] for k in shown)
        marked = all(hits[rank[k]].superseded_by == leaf_of[question.answer] for k in shown)
        handled += first and marked
        newer_first += first
    return {
        "pairs": len(real),
        "pairs_handled": right,
        "marks": len(marks),
        "false_marks": len(false),
        "precision": share(len(marks) - len(false), len(marks)) if marks else 1.0,
        "recall": share(right, len(real)),
        "false": false,
        "questions": done,
        "questions_handled": handled,
        "questions_newest_first": newer_first,
        "false_marks_on_hits": wrong_on_hits,
    }


def link_ways(embedder: Embedder) -> dict[str, Any]:
    """Each way of marking updates measured on a fresh store of the same memories (protocol, 5)."""
    sys.path.insert(0, str(ROOT))
    from tests.fake_openai import fake_openai

    out: dict[str, Any] = {}
    with fake_openai() as server:
        server.reply_for = oracle
        for way in LINK_WAYS:
            with tempfile.TemporaryDirectory(prefix=f"memtree-links-{way}-") as home:
                llm = {"llm": "litellm:openai/oracle", "llm_api_base": server.url, "llm_api_key": "sk-test"}
                settings = Settings(home=home, **(llm if way == "llm" else {"llm": "none"}))
                service = MemoryService(settings, embedder=embedder)
                started = time.perf_counter()
                try:
                    leaf_of, offers = store_all(service, way)
                    if way == "llm" and not service.judging.wait_idle(timeout=300):
                        raise RuntimeError(f"the judge did not finish: {service.judging.worker.failing}")
                    out[way] = {**marks_measured(service, leaf_of), "offered": offers}
                finally:
                    service.close()
                out[way]["seconds"] = round(time.perf_counter() - started, 1)
        out["llm"]["judge_calls"] = sum(
            "<<<NEW_MEMORY>>>" in body["messages"][-1]["content"]
            for path, _, body in server.requests
            if path.endswith("/chat/completions") and body
        )
    return out


def run() -> dict[str, Any]:
    embedder = make_embedder(os.environ.get("MEMTREE_EMBEDDER", "local"))  # the default unless set
    with tempfile.TemporaryDirectory(prefix="memtree-updates-") as home:
        service = MemoryService(Settings(home=home, namespace="default", llm="none"), embedder=embedder)
        try:
            report = asyncio.run(session(service))
        finally:
            service.close()
    report["links"] = link_ways(embedder)
    records = report["records"]
    report["metrics"] = {"all": metrics(records)} | {
        kind: metrics([r for r in records if r["kind"] == kind]) for kind in KINDS
    }
    updates = [m for m in MEMORIES if m.version > 1]
    report["data"] = {
        "memories": len(MEMORIES),
        "base_facts": len(MEMORIES) - len(updates),
        "updates": len(updates),
        "updated_topics": len({m.topic for m in updates}),
        "sessions": len(SESSIONS),
        "questions": {kind: sum(q.kind == kind for q in QUESTIONS) for kind in KINDS},
        "subjects": len(SUBJECTS),
    }
    return report


def package(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def source_state() -> dict[str, Any]:
    """The memtree_mcp code measured: its directory, newest source mtime, git HEAD and uncommitted files."""
    import memtree_mcp

    package = Path(memtree_mcp.__file__).resolve().parent
    newest = max((f.stat().st_mtime for f in package.rglob("*.py")), default=0.0)
    state: dict[str, Any] = {
        "package_dir": str(package),
        "newest_source_mtime": datetime.fromtimestamp(newest, tz=UTC).isoformat(timespec="seconds"),
        "pythonpath": os.environ.get("PYTHONPATH"),
    }
    for key, git_args in (("git_head", ["rev-parse", "HEAD"]), ("git_status", ["status", "--porcelain"])):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(
                ["git", "--no-optional-locks", *git_args, *(["--", "."] if key == "git_status" else [])],
                cwd=package,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
            state[key] = done.stdout.rstrip("\n").splitlines() if key == "git_status" else done.stdout.strip()
    return state


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def num(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def markdown(report: dict[str, Any]) -> str:
    cols = [
        ("n", "questions", num),
        ("top-1", "top1", pct),
        ("top-3", "top3", pct),
        ("newer above older", "newer_above_older", pct),
        ("older w/o newest", "older_without_newest", pct),
        ("older marked superseded", "older_marked_superseded", pct),
        ("hits mean", "hits_mean", num),
        ("0 hits", "zero_hits", pct),
        ("≤1 hit", "at_most_one_hit", pct),
        ("dup. texts", "duplicates", num),
        ("text chars mean", "text_chars_mean", num),
        ("text chars max", "text_chars_max", num),
        ("struct. chars mean", "structured_chars_mean", num),
    ]
    lines = ["| questions | " + " | ".join(c[0] for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for group, m in report["metrics"].items():
        cells = []
        for _, name, fmt in cols:
            value = m.get(name)
            if group == "unrelated" and name in ("top1", "top3"):
                value = None
            cells.append(fmt(value))
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    upd = report["metrics"]["updated"]
    lines.append("")
    lines.append(
        f"newer above older over {upd['newer_above_older_n']} updated questions with both as leaves; "
        f"counting summaries: {pct(upd['newer_above_older_any'])} of {upd['newer_above_older_any_n']}. "
        f"Outdated leaves among all hits: {report['metrics']['all']['outdated_leaf_hits']}."
    )
    lines += [
        "",
        "| summarize query | newest in summary | stale in summary | text chars |",
        "|---|---|---|---|",
    ]
    for s in report["summarize"]:
        stale = ", ".join(f"{k}: {'yes' if v['found'] else 'no'}" for k, v in s["stale"].items())
        lines.append(
            f"| {s['query']} | {'yes' if s['newest_found'] else 'no'} ({s['newest']}) | {stale} "
            f"| {s['text_chars']} |"
        )
    lines += [
        "",
        "| who marks | real pairs handled | false marks | precision | recall | updated questions handled "
        "| newest first | updates offered the older | base facts offered any | false marks on hits | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for way, found in report["links"].items():
        offered = found["offered"]
        lines.append(
            f"| {way} | {found['pairs_handled']}/{found['pairs']} | {found['false_marks']} "
            f"| {num(found['precision'])} | {num(found['recall'])} "
            f"| {found['questions_handled']}/{found['questions']} "
            f"| {found['questions_newest_first']}/{found['questions']} "
            f"| {offered['updates_named']}/{offered['updates']} "
            f"| {offered['base_facts_offered']}/{offered['base_facts']} | {found['false_marks_on_hits']} "
            f"| {found['seconds']} |"
        )
    tools = report["tools_list"]
    per_tool = ", ".join(f"{name} {chars}" for name, chars in tools["per_tool"].items())
    lines += [
        "",
        f"tools/list: {tools['total_chars']} chars ({per_tool}); instructions {tools['instructions_chars']}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/updates.json"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    report = run()
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    report["command"] = shlex.join([sys.executable, *sys.argv])
    report["machine"] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    report["versions"] = {"memtree-mcp": package("memtree-mcp"), "mcp": package("mcp")}
    report["source"] = source_state()
    print(markdown(report))
    print(
        f"\n{report['data']['memories']} memories, {len(QUESTIONS)} questions; "
        f"remember {report['remember_seconds']} s, recall {report['recall_ms_mean']} ms mean; "
        f"wall {report['wall_seconds']} s"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

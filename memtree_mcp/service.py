"""MemoryService: remember and recall over the core trees, the LanceDB store and an embedder.

The service keeps each namespace's trees and vectors in memory and follows the table: before
every operation it looks at the table's latest version and reloads when another process wrote.
Writers serialise through a per-namespace file lock, and every ``remember`` commits all the rows
it changed at once; when a commit fails, the in-memory state is reloaded from the table, which
still holds the previous version.

Heavy modules (lancedb, onnxruntime) are imported on first use, never at import time.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import platformdirs
from filelock import FileLock

from memtree_mcp.config import Settings
from memtree_mcp.core.checks import Problem, memory_problems
from memtree_mcp.core.chunking import split_into_chunks
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.hierarchy import Hierarchy
from memtree_mcp.core.memory import STRATEGIES, Hit, Memory, RecallFilter
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.navigation import MOVES, EmbeddingPolicy, NavigationError, Policy, run_agent
from memtree_mcp.core.navigation import NodeView as CursorView
from memtree_mcp.core.navigation import move as move_cursor
from memtree_mcp.core.navigation import view as view_node
from memtree_mcp.core.summary import Summary, period_nodes, summarize_nodes
from memtree_mcp.core.temporal import CompatibilityPolicy
from memtree_mcp.errors import InvalidInput, NotFound, ProviderError
from memtree_mcp.inputs import (
    KINDS,
    MAX_AGENT_STEPS,
    MAX_CHILD_INDEX,
    MAX_K,
    MAX_OUTLINE_DEPTH,
    MAX_QUERY_CHARS,
    MAX_TOKENS,
    MIN_SUMMARY_TOKENS,
    check_namespace,
    check_node,
    check_range,
    check_role,
    check_session,
    check_tags,
    check_text,
    check_tree,
    format_timestamp,
    parse_timestamp,
)
from memtree_mcp.results import (
    ContextLine,
    ForgetResult,
    NavigateResult,
    NodeView,
    PathStep,
    RecallHit,
    RecallResult,
    RememberResult,
    SummaryResult,
)

if TYPE_CHECKING:
    from memtree_mcp.providers.llm import TextGenerator
    from memtree_mcp.refine import Refiner
    from memtree_mcp.store.lance import LanceStore, NamespaceTable

log = logging.getLogger("memtree_mcp")
T = TypeVar("T")

# Summaries a summarize call writes with the client's model (MCP sampling) before it answers.
MAX_INLINE_SUMMARIES = 6
# A query given to forget reaches at most this many memories at once.
FORGET_CANDIDATES = 10


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One piece of content to store as a leaf, with what ``remember`` was told about it."""

    text: str
    role: str
    tags: tuple[str, ...]
    timestamp: float
    session: str | None


@dataclass(frozen=True, slots=True)
class SummaryQuestion:
    """A summary to ask the client's model for: which branch, of which inputs, and the prompt."""

    node_id: str
    fingerprint: str
    system: str
    user: str


@dataclass
class _Space:
    """A namespace's in-memory state and the table version it reflects."""

    name: str
    memory: Memory
    table: NamespaceTable | None = None
    version: int = -1
    lock: threading.RLock = field(default_factory=threading.RLock)


@dataclass(frozen=True, slots=True)
class _SummaryPlan:
    name: str
    space: _Space
    start: list[str]
    found: Summary


class MemoryService:
    """The memory operations, shared by the MCP server and the CLI. Thread-safe."""

    def __init__(
        self,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        *,
        background: bool = True,
    ) -> None:
        """``background=False`` leaves LLM summaries pending for a later process (one-shot commands)."""
        self.settings = settings or Settings()
        self._background = background
        self._embedder = embedder
        self._store: LanceStore | None = None
        self._spaces: dict[str, _Space] = {}
        self._lock = threading.RLock()
        self._llm: TextGenerator | None = None
        self._refiner: Refiner | None = None

    # -- operations ------------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        role: str = "user",
        tags: Sequence[str] = (),
        timestamp: str | None = None,
        session: str | None = None,
        namespace: str | None = None,
    ) -> RememberResult:
        """Store ``content`` as one leaf per chunk, skipping chunks that are already stored.

        Raises InvalidInput for bad arguments (nothing is written), StoreError when the commit
        fails (the previous state is kept) and EmbedderMismatch for a store built by another model.
        """
        name = self._namespace(namespace)
        text = check_text(content, "content", self.settings.max_content_chars)
        role = check_role(role)
        tag_tuple = check_tags(tags)
        session = check_session(session)
        moment = parse_timestamp(timestamp) if timestamp is not None else time.time()
        chunks = [_Chunk(chunk, role, tag_tuple, moment, session) for chunk in split_into_chunks(text)]
        ids, added, path = self._store_chunks(name, chunks)
        log.info("stored %d new leaf(s) in namespace %s", added, name)
        return RememberResult(ids=ids, deduplicated=added == 0, path=path, namespace=name)

    def import_memories(
        self, records: Iterable[object], namespace: str | None = None, *, batch: int = 256
    ) -> tuple[int, int]:
        """Remember many memories fast: embeddings in batches, one commit per ``batch`` memories.

        Each record has ``content`` and optionally ``role``, ``timestamp``, ``session``, ``tags``,
        checked as ``remember`` checks them. A record that fails its check stops the import with
        InvalidInput naming the record; every batch committed before it stays. Returns (memories
        added, duplicates skipped).
        """
        name = self._namespace(namespace)
        added = skipped = 0
        pending: list[_Chunk] = []
        for number, record in enumerate(records, start=1):
            try:
                if not isinstance(record, Mapping):
                    raise InvalidInput("each line must be a JSON object with a 'content' field.")
                text = check_text(record.get("content"), "content", self.settings.max_content_chars)
                role = check_role(record.get("role", "user"))
                tags = check_tags(record.get("tags", ()))
                session = check_session(record.get("session"))
                stamp = record.get("timestamp")
                moment = parse_timestamp(stamp) if stamp is not None else time.time()
            except InvalidInput as exc:
                raise InvalidInput(f"record {number}: {exc}") from None
            pending += [_Chunk(chunk, role, tags, moment, session) for chunk in split_into_chunks(text)]
            if len(pending) >= batch:
                done = self._store_chunks(name, pending)[1]
                added, skipped = added + done, skipped + len(pending) - done
                pending = []
        if pending:
            done = self._store_chunks(name, pending)[1]
            added, skipped = added + done, skipped + len(pending) - done
        return added, skipped

    def _store_chunks(self, name: str, chunks: list[_Chunk]) -> tuple[list[str], int, list[PathStep]]:
        """Store ``chunks`` as leaves in one commit, skipping exact duplicates.

        Returns the leaf id of every chunk (the existing one for a duplicate), how many leaves were
        added, and the semantic path above the first chunk. On any failure the in-memory trees are
        reloaded from the table, which kept its previous version.
        """
        space = self._open_space(name)
        with space.lock, self._file_lock(name):
            self._follow_table(space)
            memory = space.memory
            hashes = [content_hash(chunk.text) for chunk in chunks]
            fresh = [
                i for i, h in enumerate(hashes) if memory.duplicate_of(h) is None and h not in hashes[:i]
            ]
            quota = self.settings.max_memories
            if len(memory.leaves) + len(fresh) > quota:
                raise InvalidInput(
                    f"namespace '{name}' holds {len(memory.leaves):,} memories and this would add "
                    f"{len(fresh)}; the quota is {quota:,} (MEMTREE_MAX_MEMORIES). Forget some, or raise it."
                )
            vectors = self.embedder.embed_batch([chunks[i].text for i in fresh]) if fresh else None
            vector_of = {i: position for position, i in enumerate(fresh)}
            now = time.time()
            ids: list[str] = []
            changed: set[str] = set()
            try:
                for i, chunk in enumerate(chunks):
                    existing = memory.duplicate_of(hashes[i])
                    if existing is not None:
                        ids.append(existing)
                        continue
                    assert vectors is not None
                    leaf = Leaf(
                        id=new_leaf_id(),
                        text=chunk.text,
                        vector=vectors[vector_of[i]],
                        seq=memory.next_seq,
                        timestamp=chunk.timestamp,
                        role=chunk.role,
                        tags=chunk.tags,
                        session=chunk.session,
                        content_hash=hashes[i],
                        created=now,
                    )
                    changed |= memory.add_leaf(leaf)
                    ids.append(leaf.id)
                refine = self._mark_for_refinement(memory, changed, forgotten=False)
                if changed:
                    assert space.table is not None
                    space.version = space.table.commit(self._rows(memory, changed, now))
            except BaseException:
                self._reload(space)
                raise
            self._submit(name, refine)
            path = [
                PathStep(id=b.id, label=b.label)
                for b in memory.semantic.ancestors(ids[0])
                if b.kind != "root"
            ]
        return ids, len(fresh), path

    def export_memories(self, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Every memory of a namespace in the order it was remembered, as records ``import`` reads."""
        memory = self.memory(namespace)
        if memory is None:
            return
        for leaf in sorted(memory.leaves.values(), key=lambda leaf: leaf.seq):
            record: dict[str, Any] = {
                "content": leaf.text,
                "role": leaf.role,
                "timestamp": datetime.fromtimestamp(leaf.timestamp, tz=UTC).isoformat(),
            }
            if leaf.session is not None:
                record["session"] = leaf.session
            if leaf.tags:
                record["tags"] = list(leaf.tags)
            yield record

    def recall(
        self,
        query: str,
        k: int = 8,
        max_tokens: int | None = None,
        namespace: str | None = None,
        *,
        strategy: str = "hybrid",
        kind: str = "any",
        time_from: str | None = None,
        time_to: str | None = None,
        tags: Sequence[str] = (),
        session: str | None = None,
        expand: bool = False,
        as_of: str | None = None,
    ) -> RecallResult:
        """The ``k`` best memories and summaries for ``query`` that pass the filters, within ``max_tokens``.

        ``strategy`` is one of STRATEGIES (``hybrid``: dense + lexical with propagation along time;
        ``collapsed``: dense over every node); ``kind`` is ``any``, ``leaf`` or ``summary``; the time
        filters are ISO 8601; ``tags`` keeps memories with any of them; ``expand`` replaces summaries
        by their best memories; ``as_of`` (a version number or an ISO 8601 time) recalls from the
        memory as it was then. Raises InvalidInput for bad arguments.
        """
        name = self._namespace(namespace)
        text = check_text(query, "query", MAX_QUERY_CHARS)
        check_range(k, "k", 1, MAX_K)
        if max_tokens is not None:
            check_range(max_tokens, "max_tokens", 1, MAX_TOKENS)
        if strategy not in STRATEGIES:
            raise InvalidInput(f"unknown strategy {strategy!r}; use one of: {', '.join(STRATEGIES)}.")
        if kind not in KINDS:
            raise InvalidInput(f"unknown kind {kind!r}; use one of: {', '.join(KINDS)}.")
        where = RecallFilter(
            kind=kind,  # type: ignore[arg-type]
            time_from=parse_timestamp(time_from) if time_from is not None else None,
            time_to=parse_timestamp(time_to) if time_to is not None else None,
            tags=check_tags(tags),
            session=check_session(session),
        )
        space = self._space(name, create=False)
        if space is None:
            return RecallResult(hits=[], namespace=name)
        vector = self.embedder.embed_batch([text])[0]
        with space.lock:
            self._follow_table(space)
            memory = space.memory if as_of is None else self._memory_as_of(space, as_of)
            hits = memory.recall(
                vector,
                k,
                query_text=text,
                strategy=strategy,
                where=where,
                max_tokens=max_tokens,
                expand=bool(expand),
            )
        return RecallResult(hits=[_recall_hit(hit) for hit in hits], namespace=name)

    def summarize(
        self,
        node_id: str | None = None,
        time_from: str | None = None,
        time_to: str | None = None,
        query: str | None = None,
        max_tokens: int = 400,
        namespace: str | None = None,
        *,
        answers: Sequence[tuple[SummaryQuestion, str]] = (),
    ) -> SummaryResult:
        """A summary of the whole memory, of the subtree under ``node_id``, of a period or of a subject.

        Give at most one of ``node_id``, a period (``time_from``/``time_to``, ISO 8601) and ``query``.
        ``answers`` are summaries the client's model wrote for :meth:`summary_questions` (MCP
        sampling); they are stored first, so the summary shows them. Raises InvalidInput for bad
        arguments and NotFound for an unknown node.
        """
        if answers:
            self.apply_summaries(namespace, answers)
        plan = self._summary_plan(node_id, time_from, time_to, query, max_tokens, namespace)
        if plan is None:
            return SummaryResult(summary="", node_ids=[], namespace=self._namespace(namespace))
        return SummaryResult(summary=plan.found.text, node_ids=plan.found.node_ids, namespace=plan.name)

    def summary_questions(
        self,
        node_id: str | None = None,
        time_from: str | None = None,
        time_to: str | None = None,
        query: str | None = None,
        max_tokens: int = 400,
        namespace: str | None = None,
    ) -> list[SummaryQuestion]:
        """What to ask the client's model before this summary is composed (MCP sampling).

        One question per summary about to be shown (or summarised into it) that still awaits an LLM
        summary, at most MAX_INLINE_SUMMARIES. Empty without MEMTREE_LLM.
        """
        if not self.refining:
            return []
        plan = self._summary_plan(node_id, time_from, time_to, query, max_tokens, namespace)
        if plan is None:
            return []
        from memtree_mcp.refine import summary_inputs, summary_prompt

        shown = list(dict.fromkeys([*plan.found.node_ids, *plan.start]))
        questions: list[SummaryQuestion] = []
        with plan.space.lock:
            memory = plan.space.memory
            for candidate in shown:
                branch = memory.branch(candidate)
                if branch is None or not branch.pending:
                    continue
                request = summary_inputs(memory, branch)
                system, user = summary_prompt(request)
                questions.append(SummaryQuestion(candidate, request.fingerprint, system, user))
                if len(questions) == MAX_INLINE_SUMMARIES:
                    break
        return questions

    def _summary_plan(
        self,
        node_id: str | None,
        time_from: str | None,
        time_to: str | None,
        query: str | None,
        max_tokens: int,
        namespace: str | None,
    ) -> _SummaryPlan | None:
        name = self._namespace(namespace)
        check_range(max_tokens, "max_tokens", MIN_SUMMARY_TOKENS, MAX_TOKENS)
        period = time_from is not None or time_to is not None
        if sum([node_id is not None, period, query is not None]) > 1:
            raise InvalidInput("give one of node_id, a period (time_from/time_to) or query, not several.")
        low = parse_timestamp(time_from) if time_from is not None else None
        high = parse_timestamp(time_to) if time_to is not None else None
        text = check_text(query, "query", MAX_QUERY_CHARS) if query is not None else None
        vector = self.embedder.embed_batch([text])[0] if text is not None else None
        space = self._space(name, create=False)
        if space is None:
            return None
        with space.lock:
            self._follow_table(space)
            memory = space.memory
            tree: Hierarchy = memory.semantic
            if node_id is not None:
                start = [check_node(memory, node_id)]
                branch = memory.branch(node_id)
                if branch is not None and branch.tree == "temporal":
                    tree = memory.temporal
            elif period:
                tree = memory.temporal
                start = period_nodes(memory, low, high)
            elif vector is not None:
                assert text is not None
                picked = memory.recall(
                    vector, 5, query_text=text, strategy="collapsed", where=RecallFilter(kind="summary")
                )
                start = [h.id for h in picked if h.tree == "semantic"]
                if not start:
                    start = [
                        h.id
                        for h in memory.recall(vector, 5, query_text=text, where=RecallFilter(kind="leaf"))
                    ]
            else:
                start = list(memory.semantic.root.children)
            found = summarize_nodes(memory, tree, start, max_tokens)
        return _SummaryPlan(name, space, start, found)

    def forget(
        self,
        node_id: str | None = None,
        query: str | None = None,
        confirm: bool = False,
        namespace: str | None = None,
    ) -> ForgetResult:
        """Delete a memory, or every memory under a summary (with ``confirm``), or those a query finds.

        A query without ``confirm`` only lists the candidates. Deleted memories leave both trees,
        every summary above them is recomputed without them, and all of it is one commit.
        Raises InvalidInput for bad arguments and NotFound for an unknown node.
        """
        name = self._namespace(namespace)
        if (node_id is None) == (query is None):
            raise InvalidInput("give either node_id (a memory or a summary) or query, not both or neither.")
        text = check_text(query, "query", MAX_QUERY_CHARS) if query is not None else None
        space = self._space(name, create=False)
        if space is None:
            if node_id is not None:
                raise NotFound(f"no node {node_id!r} in namespace '{name}'.")
            return ForgetResult(deleted=[], candidates=[], namespace=name)
        if text is not None and not confirm:
            found = self.recall(text, k=FORGET_CANDIDATES, kind="leaf", namespace=name)
            return ForgetResult(deleted=[], candidates=found.hits, namespace=name)
        vector = self.embedder.embed_batch([text])[0] if text is not None else None
        with space.lock, self._file_lock(name):
            self._follow_table(space)
            memory = space.memory
            if node_id is not None:
                check_node(memory, node_id)
                targets = [node_id] if node_id in memory.leaves else self._leaves_under(memory, node_id)
                if len(targets) > 1 and not confirm:
                    raise InvalidInput(
                        f"{node_id} is a summary of {len(targets)} memories; call again with confirm=true "
                        "to delete them all."
                    )
            else:
                assert vector is not None and text is not None
                hits = memory.recall(
                    vector, FORGET_CANDIDATES, query_text=text, where=RecallFilter(kind="leaf")
                )
                targets = [h.id for h in hits]
            now = time.time()
            changed: set[str] = set()
            removed: set[str] = set()
            try:
                for leaf_id in targets:
                    leaf_changed, leaf_removed = memory.remove_leaf(leaf_id)
                    changed = (changed | leaf_changed) - leaf_removed
                    removed |= leaf_removed
                # What the forgotten memories said must not survive in any LLM summary either.
                refine = self._mark_for_refinement(memory, changed - removed, forgotten=True)
                if removed:
                    from memtree_mcp.store.lance import deletion_row

                    rows = self._rows(memory, changed - removed, now)
                    rows += [deletion_row(node, memory.dimension, now) for node in sorted(removed)]
                    assert space.table is not None
                    space.version = space.table.commit(rows)
            except BaseException:
                self._reload(space)
                raise
            self._submit(name, refine)
        log.info("forgot %d memories in namespace %s", len(targets), name)
        return ForgetResult(deleted=targets, candidates=[], namespace=name)

    @staticmethod
    def _leaves_under(memory: Memory, node_id: str) -> list[str]:
        branch = memory.branch(node_id)
        assert branch is not None
        tree = memory.semantic if branch.tree == "semantic" else memory.temporal
        return tree.leaves_under(node_id)

    def navigate(
        self,
        node_id: str | None = None,
        move: str = "stay",
        index: int | None = None,
        tree: str = "semantic",
        query: str | None = None,
        agent: bool = False,
        max_steps: int = 12,
        namespace: str | None = None,
        *,
        generator: TextGenerator | None = None,
    ) -> NavigateResult:
        """Move a cursor through a tree (HAT), or with ``agent`` let the memory agent walk it for ``query``.

        Moves: stay, reset, up, down (child ``index``; the best child for ``query`` without one),
        left, right, switch (to the other tree). Raises InvalidInput for an impossible move or bad
        arguments, NotFound for an unknown node.
        """
        name = self._namespace(namespace)
        check_tree(tree)
        if move not in MOVES:
            raise InvalidInput(f"unknown move {move!r}; use one of: {', '.join(MOVES)}.")
        check_range(max_steps, "max_steps", 1, MAX_AGENT_STEPS)
        if index is not None:
            check_range(index, "index", 0, MAX_CHILD_INDEX)
        text = check_text(query, "query", MAX_QUERY_CHARS) if query is not None else None
        if agent and text is None:
            raise InvalidInput("agent=true needs a query: what the agent should look for.")
        vector = self.embedder.embed_batch([text])[0] if text is not None else None
        space = self._space(name, create=False)
        memory = space.memory if space is not None else Memory(self.embedder.dimension)
        lock = space.lock if space is not None else threading.RLock()
        with lock:
            if space is not None:
                self._follow_table(space)
                memory = space.memory
            if node_id is not None:
                check_node(memory, node_id)
            try:
                if agent:
                    assert vector is not None
                    model = generator or self.llm()
                    policy = EmbeddingPolicy() if model is None else self._agent_policy(model, text, lock)
                    run = run_agent(memory, vector, tree, policy, max_steps)
                    return NavigateResult(
                        node=_node_view(run.node),
                        moves=run.moves,
                        sufficient=run.sufficient,
                        context=[
                            ContextLine(id=c.id, text=c.text, score=round(c.score, 4)) for c in run.context
                        ],
                        namespace=name,
                    )
                shown = move_cursor(memory, node_id, move, tree, index=index, query_vector=vector)
            except NavigationError as exc:
                raise InvalidInput(str(exc)) from None
        return NavigateResult(node=_node_view(shown), moves=[], sufficient=None, context=[], namespace=name)

    def history(self, namespace: str | None = None) -> list[tuple[int, str]]:
        """The versions a namespace's table keeps, oldest first: (version, ISO 8601 time written)."""
        space = self._space(self._namespace(namespace), create=False)
        if space is None:
            return []
        assert space.table is not None
        return [(version, format_timestamp(at)) for version, at in space.table.versions()]

    def restore(self, to: str, namespace: str | None = None) -> tuple[int, int]:
        """Bring back the memory as it was at version or time ``to``, as a new version.

        Returns (the version restored, the new latest version). Nothing is destroyed: restoring
        again to the version before undoes it. Raises InvalidInput or StoreError for an unknown
        version, NotFound for an empty namespace.
        """
        name = self._namespace(namespace)
        space = self._space(name, create=False)
        if space is None:
            raise NotFound(f"namespace '{name}' holds nothing to restore.")
        assert space.table is not None
        with space.lock, self._file_lock(name):
            version = self._resolve_version(space, to)
            try:
                space.version = space.table.restore(version)
            finally:
                self._reload(space)
        log.info("restored namespace %s to version %d", name, version)
        return version, space.version

    def _resolve_version(self, space: _Space, when: str) -> int:
        assert space.table is not None
        versions = space.table.versions()
        if isinstance(when, str) and when.strip().isdigit():
            wanted = int(when)
            if wanted not in {v for v, _ in versions}:
                known = f"{versions[0][0]} to {versions[-1][0]}" if versions else "none"
                raise InvalidInput(f"no version {wanted}; the versions kept are {known}.")
            return wanted
        moment = parse_timestamp(when)
        # Times are shown to the second (`history`), so a version counts from the second it was written.
        earlier = [v for v, at in versions if math.floor(at) <= moment]
        if not earlier:
            raise InvalidInput(
                f"the memory has no version as old as {when}; `memtree-mcp history` lists them."
            )
        return earlier[-1]

    def _memory_as_of(self, space: _Space, when: str) -> Memory:
        assert space.table is not None
        snapshot = space.table.read(self._resolve_version(space, when))
        memory = Memory(self.embedder.dimension)
        memory.load(snapshot.leaves, snapshot.branches)
        return memory

    def doctor(self, namespace: str | None = None, *, repair: bool = False) -> list[Problem]:
        """Check every invariant of both trees and the indexes of one namespace, read afresh from disk.

        With ``repair``, a namespace with problems gets its trees rebuilt from its memories (same
        ids, same texts, same vectors, same order), written as one commit; the problems found
        before the repair are returned either way. Raises NotFound for an empty namespace.
        """
        name = self._namespace(namespace)
        space = self._space(name, create=False)
        if space is None:
            raise NotFound(f"namespace '{name}' holds nothing to check.")
        assert space.table is not None
        with space.lock, self._file_lock(name):
            snapshot = space.table.read()
            checked = Memory(self.embedder.dimension)
            try:
                checked.load(snapshot.leaves, snapshot.branches)
                problems = memory_problems(checked)
            except Exception as exc:  # a store too broken to load is one problem, and repairable
                problems = [Problem("leaves", None, f"the stored trees cannot be loaded: {exc}")]
            if problems and repair:
                rebuilt = Memory(self.embedder.dimension)
                for leaf in sorted(snapshot.leaves, key=lambda leaf: leaf.seq):
                    rebuilt.add_leaf(leaf)
                now = time.time()
                nodes = set(rebuilt.leaves) | set(rebuilt.semantic.branches) | set(rebuilt.temporal.branches)
                stale = {b.id for b in snapshot.branches} - nodes
                from memtree_mcp.store.lance import deletion_row

                self._mark_for_refinement(rebuilt, nodes, forgotten=True)
                rows = self._rows(rebuilt, nodes, now)
                rows += [deletion_row(node, rebuilt.dimension, now) for node in sorted(stale)]
                space.version = space.table.commit(rows)
                self._reload(space)
                log.warning("repaired namespace %s: %d problem(s), trees rebuilt", name, len(problems))
        return problems

    def reindex(
        self, namespace: str | None = None, *, temporal_policy: str = "cosine", batch: int = 256
    ) -> tuple[int, str, int]:
        """Re-embed every memory of a namespace with the configured embedder and rebuild both trees.

        For moving a store to a new embedder (the store refuses to be opened with another one
        until then), or for rebuilding the temporal tree with ``temporal_policy="llm"``: the
        configured LLM decides each segment boundary (SegTreeMem's batch-LLM compatibility), one
        call per memory. Memories keep their ids, texts, times and order. Written as one new
        version; earlier versions stay in ``history``. Stop servers using the namespace first.
        Returns (memories, the embedder the store was built with, the new version).
        """
        name = self._namespace(namespace)
        if temporal_policy not in ("cosine", "llm"):
            raise InvalidInput(f"unknown temporal policy {temporal_policy!r}; use 'cosine' or 'llm'.")
        policy: CompatibilityPolicy | None = None
        if temporal_policy == "llm":
            generator = self.llm()
            if generator is None:
                raise InvalidInput(
                    "temporal_policy 'llm' needs an LLM: set MEMTREE_LLM=litellm:<model> "
                    "(and MEMTREE_LLM_API_BASE for a local server)."
                )
            from memtree_mcp.llm_policies import BatchLLMPolicy

            policy = BatchLLMPolicy(generator)
        with self._file_lock(name):
            found = self.store.read_any(name)
            if found is None:
                raise NotFound(f"namespace '{name}' holds nothing to re-index.")
            snapshot, old_embedder, _old_dimension = found
            leaves = sorted(snapshot.leaves, key=lambda leaf: leaf.seq)
            rebuilt = Memory(self.embedder.dimension, temporal_policy=policy)
            for start in range(0, len(leaves), batch):
                part = leaves[start : start + batch]
                vectors = self.embedder.embed_batch([leaf.text for leaf in part])
                for leaf, vector in zip(part, vectors, strict=True):
                    leaf.vector = vector
                    rebuilt.add_leaf(leaf)
            nodes = set(rebuilt.leaves) | set(rebuilt.semantic.branches) | set(rebuilt.temporal.branches)
            refine = self._mark_for_refinement(rebuilt, nodes, forgotten=True)
            version = self.store.replace(name, self._rows(rebuilt, nodes, time.time()))
            with self._lock:
                self._spaces.pop(name, None)
        self._submit(name, refine)
        log.info("re-indexed %d memories of namespace %s (was %s)", len(leaves), name, old_embedder)
        return len(leaves), old_embedder, version

    def namespaces(self) -> list[tuple[str, int]]:
        """Every namespace with the number of memories it holds."""
        counts: list[tuple[str, int]] = []
        for name in self.store.namespaces():
            memory = self.memory(name)
            counts.append((name, len(memory.leaves) if memory is not None else 0))
        return counts

    def outline(self, tree: str = "semantic", depth: int = 3, namespace: str | None = None) -> str:
        """A tree as indented lines down to ``depth``: each branch's label, memories and time span."""
        check_tree(tree)
        check_range(depth, "depth", 1, MAX_OUTLINE_DEPTH)
        memory = self.memory(namespace)
        if memory is None:
            return "(no memories yet)"
        hierarchy: Hierarchy = memory.semantic if tree == "semantic" else memory.temporal
        lines: list[str] = [f"{tree} tree: {len(memory.leaves)} memories"]
        stack = [(child, 1) for child in reversed(hierarchy.root.children)]
        while stack:
            node_id, level = stack.pop()
            node = memory.node(node_id)
            pad = "  " * (level - 1)
            if isinstance(node, Leaf):
                lines.append(f"{pad}- {node.text[:80]} [{node_id}]")
                continue
            span = f"{format_timestamp(node.first_ts)[:10]} to {format_timestamp(node.last_ts)[:10]}"
            lines.append(
                f"{pad}+ {node.label or '(untitled)'}: {node.leaf_count} memories, {span} [{node_id}]"
            )
            if level < depth:
                stack.extend((child, level + 1) for child in reversed(node.children))
        return "\n".join(lines)

    def node_view(self, node_id: str, namespace: str | None = None) -> NodeView:
        """One node (a memory or a summary) as navigate shows it, in the tree it belongs to."""
        memory = self.memory(namespace)
        if memory is None:
            raise NotFound(f"no node {node_id!r}: the namespace holds nothing yet.")
        check_node(memory, node_id)
        branch = memory.branch(node_id)
        tree = branch.tree if branch is not None else "semantic"
        return _node_view(view_node(memory, node_id, tree))

    def warm_up(self) -> None:
        """Load the embedder and the default namespace now, so the first real call is fast.

        Errors are only logged: the call that needs the failing part reports them properly.
        """
        started = time.perf_counter()
        try:
            self.embedder.embed_batch(["warm up"])
            self.memory()
        except Exception as exc:  # a warm-up must never take the server down
            log.warning("warm-up stopped: %s", exc)
            return
        log.info("warm-up done in %.0f ms", (time.perf_counter() - started) * 1000)

    def close(self) -> None:
        """Stop refining and release the store; the service can be used again (it reopens lazily).

        Branches still awaiting an LLM summary stay marked in the store; the next start finishes them.
        """
        with self._lock:
            refiner, self._refiner = self._refiner, None
        if refiner is not None:
            refiner.close()
        with self._lock:
            self._spaces.clear()
            self._store = None

    # -- LLM refinement ----------------------------------------------------------------------------

    @property
    def refining(self) -> bool:
        """Whether an LLM is configured to write summaries (MEMTREE_LLM other than 'none')."""
        return self.settings.llm != "none"

    @property
    def refining_in_background(self) -> bool:
        """Whether summaries are written by the background worker (litellm; sampling works per request)."""
        return self._background and self.settings.llm.startswith("litellm:")

    def llm(self) -> TextGenerator | None:
        """The model that writes summaries and walks for the agent now, or None (extractive only).

        For ``litellm:<model>`` it is built on first use. With ``sampling`` there is no model outside
        a client's request: the MCP tools pass the client's model to ``summarize`` and ``navigate``.
        """
        spec = self.settings.llm
        if spec.startswith("litellm:"):
            with self._lock:
                if self._llm is None:
                    from memtree_mcp.providers.llm import LiteLLMChat

                    self._llm = LiteLLMChat(
                        spec.removeprefix("litellm:"),
                        api_base=self.settings.llm_api_base,
                        api_key=self.settings.llm_api_key,
                        timeout=self.settings.llm_timeout,
                        retries=self.settings.llm_retries,
                    )
                return self._llm
        return None

    @property
    def refiner(self) -> Refiner:
        """The background worker writing LLM summaries (created on first use)."""
        with self._lock:
            if self._refiner is None:
                from memtree_mcp.refine import Refiner

                self._refiner = Refiner(
                    self.refine_branch,
                    self._pending,
                    self.llm,
                    capacity=self.settings.refine_queue,
                    workers=self.settings.llm_workers,
                )
            return self._refiner

    def refine_pending(self, namespace: str | None = None, timeout: float = 3_600.0) -> tuple[int, int]:
        """Write the LLM summaries a namespace still waits for, now; returns (written, still pending).

        Raises InvalidInput when no LLM is configured and ProviderError when the LLM fails.
        """
        name = self._namespace(namespace)
        generator = self.llm()
        if generator is None:
            raise InvalidInput(
                "no LLM is configured to write summaries; set MEMTREE_LLM=litellm:<model> "
                "(sampling works only inside a client session)."
            )
        written = 0
        deadline = time.monotonic() + timeout
        for _depth, node_id in self._pending(name):
            if time.monotonic() > deadline:
                break
            written += int(self.refine_branch(name, node_id, generator))
        return written, len(self._pending(name))

    def refine_branch(self, name: str, node_id: str, generator: TextGenerator) -> bool:
        """Write one pending branch's LLM summary and commit it; False when nothing was committed.

        The model is asked without holding any lock; the summary is committed only if the branch's
        inputs are still those it was written from. Raises ProviderError when the model fails.
        """
        from memtree_mcp.refine import summary_inputs, write_summary

        space = self._space(name, create=False)
        if space is None:
            return False
        with space.lock:
            self._follow_table(space)
            branch = space.memory.branch(node_id)
            if branch is None or not branch.pending:
                return False
            request = summary_inputs(space.memory, branch)
        worker = self._refiner
        text = write_summary(generator, request)
        if worker is not self._refiner:
            return False  # the service was closed while the model wrote: leave the branch pending
        return self._commit_summaries(name, [(node_id, request.fingerprint, text)]) == 1

    def apply_summaries(self, namespace: str | None, answers: Sequence[tuple[SummaryQuestion, str]]) -> int:
        """Store the client model's answers to :meth:`summary_questions`; returns how many were stored.

        An answer is stored only if its branch still has the inputs the question was asked about;
        an empty answer is skipped (the extractive text stays).
        """
        from memtree_mcp.refine import clean_summary

        done: list[tuple[str, str, str]] = []
        for question, answer in answers:
            try:
                done.append((question.node_id, question.fingerprint, clean_summary(answer)))
            except ProviderError as exc:
                log.warning("the client's model gave no usable summary: %s", exc)
        return self._commit_summaries(self._namespace(namespace), done) if done else 0

    def _commit_summaries(self, name: str, done: Sequence[tuple[str, str, str]]) -> int:
        """Commit (branch id, input fingerprint, summary) triples still current, in one commit."""
        from memtree_mcp.refine import summary_inputs

        space = self._space(name, create=False)
        if space is None:
            return 0
        with space.lock, self._file_lock(name):
            self._follow_table(space)
            memory = space.memory
            changed: set[str] = set()
            for node_id, fingerprint, text in done:
                branch = memory.branch(node_id)
                if branch is None or not branch.pending:
                    continue
                if summary_inputs(memory, branch).fingerprint != fingerprint:
                    continue  # changed since it was asked; it is pending again
                branch.summary, branch.summary_seq, branch.pending = text, branch.last_seq, False
                branch.text = text
                changed.add(node_id)
            if changed:
                try:
                    assert space.table is not None
                    space.version = space.table.commit(self._rows(memory, changed, time.time()))
                except BaseException:
                    self._reload(space)
                    raise
        return len(changed)

    @staticmethod
    def _agent_policy(model: TextGenerator, query: str | None, lock: threading.RLock) -> Policy:
        from memtree_mcp.llm_policies import LLMNavigationPolicy

        return _Unlocked(LLMNavigationPolicy(model, query or ""), lock)

    def _pending(self, name: str) -> list[tuple[int, str]]:
        memory = self.memory(name)
        return pending_branches(memory) if memory is not None else []

    def _mark_for_refinement(
        self, memory: Memory, changed: Iterable[str], *, forgotten: bool
    ) -> list[tuple[int, str]]:
        """Mark changed branches as awaiting an LLM summary; returns them as (depth, id).

        A branch keeps showing its last LLM summary until the new one is written, unless memories
        under it were forgotten (the summary may mention them) or no LLM is configured any more.
        """
        nodes: list[tuple[int, str]] = []
        for node_id in changed:
            branch = memory.branch(node_id)
            if branch is None:
                continue
            if forgotten or not self.refining:
                branch.summary, branch.summary_seq = "", -1
            elif branch.summary:
                branch.text = branch.summary
            branch.pending = self.refining
            if self.refining:
                nodes.append((branch.depth, node_id))
        return nodes

    def _submit(self, name: str, nodes: list[tuple[int, str]]) -> None:
        if nodes and self.refining_in_background:
            self.refiner.submit(name, nodes)

    # -- state -----------------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                from memtree_mcp.providers import make_embedder

                self._embedder = make_embedder(
                    self.settings.embedder,
                    api_base=self.settings.embedder_api_base,
                    api_key=self.settings.embedder_api_key,
                )
            return self._embedder

    @property
    def store(self) -> LanceStore:
        embedder = self.embedder
        with self._lock:
            if self._store is None:
                from memtree_mcp.store.lance import LanceStore, object_store_options

                home = self.settings.home
                options = object_store_options(
                    home,
                    endpoint=self.settings.s3_endpoint,
                    region=self.settings.s3_region,
                    allow_http=self.settings.s3_allow_http,
                )
                self._store = LanceStore(home, embedder.identity, embedder.dimension, options)
            return self._store

    def read(self, reader: Callable[[Memory], T], namespace: str | None = None) -> T | None:
        """``reader`` applied to a namespace's up-to-date memory while no writer can change it.

        None when the namespace holds nothing yet. For callers that walk the trees (the explorer):
        ``memory()`` hands out the live object, which a concurrent ``remember`` may be changing.
        """
        space = self._space(self._namespace(namespace), create=False)
        if space is None:
            return None
        with space.lock:
            self._follow_table(space)
            return reader(space.memory)

    def resolve_namespace(self, namespace: str | None = None) -> str:
        """The namespace a call means: the one it names, else the configured default."""
        return self._namespace(namespace)

    def memory(self, namespace: str | None = None) -> Memory | None:
        """The up-to-date in-memory state of a namespace, or None when it holds nothing yet."""
        space = self._space(self._namespace(namespace), create=False)
        if space is None:
            return None
        with space.lock:
            self._follow_table(space)
            return space.memory

    def _namespace(self, namespace: str | None) -> str:
        return check_namespace(namespace, self.settings.namespace)

    def _open_space(self, name: str) -> _Space:
        space = self._space(name, create=True)
        assert space is not None  # create=True always yields a table
        return space

    def _space(self, name: str, *, create: bool) -> _Space | None:
        with self._lock:
            space = self._spaces.get(name)
        if space is not None and space.table is not None:
            return space
        table = self.store.open(name, create=create)
        if table is None:
            return None
        with self._lock:
            space = self._spaces.get(name)
            if space is None or space.table is None:
                space = _Space(name=name, memory=Memory(self.embedder.dimension), table=table)
                self._spaces[name] = space
        return space

    def _follow_table(self, space: _Space) -> None:
        assert space.table is not None
        if space.table.latest_version() != space.version:
            self._reload(space)

    def _reload(self, space: _Space) -> None:
        assert space.table is not None
        started = time.perf_counter()
        snapshot = space.table.read()
        memory = Memory(self.embedder.dimension)
        memory.load(snapshot.leaves, snapshot.branches)
        space.memory = memory
        space.version = snapshot.version
        if self.refining_in_background:
            waiting = pending_branches(memory)
            if waiting:
                self.refiner.submit(space.name, waiting)
        log.debug(
            "loaded namespace %s at version %d (%d leaves) in %.0f ms",
            space.name,
            snapshot.version,
            len(snapshot.leaves),
            (time.perf_counter() - started) * 1000,
        )

    def _file_lock(self, name: str) -> FileLock:
        # Writers on this machine serialise through a local file; for an object-store home it
        # cannot live in the store, and it does not reach other machines (docs/deploy.md).
        home = self.settings.home
        if self.settings.lock_dir is not None or "://" in home:
            base = self.settings.lock_dir or platformdirs.user_cache_dir("memtree-mcp", appauthor=False)
            # One folder per store, so two buckets' namespaces of the same name do not share a lock.
            folder = Path(base) / "locks" / hashlib.sha256(home.rstrip("/").encode()).hexdigest()[:16]
        else:
            folder = Path(home) / ".locks"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return FileLock(str(folder / f"{name}.lock"))

    def _rows(self, memory: Memory, changed: set[str], now: float) -> list[dict[str, Any]]:
        from memtree_mcp.store.lance import branch_row, leaf_row

        rows: list[dict[str, Any]] = []
        for node_id in sorted(changed):
            leaf = memory.leaves.get(node_id)
            if leaf is not None:
                semantic_parent = memory.semantic.parent_of.get(node_id)
                temporal_parent = memory.temporal.parent_of.get(node_id)
                depth = memory.semantic.depth_of(node_id)
                rows.append(leaf_row(leaf, semantic_parent, temporal_parent, depth, now))
            else:
                rows.append(branch_row(memory.node(node_id), memory.dimension, now))  # type: ignore[arg-type]
        return rows


class _Unlocked:
    """A navigation policy that lets writers in while it thinks: an LLM step takes seconds, and
    ``remember`` must never wait on an LLM. The walk then continues on the memory as it is."""

    def __init__(self, policy: Policy, lock: threading.RLock) -> None:
        self._policy = policy
        self._lock = lock

    def decide(self, *args: Any) -> str:
        self._lock.release()
        try:
            return self._policy.decide(*args)
        finally:
            self._lock.acquire()


def pending_branches(memory: Memory) -> list[tuple[int, str]]:
    """(depth, id) of every branch awaiting an LLM summary, deepest first."""
    found = [
        (branch.depth, branch.id)
        for tree in (memory.semantic, memory.temporal)
        for branch in tree.branches.values()
        if branch.pending
    ]
    return sorted(found, key=lambda item: (-item[0], item[1]))


def content_hash(text: str) -> str:
    """The identity of a chunk's exact text, for deduplication."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_leaf_id() -> str:
    """A fresh, unique id for a leaf."""
    return "m" + uuid.uuid4().hex[:15]


def _node_view(shown: CursorView) -> NodeView:
    data = shown.as_dict()
    empty = shown.leaf_count == 0
    data["time_from"] = None if empty else format_timestamp(shown.first_ts)
    data["time_to"] = None if empty else format_timestamp(shown.last_ts)
    data["score"] = None if shown.score is None else round(shown.score, 4)
    return NodeView.model_validate(data)


def _recall_hit(hit: Hit) -> RecallHit:
    return RecallHit(
        id=hit.id,
        text=hit.text,
        kind=hit.kind,
        tree=hit.tree,
        depth=hit.depth,
        score=round(hit.score, 4),
        time_from=format_timestamp(hit.first_ts),
        time_to=format_timestamp(hit.last_ts),
        breadcrumb=hit.breadcrumb,
    )

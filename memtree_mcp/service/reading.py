"""The read path: recall, summaries, navigation and views of the trees.

Every read follows other processes first (:meth:`Spaces.reading`) and holds the namespace's lock
only while it walks the trees: queries are embedded before, results are turned into the models
the tools return after.

Nothing forgotten is read back: the live trees no longer hold it, and ``as_of`` rebuilds an
earlier version from its memories that still exist (:func:`~memtree_mcp.service.versions.memory_as_of`).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from memtree_mcp.core.embedding import Embedder, embed_queries, recall_weights
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import KINDS, MOVES, STRATEGIES
from memtree_mcp.core.ranking.recall import DEFAULT_WEIGHTS, Hit, RankRequest, RecallFilter, Weights, rank
from memtree_mcp.core.ranking.relevance import DEFAULT_MIN_RELEVANCE
from memtree_mcp.core.ranking.shortlist import dense_query
from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.core.trees.hierarchy import Hierarchy
from memtree_mcp.core.trees.model import Branch, makers_of
from memtree_mcp.core.trees.temporal import time_key
from memtree_mcp.core.walking.agent import EmbeddingPolicy, Policy, run_agent
from memtree_mcp.core.walking.navigation import CursorView, NavigationError
from memtree_mcp.core.walking.navigation import move as move_cursor
from memtree_mcp.core.walking.navigation import view as view_node
from memtree_mcp.core.walking.summary import Summary, period_nodes, summarize_nodes
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.llm.chat import TextGenerator
from memtree_mcp.secrets.detection import quoted
from memtree_mcp.service.indexing import Indexes
from memtree_mcp.service.inputs import (
    FORGET_CANDIDATES,
    MAX_AGENT_STEPS,
    MAX_CHILD_INDEX,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_TOKENS,
    MIN_SUMMARY_TOKENS,
    check_flag,
    check_node,
    check_range,
    check_session,
    check_share,
    check_tags,
    check_text,
    check_tree,
    format_timestamp,
    parse_timestamp,
)
from memtree_mcp.service.outline import plain_outline
from memtree_mcp.service.refine import Refinement, SummaryQuestion
from memtree_mcp.service.rendering import recall_cost
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.service.results import ContextLine, NavigateResult, NodeView, RecallHit, RecallResult
from memtree_mcp.service.spaces import Space, Spaces
from memtree_mcp.service.versions import memory_as_of

T = TypeVar("T")
# The strategies recalled in two stages in a namespace large enough (service/indexing.py).
SHORTLISTED = ("gather", "hybrid")
# The summaries (or, before there are any, the memories) a subject's summary starts from.
SUBJECT_START = 5
# The fewest tokens a summary line takes: "- x (2026-11-20) [m0123456789abcdef]" and its line break.
SHORTEST_SUMMARY_LINE = 10


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """Where a summary starts (the nodes asked about) and what it says."""

    space: Space
    start: list[str]
    found: Summary


def rank_request(request: RecallRequest, calendar: Calendar) -> RankRequest:
    """What core's ranking reads of ``request``, every argument checked, not yet embedded: the
    reader builds it once (:meth:`Reader.recall_hits`). Times without a zone are ``calendar``'s (the
    namespace's). Raises InvalidInput for a bad argument."""
    text = check_text(request.query, "query", MAX_QUERY_CHARS)
    check_range(request.k, "k", 1, MAX_K)
    check_share(request.min_relevance, "min_relevance")
    if request.max_tokens is not None:
        check_range(request.max_tokens, "max_tokens", 1, MAX_TOKENS)
    if request.strategy not in STRATEGIES:
        raise InvalidInput(
            f"unknown strategy {quoted(request.strategy)}; use one of: {', '.join(STRATEGIES)}."
        )
    if request.kind not in KINDS:
        raise InvalidInput(f"unknown kind {quoted(request.kind)}; use one of: {', '.join(KINDS)}.")
    check_flag(request.expand, "expand")
    low, high = _period(request.time_from, request.time_to, calendar)
    where = RecallFilter(
        kind=request.kind,
        time_from=low,
        time_to=high,
        tags=check_tags(request.tags),
        session=check_session(request.session),
    )
    return RankRequest(
        k=request.k,
        query_text=text,
        strategy=request.strategy,
        where=where,
        max_tokens=request.max_tokens,
        min_relevance=request.min_relevance,
        expand=request.expand,
        supersede=True,
        cost=recall_cost,
        # "min_relevance: 0 returns every hit ranked" (the README), whatever the query.
        every=request.min_relevance == 0,
    )


class Reader:
    """Answers every question about the memory; never writes (LLM summaries go to Refinement)."""

    def __init__(
        self, spaces: Spaces, embedder: Callable[[], Embedder], refinement: Refinement, indexes: Indexes
    ) -> None:
        self._spaces = spaces
        self._embedder = embedder
        self._refinement = refinement
        self._indexes = indexes

    def _embed(self, text: str) -> Any:
        return embed_queries(self._embedder(), [text])[0]

    def _weights(self) -> Weights:
        """Recall's constants for the configured embedder: the defaults, and what it sets otherwise."""
        changed: dict[str, Any] = recall_weights(self._embedder())
        return dataclasses.replace(DEFAULT_WEIGHTS, **changed) if changed else DEFAULT_WEIGHTS

    def read(self, reader: Callable[[Memory], T], name: str) -> T | None:
        """``reader`` applied to namespace ``name``'s up-to-date memory while no writer can change
        it; None when the namespace holds nothing yet."""
        with self._spaces.reading(name) as space:
            return reader(space.memory) if space is not None else None

    def memory(self, name: str) -> Memory | None:
        """The up-to-date in-memory state of namespace ``name``, or None when it holds nothing yet."""
        return self.read(lambda memory: memory, name)

    def namespaces(self) -> list[tuple[str, int]]:
        """Every namespace with the number of memories it holds."""
        counts: list[tuple[str, int]] = []
        for name in self._spaces.store.namespaces():
            with self._spaces.reading(name) as space:
                counts.append((name, len(space.memory.leaves) if space is not None else 0))
        return counts

    def export_memories(self, name: str) -> Iterator[dict[str, Any]]:
        """Every memory of namespace ``name`` in time order (timestamp, then the order remembered),
        the order import stores records in, as records import reads:
        with its id, and the ids of the memories it updates (``supersedes``, those still held) with
        who made each link (``supersedes_by``), which import maps to the new memories' ids."""
        with self._spaces.reading(name) as space:
            leaves = sorted(space.memory.leaves.values(), key=time_key) if space else []
            held = space.memory.leaves if space else {}
            links = {
                leaf.id: [
                    (o, by) for o, by in zip(leaf.supersedes, makers_of(leaf), strict=True) if o in held
                ]
                for leaf in leaves
            }
        for leaf in leaves:
            record: dict[str, Any] = {
                "id": leaf.id,
                "content": leaf.text,
                "role": leaf.role,
                "timestamp": datetime.fromtimestamp(leaf.timestamp, tz=UTC).isoformat(),
            }
            if leaf.session is not None:
                record["session"] = leaf.session
            if leaf.tags:
                record["tags"] = list(leaf.tags)
            if links[leaf.id]:
                record["supersedes"] = [older for older, _ in links[leaf.id]]
                record["supersedes_by"] = [maker for _, maker in links[leaf.id]]
            yield record

    def recall_hits(self, name: str, request: RecallRequest) -> RecallResult:
        """The hits of ``request`` in namespace ``name``, or in it as it was at ``request.as_of``:
        checked (:func:`rank_request`), embedded, ranked by core (:func:`rank`). See
        :meth:`~memtree_mcp.service.MemoryService.look_up`. Raises InvalidInput for a bad argument."""
        asked = rank_request(request, self._spaces.calendar_seen(name))
        as_of = request.as_of
        known = self._spaces.get(name, create=False)
        if known is None:
            return RecallResult(hits=[], namespace=name)
        text = asked.query_text
        texts = [text]
        if asked.strategy == "gather":
            # gather also embeds the query without the authors it names, in the same batch.
            content = self._content_text(known, text)
            if content is not None:
                texts.append(content)
        vectors = embed_queries(self._embedder(), texts)
        weights = self._weights()
        shortlist = None
        if as_of is None and asked.strategy in SHORTLISTED and self._indexes.large(known.memory):
            self._indexes.touched(name, known.memory)
            content = vectors[1] if len(texts) > 1 else None
            searched = dense_query(vectors[0], content, weights.content_share)
            shortlist = self._indexes.shortlist(name, [searched])
        embedded = dataclasses.replace(
            asked,
            query=vectors[0],
            content_query=vectors[1] if len(texts) > 1 else None,
            weights=weights,
            shortlist=shortlist,
        )
        unfit: list[Hit] = []  # the hits without the budget, when none fits in it
        with self._spaces.reading(name) as space:
            assert space is not None
            if as_of is None:
                hits = rank(space.memory, embedded)
                if not hits and asked.max_tokens is not None:
                    unfit = rank(space.memory, dataclasses.replace(embedded, max_tokens=None))
            else:
                table, dimension, present = (
                    space.table,
                    space.memory.dimension,
                    frozenset(space.memory.leaves),
                )
            calendar = space.memory.calendar
        if as_of is not None:
            # Built outside the lock: a rebuilt version can take seconds, and it is this call's own.
            past = memory_as_of(table, as_of, dimension, present, calendar, self._spaces.settings.session_gap)
            hits = rank(past, embedded)
            if not hits and asked.max_tokens is not None:
                unfit = rank(past, dataclasses.replace(embedded, max_tokens=None))
        result = RecallResult(hits=[_recall_hit(hit, calendar) for hit in hits], namespace=name)
        if unfit:
            # Matches that did not fit the budget are not "nothing": say so, and what would fit.
            result.unfit, result.max_tokens = len(unfit), asked.max_tokens
            result.first_needs = math.ceil(sum(map(asked.cost or recall_cost, _first_group(unfit))))
        return result

    def forget_candidates(self, name: str, query: str) -> list[RecallHit]:
        """The memories of namespace ``name`` a forget ``query`` matches, most relevant first: at most
        FORGET_CANDIDATES of those recall shows for it, with the relevance recall shows, and none
        below DEFAULT_MIN_RELEVANCE (the weak best match recall shows alone is left out), so a query
        that matches nothing relevant lists nothing. Raises InvalidInput for a bad query."""
        text = check_text(query, "query", MAX_QUERY_CHARS)
        if self._spaces.get(name, create=False) is None:
            return []
        vector = self._embed(text)
        with self._spaces.reading(name) as space:
            assert space is not None
            hits = rank(
                space.memory,
                RankRequest(
                    query=vector,
                    k=FORGET_CANDIDATES,
                    query_text=text,
                    where=RecallFilter(kind="leaf"),
                    min_relevance=DEFAULT_MIN_RELEVANCE,
                    weights=self._weights(),
                ),
            )
            calendar = space.memory.calendar
        found = [hit for hit in hits if hit.relevance >= DEFAULT_MIN_RELEVANCE]
        found.sort(key=lambda hit: -hit.relevance)
        return [_recall_hit(hit, calendar) for hit in found]

    def _content_text(self, space: Space, text: str) -> str | None:
        """``text`` without the authors it names (``Memory.content_text``), from the memory as
        this process holds it, without waiting for its lock: authors come and go rarely, so it is
        not followed first, unless it was never loaded. Recall matches the names again on the
        memory it ranks."""
        if space.version < 0:
            with self._spaces.reading(space.name) as loaded:
                return loaded.memory.content_text(text) if loaded is not None else None
        return space.memory.content_text(text)

    def summary_plan(
        self,
        name: str,
        node_id: str | None,
        time_from: str | None,
        time_to: str | None,
        query: str | None,
        max_tokens: int,
    ) -> SummaryPlan | None:
        """The nodes a summary starts from and the summary composed from them; None for an empty
        namespace. Raises InvalidInput for bad arguments and NotFound for an unknown node."""
        check_range(max_tokens, "max_tokens", MIN_SUMMARY_TOKENS, MAX_TOKENS)
        period = time_from is not None or time_to is not None
        if sum([node_id is not None, period, query is not None]) > 1:
            raise InvalidInput("give one of node_id, a period (time_from/time_to) or query, not several.")
        low, high = _period(time_from, time_to, self._spaces.calendar_seen(name)) if period else (None, None)
        text = check_text(query, "query", MAX_QUERY_CHARS) if query is not None else None
        vector = self._embed(text) if text is not None else None
        with self._spaces.reading(name) as space:
            if space is None:
                return None
            memory = space.memory
            tree: Hierarchy = memory.semantic
            if node_id is not None:
                start = [check_node(memory, node_id)]
                branch = memory.branch(node_id)
                if branch is not None:
                    tree = memory.tree(branch.tree)
            elif period:
                tree = memory.temporal
                start = _largest(memory, period_nodes(memory, low, high), max_tokens)
            elif vector is not None:
                assert text is not None
                picked = rank(
                    memory,
                    RankRequest(
                        query=vector,
                        k=SUBJECT_START,
                        query_text=text,
                        strategy="collapsed",
                        where=RecallFilter(kind="summary"),
                    ),
                )
                start = [h.id for h in picked if h.tree == "semantic"]
                if not start:  # no summary yet: the memories recall finds for it
                    leaves = rank(
                        memory,
                        RankRequest(
                            query=vector,
                            k=SUBJECT_START,
                            query_text=text,
                            where=RecallFilter(kind="leaf"),
                            weights=self._weights(),
                        ),
                    )
                    start = [h.id for h in leaves]
            else:
                start = list(memory.semantic.root.children)
            found = summarize_nodes(memory, tree, start, max_tokens)
        return SummaryPlan(space, start, found)

    def summary_questions(self, plan: SummaryPlan) -> list[SummaryQuestion]:
        """What to ask the client's model before ``plan``'s summary is shown (MCP sampling)."""
        shown = list(dict.fromkeys([*plan.found.node_ids, *plan.start]))
        with plan.space.lock:
            return self._refinement.questions(plan.space, shown)

    def navigate(
        self,
        name: str,
        node_id: str | None,
        move: str,
        index: int | None,
        tree: str,
        query: str | None,
        agent: bool,
        max_steps: int,
        generator: TextGenerator | None,
    ) -> NavigateResult:
        """See :meth:`~memtree_mcp.service.MemoryService.navigate`."""
        check_tree(tree)
        if move not in MOVES:
            raise InvalidInput(f"unknown move {quoted(move)}; use one of: {', '.join(MOVES)}.")
        check_range(max_steps, "max_steps", 1, MAX_AGENT_STEPS)
        if index is not None:
            check_range(index, "index", 0, MAX_CHILD_INDEX)
        text = check_text(query, "query", MAX_QUERY_CHARS) if query is not None else None
        check_flag(agent, "agent")
        if agent and text is None:
            raise InvalidInput("agent=true needs a query: what the agent should look for.")
        vector = self._embed(text) if text is not None else None
        with self._spaces.reading(name) as space:
            memory = (
                space.memory
                if space is not None
                else self._spaces.new_memory(calendar=self._spaces.zones.of(name))
            )
            # Nobody else can change an empty memory made up for the walk: no lock to let go of.
            lock = space.lock if space is not None else None
            if node_id is not None:
                check_node(memory, node_id)
            try:
                if agent:
                    assert vector is not None and text is not None
                    model = generator or self._refinement.llm()
                    policy = EmbeddingPolicy() if model is None else _agent_policy(model, text, lock)
                    run = run_agent(memory, vector, tree, policy, max_steps)
                    return NavigateResult(
                        node=node_view(run.node, memory.calendar),
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
        return NavigateResult(
            node=node_view(shown, memory.calendar), moves=[], sufficient=None, context=[], namespace=name
        )

    def outline(self, name: str, tree: str, depth: int) -> str:
        """A tree as indented lines down to ``depth``: each branch's label, memories and time span."""
        text = self.read(lambda memory: plain_outline(memory, tree, depth), name)
        return plain_outline(None, tree, depth) if text is None else text

    def node_view(self, name: str, node_id: str) -> NodeView:
        """One node (a memory or a summary) as navigate shows it, in the tree it belongs to."""
        memory = self.memory(name)
        if memory is None:
            raise NotFound(f"no node {quoted(node_id)}: the namespace holds nothing yet.")
        check_node(memory, node_id)
        branch = memory.branch(node_id)
        tree = branch.tree if branch is not None else "semantic"
        return node_view(view_node(memory, node_id, tree), memory.calendar)


def _agent_policy(model: TextGenerator, query: str, lock: threading.RLock | None) -> Policy:
    from memtree_mcp.llm.policies import LLMNavigationPolicy

    policy = LLMNavigationPolicy(model, query)
    return policy if lock is None else _Unlocked(policy, lock)


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


def node_view(shown: CursorView, calendar: Calendar) -> NodeView:
    """The tool result for what the cursor shows, its times in ``calendar``'s zone."""
    data = shown.as_dict()
    empty = shown.leaf_count == 0
    data["time_from"] = None if empty else format_timestamp(shown.first_ts, calendar)
    data["time_to"] = None if empty else format_timestamp(shown.last_ts, calendar)
    data["score"] = None if shown.score is None else round(shown.score, 4)
    return NodeView.model_validate(data)


def _recall_hit(hit: Hit, calendar: Calendar) -> RecallHit:
    return RecallHit(
        id=hit.id,
        text=hit.text,
        kind=hit.kind,
        tree=hit.tree,
        depth=hit.depth,
        score=round(hit.score, 4),
        relevance=round(hit.relevance, 2),
        time_from=format_timestamp(hit.first_ts, calendar),
        time_to=format_timestamp(hit.last_ts, calendar),
        breadcrumb=hit.breadcrumb,
        covers=hit.covers,
        superseded_by=hit.superseded_by,
    )


def _period(
    time_from: str | None, time_to: str | None, calendar: Calendar
) -> tuple[float | None, float | None]:
    """``time_from`` and ``time_to`` parsed (in ``calendar``'s zone when they name none). Raises
    InvalidInput for a bad time, or for a range that ends before it starts (it would hold nothing,
    and "nothing matches" would hide why)."""
    low = parse_timestamp(time_from, calendar) if time_from is not None else None
    high = parse_timestamp(time_to, calendar) if time_to is not None else None
    if low is not None and high is not None and low > high:
        raise InvalidInput(
            f"time_from {time_from} is after time_to {time_to}: the range is empty; swap them."
        )
    return low, high


def _largest(memory: Memory, nodes: list[str], max_tokens: int) -> list[str]:
    """Of ``nodes``, at most as many as summary lines can fit in ``max_tokens``: the largest, in
    their order. ``summarize_nodes`` keeps those when they do not all fit, but prices the whole
    list again for each one it drops: a period holding a day of 5,000 sessions took it 288 s."""
    room = max(1, max_tokens // SHORTEST_SUMMARY_LINE)
    if len(nodes) <= room:
        return nodes

    def size(node_id: str) -> tuple[int, str]:
        node = memory.node(node_id)
        return (node.leaf_count if isinstance(node, Branch) else 1, node_id)

    kept = set(sorted(nodes, key=size, reverse=True)[:room])
    return [node_id for node_id in nodes if node_id in kept]


def _first_group(hits: Sequence[Hit]) -> list[Hit]:
    """The first hit with the updates it is shown with (what ``within_budget`` takes together)."""
    by_id = {hit.id: hit for hit in hits}
    group = [hits[0]]
    while (newer := group[-1].superseded_by) in by_id and by_id[newer] not in group:
        group.append(by_id[newer])
    return group

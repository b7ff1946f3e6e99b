"""MemoryService: the memory operations shared by the MCP server, the CLI and the explorer.

Two seams. The service's own methods are the calls the faces make for the tools a client calls
(remember, link, look_up, summarize, navigate, forget with its preview, outlines and node views,
namespaces, export) and its life cycle; :attr:`MemoryService.upkeep`
(:class:`~memtree_mcp.service.upkeep.Upkeep`) is what a person runs to look after a store (history,
restore, purge, doctor, re-index, zones, import, stored secrets, LLM work left over), which the
CLI's upkeep commands and the hook call there. Behind both, named parts, each changeable alone:

- :class:`~memtree_mcp.service.spaces.Spaces`: each namespace's trees in memory, the file lock, following
  other processes, and the one way to commit a change (reloading when it fails);
- :class:`~memtree_mcp.service.writing.Writer`: remember, import and forget;
- :class:`~memtree_mcp.service.reading.Reader`: recall, summaries, navigation, outlines, node views
  and export;
- :class:`~memtree_mcp.service.refine.Refinement`: LLM summaries, fed by the writers and the spaces;
- :mod:`memtree_mcp.service.inputs`: the limits and checks of every argument.

The service resolves the namespace a call means and hands the call to its part. Heavy modules
(lancedb, onnxruntime) load on first use, never at import time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.extractive import gist
from memtree_mcp.core.trees.model import LinkMaker
from memtree_mcp.errors import ConfigurationError, InvalidInput
from memtree_mcp.service.indexing import Indexes
from memtree_mcp.service.inputs import (
    MAX_FORGET,
    check_flag,
    check_namespace,
    format_timestamp,
)
from memtree_mcp.service.judging import JudgeQuestion, Judging
from memtree_mcp.service.reading import Reader
from memtree_mcp.service.refine import CLOSE_SECONDS, Refinement, SummaryQuestion
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.service.results import (
    Candidate,
    ForgetResult,
    NavigateResult,
    NodeView,
    RecallResult,
    RememberResult,
    SummaryResult,
)
from memtree_mcp.service.spaces import Spaces
from memtree_mcp.service.upkeep import Upkeep
from memtree_mcp.service.writing import Writer, forget_preview, stored_since

if TYPE_CHECKING:
    from memtree_mcp.llm.chat import TextGenerator
    from memtree_mcp.service.refine import Refiner
    from memtree_mcp.store.lance import LanceStore

log = logging.getLogger("memtree_mcp")
# How much of an older memory a candidate quotes in remember's result.
CANDIDATE_CHARS = 120
# How long close() waits for a warm-up still loading the model (about 0.5 s for the default
# embedder on two cores, a few seconds for a large namespace).
WARM_UP_WAIT = 30.0
T = TypeVar("T")


class MemoryService:
    """The memory operations, shared by the MCP server and the CLI. Thread-safe."""

    def __init__(
        self,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        *,
        background: bool = True,
        unusable: ConfigurationError | None = None,
    ) -> None:
        """``background=False`` leaves LLM summaries pending for a later process (one-shot commands).

        ``unusable`` is a configuration problem (from :func:`~memtree_mcp.config.settings_or_problem`)
        that every operation raises instead of running: a server started with a bad setting still
        answers the handshake, then tells the client why each call fails.
        """
        self.settings = settings or Settings()
        self.unusable = unusable
        self._embedder = embedder
        self._lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self.spaces = Spaces(self.settings, lambda: self.embedder)
        self.refinement = Refinement(self.settings, self.spaces, background=background)
        self.judging = Judging(self.settings, self.spaces, self.refinement)
        self.spaces.on_load = self._loaded
        self.writer = Writer(self.settings, self.spaces, lambda: self.embedder, self.refinement, self.judging)
        self.indexes = Indexes(self.spaces, background=background)
        self.spaces.on_commit = self.indexes.committed
        self.spaces.on_purge = self.indexes.purged
        self.reader = Reader(self.spaces, lambda: self.embedder, self.refinement, self.indexes)
        self.upkeep = Upkeep(
            self.settings,
            self.spaces,
            lambda: self.embedder,
            self.refinement,
            self.judging,
            self.writer,
            self.reader,
        )

    # -- the tools -------------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        role: str = "user",
        tags: Sequence[str] = (),
        timestamp: str | None = None,
        session: str | None = None,
        namespace: str | None = None,
        supersedes: Sequence[str] | None = None,
        *,
        unlink: Sequence[str] | None = None,
        by: LinkMaker = "agent",
    ) -> RememberResult:
        """Store ``content`` as one leaf per chunk, skipping chunks that are already stored.

        ``supersedes``: ids of earlier memories this one updates, as ``by`` (``agent``, ``user``)
        says; its first chunk (or the stored duplicate) is linked to them, and recall then marks
        them superseded by it. ``unlink``: links of the stored duplicate to undo. The result names
        the older memories a new memory may update (``candidates``, offered, not marked): remember
        the same content again with ``supersedes`` to link the ones it does.

        Raises InvalidInput for bad arguments, an id of ``supersedes`` that names no stored memory
        or would close a circle, or of ``unlink`` that names no link (nothing is written),
        StoreError when the commit fails (the previous state is kept) and EmbedderMismatch for a
        store built by another model.
        """
        name = self.resolve_namespace(namespace)
        # The namespace's zone reads a timestamp given without one; reading it brings the namespace
        # up to date (a listing of the table's versions on a bucket), so only when there is one:
        # without a timestamp the calendar reads nothing, and the configured zone's will do.
        calendar = self.spaces.calendar_of(name) if timestamp is not None else self.spaces.zones.of(name)
        chunks = self.writer.chunks(content, role, tags, timestamp, session, calendar=calendar)
        stored = self.writer.store(name, chunks, supersedes, unlink=unlink, by=by, judge=True)
        log.info("stored %d new leaf(s) in namespace %s", stored.added, name)
        candidates: list[Candidate] = []
        if stored.candidates:
            # Dates as the namespace shows them: the space the store just brought up to date.
            shown = self.spaces[name].memory.calendar
            candidates = [
                Candidate(
                    id=leaf.id,
                    text=gist(leaf.text, CANDIDATE_CHARS),
                    timestamp=format_timestamp(leaf.timestamp, shown),
                )
                for leaf in stored.candidates
            ]
        return RememberResult(
            ids=stored.ids,
            deduplicated=stored.added == 0,
            path=stored.path,
            namespace=name,
            supersedes=list(stored.supersedes),
            unlinked=list(stored.unlinked),
            redacted=[kind for chunk in chunks for kind in chunk.redacted],
            candidates=candidates,
        )

    def link(
        self,
        newer: str,
        supersedes: Sequence[str] = (),
        unlink: Sequence[str] = (),
        namespace: str | None = None,
        *,
        by: LinkMaker = "user",
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Say that stored memory ``newer`` updates the memories ``supersedes`` (as ``by``), and
        undo its links to ``unlink``, in one commit; returns the links it has after, and those
        undone. Raises NotFound for an unknown ``newer`` and InvalidInput as :meth:`remember`."""
        return self.writer.relink(self.resolve_namespace(namespace), newer, supersedes, unlink, by)

    def look_up(
        self, request: RecallRequest, judgements: Sequence[tuple[JudgeQuestion, str]] = ()
    ) -> RecallResult:
        """The hits of ``request`` (the ``k`` best memories and summaries for its query that pass
        its filters, within its ``max_tokens``; :class:`~memtree_mcp.service.requests.RecallRequest`
        says what each field asks) in its namespace.

        No text appears twice; a memory a later one updates comes after the update and names it
        (``superseded_by``). ``max_tokens`` bounds the text the model reads
        (``rendering.recall_text``). ``judgements``: the client model's answers to
        :meth:`judge_questions` (MCP sampling), stored first, so the result shows their links.
        Raises InvalidInput for bad arguments.
        """
        name = self.resolve_namespace(request.namespace)
        if judgements:
            self.judging.apply(name, judgements)
        return self.reader.recall_hits(name, request)

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
        judgements: Sequence[tuple[JudgeQuestion, str]] = (),
    ) -> SummaryResult:
        """A summary of the whole memory, of the subtree under ``node_id``, of a period or of a subject.

        Give at most one of ``node_id``, a period (``time_from``/``time_to``, ISO 8601) and ``query``.
        ``answers`` are summaries the client's model wrote for :meth:`summary_questions` (MCP
        sampling); they are stored first, so the summary shows them. Raises InvalidInput for bad
        arguments and NotFound for an unknown node.
        """
        name = self.resolve_namespace(namespace)
        if judgements:
            self.judging.apply(name, judgements)
        if answers:
            self.refinement.apply(name, answers)
        plan = self.reader.summary_plan(name, node_id, time_from, time_to, query, max_tokens)
        if plan is None:
            return SummaryResult(summary="", node_ids=[], namespace=name)
        return SummaryResult(summary=plan.found.text, node_ids=plan.found.node_ids, namespace=name)

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
        name = self.resolve_namespace(namespace)
        plan = self.reader.summary_plan(name, node_id, time_from, time_to, query, max_tokens)
        return self.reader.summary_questions(plan) if plan is not None else []

    def forget(
        self,
        node_id: str | None = None,
        query: str | None = None,
        confirm: bool = False,
        namespace: str | None = None,
        *,
        ids: Sequence[str] | None = None,
        limit: int | None = MAX_FORGET,
    ) -> ForgetResult:
        """Forget in two steps that cannot surprise: ``query`` lists the memories it matches (and
        deletes nothing); ``ids`` deletes the memories named, such as the ones listed, and with
        ``confirm`` every memory under a summary named. ``node_id`` (the CLI's and the explorer's)
        deletes one memory, or with ``confirm`` every memory under a summary.

        One call deletes at most ``limit`` memories and never a root's; ``limit=None`` lifts both
        (the CLI's ``--all-under``, a person's own act). Deleted memories leave both trees, every
        summary above them is recomputed without them, and all of it is one commit; the text
        stays on disk until the namespace is purged (:meth:`purge`, MEMTREE_RETENTION). Raises
        InvalidInput for bad or refused arguments and NotFound for an unknown node; nothing is
        deleted then.
        """
        name = self.resolve_namespace(namespace)
        check_flag(confirm, "confirm")
        if sum(arg is not None for arg in (node_id, query, ids)) != 1:
            raise InvalidInput(
                "give either query (to list the memories it matches) or ids (the memories to delete)."
            )
        if query is not None:
            if confirm:
                raise InvalidInput(
                    "a query only lists candidates and deletes nothing, with or without confirm; "
                    "pass the ids of the ones to delete as ids=[...]."
                )
            return ForgetResult(
                deleted=[], candidates=self.reader.forget_candidates(name, query), namespace=name
            )
        deleted = self.writer.forget(name, node_id=node_id, ids=ids, confirm=confirm, limit=limit)
        return ForgetResult(deleted=deleted, candidates=[], namespace=name)

    def forget_preview(
        self,
        query: str | None = None,
        ids: Sequence[str] | None = None,
        confirm: bool = False,
        namespace: str | None = None,
    ) -> list[tuple[str, str]]:
        """What a ``forget`` by query, or by summaries with ``confirm``, would delete, to show the
        user first (``service/writing.py``); empty when there is nothing to ask about."""
        name = self.resolve_namespace(namespace)
        return forget_preview(self.reader, self.spaces, name, query, ids, confirm)

    def forget_shown(
        self,
        shown: Sequence[str],
        asked_at: float,
        query: str | None = None,
        ids: Sequence[str] | None = None,
        confirm: bool = False,
        namespace: str | None = None,
    ) -> ForgetResult:
        """Delete the memories ``shown`` to the user by a question asked at ``asked_at``, on their
        yes: those ids, whatever the forget (``query``, or ``ids`` with ``confirm``) would match
        now. Those forgotten meanwhile are ``gone``; the memories stored since that match too are
        ``kept`` (the user did not see them). Raises InvalidInput for a bad namespace."""
        name = self.resolve_namespace(namespace)
        deleted = self.writer.forget(name, ids=shown, held_only=True)
        done = set(deleted)
        return ForgetResult(
            deleted=deleted,
            candidates=[],
            namespace=name,
            gone=[leaf_id for leaf_id in shown if leaf_id not in done],
            kept=stored_since(self.reader, self.spaces, name, query, ids, confirm, shown, asked_at),
        )

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
        name = self.resolve_namespace(namespace)
        return self.reader.navigate(name, node_id, move, index, tree, query, agent, max_steps, generator)

    # -- views -----------------------------------------------------------------------------------

    def outline(self, tree: str = "semantic", depth: int = 3, namespace: str | None = None) -> str:
        """A tree as indented lines down to ``depth``: each branch's label, memories and time span."""
        return self.reader.outline(self.resolve_namespace(namespace), tree, depth)

    def node_view(self, node_id: str, namespace: str | None = None) -> NodeView:
        """One node (a memory or a summary) as navigate shows it, in the tree it belongs to."""
        return self.reader.node_view(self.resolve_namespace(namespace), node_id)

    def read(self, reader: Callable[[Memory], T], namespace: str | None = None) -> T | None:
        """``reader`` applied to a namespace's up-to-date memory while no writer can change it.

        None when the namespace holds nothing yet. For callers that walk the trees (the explorer):
        ``memory()`` hands out the live object, which a concurrent ``remember`` may be changing.
        """
        return self.reader.read(reader, self.resolve_namespace(namespace))

    def memory(self, namespace: str | None = None) -> Memory | None:
        """The up-to-date in-memory state of a namespace, or None when it holds nothing yet."""
        return self.reader.memory(self.resolve_namespace(namespace))

    def resolve_namespace(self, namespace: str | None = None) -> str:
        """The namespace a call means: the one it names, else the configured default."""
        return check_namespace(namespace, self.settings.namespace)

    # -- moving memories out ---------------------------------------------------------------------

    def export_memories(self, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Every memory of a namespace in the order it was remembered, as records ``import`` reads."""
        return self.reader.export_memories(self.resolve_namespace(namespace))

    def namespaces(self) -> list[tuple[str, int]]:
        """Every namespace with the number of memories it holds."""
        return self.reader.namespaces()

    # -- LLM refinement --------------------------------------------------------------------------

    def _loaded(self, space: Any) -> None:
        # A namespace was (re)loaded: what it still marks pending goes to the background workers.
        self.refinement.loaded(space)
        self.judging.loaded(space)

    def judge_questions(self, namespace: str | None = None) -> list[JudgeQuestion]:
        """What to ask the client's model (MCP sampling) about the memories awaiting an LLM's
        judgement of what they update, oldest first, at most MAX_INLINE_JUDGEMENTS. Empty without
        MEMTREE_LLM."""
        if not self.judging.enabled:
            return []
        return self.judging.questions(self.resolve_namespace(namespace))

    @property
    def refining(self) -> bool:
        """Whether an LLM is configured to write summaries (MEMTREE_LLM other than 'none')."""
        return self.refinement.enabled

    @property
    def refiner(self) -> Refiner:
        """The background worker writing LLM summaries (created on first use)."""
        return self.refinement.worker

    def llm(self) -> TextGenerator | None:
        """The model that writes summaries and walks for the agent now, or None (extractive only)."""
        return self.refinement.llm()

    # -- life cycle ------------------------------------------------------------------------------

    @property
    def embedder_loaded(self) -> bool:
        """Whether the embedder is loaded (by the warm-up after the handshake, or a first call)."""
        return self._embedder is not None

    @property
    def embedder(self) -> Embedder:
        """The configured embedder, loaded on first use.

        Raises ConfigurationError when the service is ``unusable``: every operation needs the
        embedder (the store itself is opened for its identity), so this one check refuses them all.
        """
        if self.unusable is not None:
            raise ConfigurationError(str(self.unusable))
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
        """The LanceDB store of MEMTREE_HOME, opened on first use."""
        return self.spaces.store

    def start_warm_up(self) -> None:
        """:meth:`warm_up` in a background thread, once in the service's life: after the handshake
        on stdio, as soon as it listens over HTTP (a server with no client yet).

        From then on, a namespace opened from its snapshot is compared with its table once the
        server answers, not before (``service/snapshots.py``): a long-lived process's watcher
        does it, and its first write waits for it."""
        self.spaces.snapshots.check_later = True
        with self._lock:
            if self._warming is not None:
                return
            self._warming = threading.Thread(target=self.warm_up, name="memtree-warm-up", daemon=True)
        self._warming.start()

    def warm_up(self) -> None:
        """Load the embedder and the default namespace now, side by side, so the first real call
        is fast.

        The two loads share nothing (the store is opened for the embedder's identity, which needs
        no model), so the namespace is read in a second thread while the model loads: a call that
        arrives meanwhile waits for the slower of the two, not for both in turn (each part it
        needs is behind its own lock, which the warm-up holds while loading it). Errors are only
        logged: the call that needs the failing part reports them properly.

        Then, as a server lives long, it follows other processes' commits in the background
        (:meth:`Spaces.watch`), so that a call after another client's write does not wait for it.
        """
        started = time.perf_counter()

        def load_namespace() -> None:
            try:
                self.memory()
            except Exception as exc:  # a warm-up must never take the server down
                log.warning("warm-up could not load namespace %s: %s", self.settings.namespace, exc)

        namespace = threading.Thread(target=load_namespace, name="memtree-warm-up-store", daemon=True)
        namespace.start()
        try:
            self.embedder.embed_batch(["warm up"])
        except Exception as exc:  # a warm-up must never take the server down
            log.warning("warm-up could not load the embedder: %s", exc)
        namespace.join()
        if self.settings.llm.startswith("litellm:"):
            # Else the first remember imports it (1-2 s) on the request's path; its module sets
            # LITELLM_LOCAL_MODEL_COST_MAP first, so no price list is fetched.
            from memtree_mcp.llm.endpoint import import_litellm

            try:
                import_litellm()
                log.info("warm-up imported litellm")
            except Exception as exc:  # the LLM's first call reports it properly
                log.warning("warm-up could not import litellm: %s", exc)
        self.spaces.watch()
        log.info("warm-up done in %.0f ms", (time.perf_counter() - started) * 1000)

    def close(self) -> None:
        """Stop refining and release the store; the service can be used again (it reopens lazily).

        Branches still awaiting an LLM summary stay marked in the store; the next start finishes them.
        A warm-up under way is waited for first (at most WARM_UP_WAIT seconds): a process that
        exited while it loaded the model tore the model's native threads down under it, and the C++
        runtime aborted with "terminate called without an active exception" (2 short stdio
        sessions in 25 whose client left within the first half second).
        """
        warming = self._warming
        if warming is not None and warming is not threading.current_thread():
            warming.join(WARM_UP_WAIT)
        # Both workers stop before either is waited for: an answer arriving while one was waited
        # for would otherwise still be committed by the other (5 s at most in all).
        stopping = [self.judging.stop(), self.refinement.stop()]
        deadline = time.monotonic() + CLOSE_SECONDS
        for worker in stopping:
            if worker is not None:
                worker.join(deadline)
        # A verdict committed just before the judge stopped may have handed the summaries it
        # touched to a worker started since: stop that one too (the store keeps them pending).
        self.refinement.stop()
        self.indexes.close()
        self.spaces.close()

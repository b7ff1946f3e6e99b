"""Background refinement: LLM summaries for the branches a change touched, never on the write path.

``remember`` commits the structural insert with extractive representatives and returns; the
branches it changed are marked *pending* in the same commit and handed to a :class:`Refiner`. Its
worker threads (MEMTREE_LLM_WORKERS, two by default: LLM calls mostly wait on the network) ask the
LLM for each pending branch, deepest first (so a parent is mostly summarised from its children's
new summaries), once writes have paused for QUIET_SECONDS, and commit each summary as its own
small revision.

- **Coalescing.** The queue holds each (namespace, branch) once, however often it is touched
  before its turn; a branch touched again while its summary is being written gets a summary of the
  old contents, which the commit notices (the inputs changed) and drops, and it is done again.
- **Bounded.** At most ``capacity`` branches wait; beyond that, touched branches are only marked
  pending in the store, and the worker collects them when the queue runs dry. A restart collects
  them as it loads each namespace, so no pending branch is ever forgotten.
- **Failures.** A provider error (bad key, endpoint down, timeout) is logged once, clearly; the
  branch keeps its extractive text and stays pending, and the worker waits (5 s, doubling to
  5 minutes) before trying again. An error is never stored as a summary.

What the LLM is asked (:func:`summary_inputs`): a semantic branch merges its new children into its
existing summary with MemTree's conditional aggregation (the more entries already covered, the
more abstract); a temporal branch is annotated from its children in time order; a branch without
a summary yet is summarised from all its children.

One module, not several: the queue, its workers and the commit of a summary share one invariant
(a summary is stored only for the inputs it was written from), and each reads the others' state.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtree_mcp.config import Settings
from memtree_mcp.core.ranking.currency import newest_updates, restate
from memtree_mcp.core.trees.extractive import gist
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.errors import InvalidInput, ProviderError
from memtree_mcp.llm.chat import TextGenerator
from memtree_mcp.llm.prompts import aggregation_prompt, annotation_prompt, strip_reasoning, update_note
from memtree_mcp.service.inputs import visible
from memtree_mcp.service.spaces import on_conflict_again

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory
    from memtree_mcp.service.spaces import Space, Spaces

log = logging.getLogger("memtree_mcp")

# How much of a branch's children one request carries: the newest children of a semantic branch
# being merged, and the children of a branch summarised from scratch or annotated.
MAX_NEW_ENTRIES = 8
MAX_CHILDREN = 16
MAX_ENTRY_CHARS = 1_200
MAX_SUMMARY_CHARS = 2_000
SUMMARY_TOKENS = 300
# Summaries a summarize call writes with the client's model (MCP sampling) before it answers.
MAX_INLINE_SUMMARIES = 6
FIRST_BACKOFF = 5.0
MAX_BACKOFF = 300.0
SWEEP_SECONDS = 30.0
# The worker starts an LLM call only once writes have paused this long: a burst of remembers (an
# import, an agent filing several facts) keeps touching the same ancestors, which are then written
# once, after the burst, and the burst itself never shares the interpreter with an LLM client.
QUIET_SECONDS = 0.5
CLOSE_SECONDS = 5.0
# What the worker logs, once, when the model starts failing (%s: the error).
PAUSED = (
    "LLM summaries are paused: %s. Memories are stored and recalled as usual, with extractive "
    "summaries; retrying in the background."
)


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What to ask the LLM for one branch, and a fingerprint of the inputs it is computed from."""

    tree: str
    texts: tuple[str, ...]
    timestamps: tuple[float, ...]
    existing: str
    covered: int
    fingerprint: str


def _text_of(memory: Memory, node_id: str) -> tuple[str, float, int, int]:
    """A child's text, last timestamp, leaf count and last sequence number."""
    node = memory.node(node_id)
    if isinstance(node, Leaf):
        return node.text, node.timestamp, 1, node.seq
    return node.text, node.last_ts, node.leaf_count, node.last_seq


def _clip(text: str, limit: int = MAX_ENTRY_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def summary_inputs(memory: Memory, branch: Branch) -> SummaryRequest:
    """The texts a branch's summary is written from, as they are now.

    The fingerprint covers every input, so a summary computed from inputs that changed since
    (a memory added or forgotten below, a child re-summarised) is recognised and not committed.
    """
    children = [(child, *_text_of(memory, child)) for child in branch.children]
    existing, covered = "", 0
    chosen = children
    if branch.tree == "semantic" and branch.summary and branch.summary_seq >= 0:
        fresh = [c for c in children if c[4] > branch.summary_seq]
        if fresh:
            chosen = fresh[-MAX_NEW_ENTRIES:]
            existing = branch.summary
            covered = max(branch.leaf_count - sum(c[3] for c in fresh), 0)
    chosen = chosen[-MAX_CHILDREN:]
    # Memories a later one updates carry a note: a subject's summary states what replaced them,
    # a period's tells them as they were. A semantic summary merged before the update arrived is
    # told about it too, as a new entry of its own.
    kind = "changed later" if branch.tree == "temporal" else "superseded"
    leaves = [memory.leaves[c] for c in branch.children if c in memory.leaves]
    newest = newest_updates(memory, leaves)
    notes = {
        o: update_note(kind, memory.calendar.shown_date(n.timestamp), gist(n.text)) for o, n in newest.items()
    }
    texts = tuple(_clip(c[1]) + (f" {notes[c[0]]}" if c[0] in notes else "") for c in chosen)
    stamps = tuple(c[2] for c in chosen)
    if existing:
        taken = {c[0] for c in chosen}
        late = [(o, n) for o, n in newest.items() if o not in taken and n.seq > branch.summary_seq]
        texts += tuple(f"{gist(memory.leaves[o].text)} {notes[o]}" for o, _ in late)
        stamps += tuple(n.timestamp for _, n in late)
    digest = hashlib.sha256()
    for part in (branch.tree, existing, str(covered), *(c[0] for c in children), *texts):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return SummaryRequest(branch.tree, texts, stamps, existing, covered, digest.hexdigest())


def summary_prompt(request: SummaryRequest) -> tuple[str, str]:
    """The (system, user) messages asking for the summary ``request`` describes."""
    if request.tree == "temporal":
        return annotation_prompt(list(request.texts), list(request.timestamps))
    new = "\n\n".join(request.texts)
    return aggregation_prompt(new, request.existing or "(nothing yet)", request.covered)


def clean_summary(answer: str) -> str:
    """A model's answer as a stored summary: one paragraph, reasoning removed, without control or
    invisible characters (an answer is stored and shown like a memory), clipped.

    Raises ProviderError for an answer with no text, so that nothing empty is ever stored.
    """
    shown = visible(strip_reasoning(answer))
    text = " ".join("".join(" " if unicodedata.category(c) in ("Cc", "Cs") else c for c in shown).split())
    if not text:
        raise ProviderError("the LLM answered with an empty summary; the extractive text is kept")
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 3].rstrip() + "..."


def write_summary(generator: TextGenerator, request: SummaryRequest) -> str:
    """Ask ``generator`` for the summary ``request`` describes; raise ProviderError for no usable text."""
    system, user = summary_prompt(request)
    return clean_summary(generator.complete(system, user, max_tokens=SUMMARY_TOKENS))


class Refiner:
    """Worker threads writing LLM summaries for pending branches, in the background.

    ``refine(namespace, node_id, generator)`` does one branch (:meth:`Refinement.refine_branch`)
    and returns whether it committed;
    ``pending(namespace)`` lists a namespace's pending branches; ``generator()`` gives the model
    to use now, or None when there is none (a sampling client not connected yet).
    """

    def __init__(
        self,
        refine: Callable[[str, str, TextGenerator], bool],
        pending: Callable[[str], list[tuple[int, str]]],
        generator: Callable[[], TextGenerator | None],
        *,
        capacity: int = 4_096,
        workers: int = 2,
        task: str = "refine",
        paused: str = PAUSED,
    ) -> None:
        self._refine = refine
        self._task = task
        self._paused = paused
        self.workers = max(int(workers), 1)
        self._pending = pending
        self._generator = generator
        self.capacity = capacity
        self._queue: dict[tuple[str, str], int] = {}  # (namespace, node) -> depth, deepest done first
        self._namespaces: set[str] = set()
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopped = False
        self._busy = 0
        self._failing: str | None = None
        self._no_model_said = False
        self._wake_at = 0.0
        self._last_submit = 0.0
        self.refined = 0
        self.failures = 0
        self.overflowed = 0
        self.touched = 0
        self.coalesced = 0

    # -- feeding ---------------------------------------------------------------------------------

    def submit(self, namespace: str, nodes: Iterable[tuple[int, str]]) -> None:
        """Queue ``(depth, branch id)`` pairs of ``namespace``; beyond capacity they wait in the store."""
        with self._cond:
            self._namespaces.add(namespace)
            self._last_submit = time.monotonic()
            # Workers already waiting for the writes to pause wake up on their own; waking them at
            # every remember would only make them compete with it for the interpreter.
            idle = not self._queue
            for depth, node_id in nodes:
                key = (namespace, node_id)
                self.touched += 1
                if key in self._queue:
                    self.coalesced += 1
                    continue
                if len(self._queue) >= self.capacity:
                    self.overflowed += 1
                    continue
                self._queue[key] = depth
            self._start()
            if idle:
                self._cond.notify_all()

    # -- observing -------------------------------------------------------------------------------

    @property
    def failing(self) -> str | None:
        """The last provider error while the provider keeps failing, None once it works."""
        return self._failing

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or being written; False after ``timeout`` seconds or on failure."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or self._failing is not None or self._stopped:
                    return False
                self._cond.wait(min(left, 0.5))
            return True

    def close(self) -> None:
        """Stop the workers after the branches they are writing (waiting 5 s at most in all).

        Pending branches stay marked in the store; an answer that arrives later is not committed.
        """
        self.stop()
        self.join(time.monotonic() + CLOSE_SECONDS)

    def stop(self) -> None:
        """Tell the workers to stop: from now on no answer is committed and nothing new is asked."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def join(self, deadline: float) -> None:
        """Wait for the workers to end, until ``deadline`` (``time.monotonic()``) at most."""
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=max(deadline - time.monotonic(), 0.0))

    # -- the worker ------------------------------------------------------------------------------

    def _start(self) -> None:
        while len(self._threads) < self.workers and not self._stopped:
            thread = threading.Thread(
                target=self._run, name=f"memtree-{self._task}-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _take(self) -> tuple[str, str] | None:
        """The deepest queued branch, waiting for one (and sweeping while idle); None when stopped."""
        with self._cond:
            while not self._stopped:
                if self._queue:
                    now = time.monotonic()
                    pause = max(self._wake_at, self._last_submit + QUIET_SECONDS) - now
                    if pause <= 0:
                        key = max(self._queue, key=lambda k: self._queue[k])
                        del self._queue[key]
                        self._busy += 1
                        return key
                    self._cond.wait(pause)
                elif not self._cond.wait(SWEEP_SECONDS):
                    for namespace in list(self._namespaces):
                        self._queue_pending(namespace)
            return None

    def _queue_pending(self, namespace: str) -> None:
        # Called with the condition held, when the queue ran dry: pick up what overflowed.
        try:
            nodes = self._pending(namespace)
        except Exception as exc:  # a sweep must never kill the worker
            log.debug("refinement sweep of %s failed: %s", namespace, exc)
            return
        for depth, node_id in nodes[: self.capacity]:
            self._queue.setdefault((namespace, node_id), depth)

    def _run(self) -> None:
        backoff = FIRST_BACKOFF
        while True:
            key = self._take()
            if key is None:
                return
            namespace, node_id = key
            try:
                generator = self._generator()
                if generator is None:
                    self._drop_all_without_model()
                    continue
                if self._refine(namespace, node_id, generator):
                    self.refined += 1
                else:
                    self._requeue_if_pending(namespace, node_id)
                with self._cond:
                    recovered, self._failing = self._failing is not None, None
                if recovered:
                    log.warning("the LLM answers again; %s resumes", self._task)
                backoff = FIRST_BACKOFF
            except ProviderError as exc:
                with self._cond:
                    self.failures += 1
                    first = self._failing is None
                    self._failing = str(exc)
                    self._queue.setdefault(key, 10**6)  # retried first, once the wait is over
                    self._wake_at = max(self._wake_at, time.monotonic() + backoff)
                if first:
                    log.warning(self._paused, exc)
                backoff = min(backoff * 2, MAX_BACKOFF)
            except Exception:
                log.exception("%s of %s in namespace %s failed", self._task, node_id, namespace)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _requeue_if_pending(self, namespace: str, node_id: str) -> None:
        # A summary found stale at commit (its inputs changed while the model wrote it: a memory
        # added below, or a child's summary committed by another worker) is asked again.
        for depth, pending_id in self._pending(namespace):
            if pending_id == node_id:
                with self._cond:
                    self._queue.setdefault((namespace, node_id), depth)
                    self._cond.notify_all()
                return

    def _drop_all_without_model(self) -> None:
        with self._cond:
            self._queue.clear()
        if not self._no_model_said:
            self._no_model_said = True
            log.warning(
                "MEMTREE_LLM=sampling, but no connected client offers sampling: summaries stay "
                "extractive until one does"
            )


@dataclass(frozen=True, slots=True)
class SummaryQuestion:
    """A summary to ask the client's model for: which branch, of which inputs, and the prompt."""

    node_id: str
    fingerprint: str
    system: str
    user: str


def pending_branches(memory: Memory) -> list[tuple[int, str]]:
    """(depth, id) of every branch awaiting an LLM summary, deepest first."""
    found = [
        (branch.depth, branch.id)
        for tree in (memory.semantic, memory.temporal)
        for branch in tree.branches.values()
        if branch.pending
    ]
    return sorted(found, key=lambda item: (-item[0], item[1]))


class Refinement:
    """The LLM side of the memory: which branches await a summary, who writes it, and its commit.

    Writers tell it what they changed (:meth:`mark`, then :meth:`submit` once committed); the
    spaces tell it what they loaded (:meth:`loaded`, registered as their ``on_load``). With
    ``litellm:<model>`` a :class:`Refiner` writes summaries in the background (only in a process
    built with ``background``: one-shot commands leave them pending); with ``sampling`` the
    client's model writes them per request (:meth:`questions` and :meth:`apply`).
    """

    def __init__(self, settings: Settings, spaces: Spaces, *, background: bool = True) -> None:
        self.settings = settings
        self._spaces = spaces
        self._background = background
        self._lock = threading.RLock()
        self._llm: TextGenerator | None = None
        self._refiner: Refiner | None = None

    @property
    def enabled(self) -> bool:
        """Whether an LLM is configured to write summaries (MEMTREE_LLM other than 'none')."""
        return self.settings.llm != "none"

    @property
    def in_background(self) -> bool:
        """Whether summaries are written by the background worker (litellm; sampling works per request)."""
        return self._background and self.settings.llm.startswith("litellm:")

    def llm(self) -> TextGenerator | None:
        """The model that writes summaries and walks for the agent now, or None (extractive only).

        For ``litellm:<model>`` it is built on first use. With ``sampling`` there is no model outside
        a client's request: the MCP tools pass the client's model to ``summarize`` and ``navigate``.
        """
        spec = self.settings.llm
        if not spec.startswith("litellm:"):
            return None
        with self._lock:
            if self._llm is None:
                from memtree_mcp.llm.chat import LiteLLMChat

                self._llm = LiteLLMChat(
                    spec.removeprefix("litellm:"),
                    api_base=self.settings.llm_api_base,
                    api_key=self.settings.llm_api_key,
                    timeout=self.settings.llm_timeout,
                    retries=self.settings.llm_retries,
                )
            return self._llm

    @property
    def worker(self) -> Refiner:
        """The background worker writing LLM summaries (created on first use)."""
        with self._lock:
            if self._refiner is None:
                self._refiner = Refiner(
                    self.refine_branch,
                    self.pending,
                    self.llm,
                    capacity=self.settings.refine_queue,
                    workers=self.settings.llm_workers,
                )
            return self._refiner

    def close(self) -> None:
        """Stop the worker; branches still awaiting a summary stay marked in the store."""
        refiner = self.stop()
        if refiner is not None:
            refiner.join(time.monotonic() + CLOSE_SECONDS)

    def stop(self) -> Refiner | None:
        """Tell the worker to stop and let go of it (the next use starts a new one); returns it,
        for the caller to :meth:`Refiner.join`."""
        with self._lock:
            refiner, self._refiner = self._refiner, None
        if refiner is not None:
            refiner.stop()
        return refiner

    # -- fed by the writers and the spaces ---------------------------------------------------------

    def mark(self, memory: Memory, changed: set[str], *, forgotten: bool) -> list[tuple[int, str]]:
        """Mark changed branches as awaiting an LLM summary; returns them as (depth, id).

        First the semantic branches above each memory a change superseded (or made current again,
        when its update was forgotten) are recomputed without their stale members
        (:func:`~memtree_mcp.core.ranking.currency.restate`) and added to ``changed``, so that they are
        written, and summarised again, with the rest.

        A branch keeps showing its last LLM summary until the new one is written, unless memories
        under it were forgotten (the summary may mention them) or no LLM is configured any more.
        """
        changed |= restate(memory)
        nodes: list[tuple[int, str]] = []
        for node_id in changed:
            branch = memory.branch(node_id)
            if branch is None:
                continue
            if forgotten or not self.enabled:
                branch.summary, branch.summary_seq = "", -1
            elif branch.summary:
                branch.text = branch.summary
            branch.pending = self.enabled
            if self.enabled:
                nodes.append((branch.depth, node_id))
        return nodes

    def submit(self, name: str, nodes: list[tuple[int, str]]) -> None:
        """Hand branches marked by :meth:`mark` (and committed) to the background worker, if any."""
        if nodes and self.in_background:
            self.worker.submit(name, nodes)

    def loaded(self, space: Space) -> None:
        """A namespace was (re)loaded: the branches it still marks pending go to the worker."""
        if self.in_background:
            self.submit(space.name, pending_branches(space.memory))

    def pending(self, name: str) -> list[tuple[int, str]]:
        """(depth, id) of the branches of namespace ``name`` awaiting a summary, deepest first."""
        with self._spaces.reading(name) as space:
            return pending_branches(space.memory) if space is not None else []

    # -- writing summaries -------------------------------------------------------------------------

    def refine_pending(self, name: str, timeout: float = 3_600.0) -> tuple[int, int]:
        """Write the LLM summaries namespace ``name`` still waits for, now; (written, still pending).

        Raises InvalidInput when no LLM is configured and ProviderError when the LLM fails.
        """
        generator = self.llm()
        if generator is None:
            raise InvalidInput(
                "no LLM is configured to write summaries; set MEMTREE_LLM=litellm:<model> "
                "(sampling works only inside a client session)."
            )
        written = 0
        deadline = time.monotonic() + timeout
        for _depth, node_id in self.pending(name):
            if time.monotonic() > deadline:
                break
            written += int(self.refine_branch(name, node_id, generator))
        return written, len(self.pending(name))

    def refine_branch(self, name: str, node_id: str, generator: TextGenerator) -> bool:
        """Write one pending branch's LLM summary and commit it; False when nothing was committed.

        The model is asked without holding any lock; the summary is committed only if the branch's
        inputs are still those it was written from. Raises ProviderError when the model fails.
        """
        with self._spaces.reading(name) as space:
            branch = space.memory.branch(node_id) if space is not None else None
            if space is None or branch is None or not branch.pending:
                return False
            request = summary_inputs(space.memory, branch)
        worker = self._refiner
        text = write_summary(generator, request)
        if worker is not self._refiner:
            return False  # closed while the model wrote: leave the branch pending
        return self._commit(name, [(node_id, request.fingerprint, text)]) == 1

    def questions(self, space: Space, node_ids: Iterable[str]) -> list[SummaryQuestion]:
        """One question for the client's model per branch of ``node_ids`` awaiting a summary, at
        most MAX_INLINE_SUMMARIES; empty without MEMTREE_LLM. Call it holding the space's lock."""
        if not self.enabled:
            return []
        asked: list[SummaryQuestion] = []
        for node_id in node_ids:
            branch = space.memory.branch(node_id)
            if branch is None or not branch.pending:
                continue
            request = summary_inputs(space.memory, branch)
            system, user = summary_prompt(request)
            asked.append(SummaryQuestion(node_id, request.fingerprint, system, user))
            if len(asked) == MAX_INLINE_SUMMARIES:
                break
        return asked

    def apply(self, name: str, answers: Sequence[tuple[SummaryQuestion, str]]) -> int:
        """Store the client model's answers to :meth:`questions`; returns how many were stored.

        An answer is stored only if its branch still has the inputs the question was asked about;
        an empty answer is skipped (the extractive text stays).
        """
        done: list[tuple[str, str, str]] = []
        for question, answer in answers:
            try:
                done.append((question.node_id, question.fingerprint, clean_summary(answer)))
            except ProviderError as exc:
                log.warning("the client's model gave no usable summary: %s", exc)
        return self._commit(name, done) if done else 0

    @on_conflict_again
    def _commit(self, name: str, done: Sequence[tuple[str, str, str]]) -> int:
        """Commit (branch id, input fingerprint, summary) triples still current, in one commit."""
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                return 0
            with self._spaces.change(space) as change:
                for node_id, fingerprint, text in done:
                    branch = space.memory.branch(node_id)
                    if branch is None or not branch.pending:
                        continue
                    if summary_inputs(space.memory, branch).fingerprint != fingerprint:
                        continue  # changed since it was asked; it is pending again
                    branch.summary, branch.summary_seq, branch.pending = text, branch.last_seq, False
                    branch.text = text
                    change.changed.add(node_id)
        return len(change.changed)

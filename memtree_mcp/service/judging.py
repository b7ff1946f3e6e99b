"""An LLM judges which older memories a new one updates, in the background; its verdicts become links.

With an LLM configured (``MEMTREE_LLM=litellm:…`` or ``sampling``), ``remember`` marks each new
memory (its first :data:`MAX_JUDGED_CHUNKS` chunks) as awaiting judgement, in the same commit that
stores it: ``Leaf.judging``, kept in the leaf row's ``metadata``. A flag on the memory itself was
chosen over a "judged up to" marker because it is what the rest of the store already does for
summaries (``Branch.pending``): it survives restarts and follows across processes with the row, a
memory forgotten before its turn takes its flag with it, and one memory whose judgement fails
holds up no other. Clearing it rewrites the leaf's row, which the commit of a link does anyway.

The judgement (:func:`judge_question`): the older memories closest in meaning to the new one
(at most :data:`CANDIDATES`, cosine at least :data:`MEANING_FLOOR`, from the leaf vector index,
leaving out those it already links) are listed to the model in one call, which answers for each
``updates``, ``contradicts`` or ``unrelated`` (``prompts.judge_prompt``, parsed strictly by
``prompts.parse_verdicts``: anything else is unrelated; the model's text is never stored). The
first two become links of the newer memory, exactly as ``remember``'s ``supersedes`` gives them
(``memory.links.link``, a new revision of its row), so recall, export, history and forgetting
treat them alike.

Who asks: with litellm, a :class:`~memtree_mcp.service.refine.Refiner` of its own (the same quiet period,
retries with growing pauses and one log line while the model fails as summaries have); with
sampling, the client's model during ``recall`` and ``summarize`` calls, at most
:data:`MAX_INLINE_JUDGEMENTS` a call (:meth:`Judging.questions`, :meth:`Judging.apply`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtree_mcp.config import Settings
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.errors import InvalidInput
from memtree_mcp.llm.chat import TextGenerator
from memtree_mcp.llm.prompts import judge_prompt, parse_verdicts
from memtree_mcp.service.refine import CLOSE_SECONDS, Refinement, Refiner
from memtree_mcp.service.spaces import on_conflict_again

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory
    from memtree_mcp.service.spaces import Space, Spaces

log = logging.getLogger("memtree_mcp")

# The older memories one judgement lists: the closest in meaning, and only those close enough. The
# floor is low on purpose: an update told in other words is far in meaning ("Dana answers every
# question about invoices." then "From March, Priya is our billing contact." are at 0.32 with
# all-MiniLM-L6-v2), and the model, not the cosine, decides; the floor only spares a call for a
# memory with nothing near it.
CANDIDATES = 5
MEANING_FLOOR = 0.25
# The chunks of one remember that are judged (the first ones): a long text's later chunks follow
# from its first, and a 100-chunk document must not cost 100 calls.
MAX_JUDGED_CHUNKS = 4
# Judgements a recall or summarize call asks of the client's model (MCP sampling) before it answers.
MAX_INLINE_JUDGEMENTS = 3
JUDGE_TOKENS = 64
LINKING = ("updates", "contradicts")
PAUSED = (
    "LLM update judging is paused: %s. Memories are stored and recalled as usual; the candidates "
    "it would judge wait in remember's results for the agent to link; retrying in the background."
)


@dataclass(frozen=True, slots=True)
class JudgeQuestion:
    """One judgement to ask: the new memory, the older ones listed (in order), and the prompt."""

    leaf_id: str
    candidates: tuple[str, ...]
    system: str
    user: str


def candidates(memory: Memory, leaf: Leaf) -> list[Leaf]:
    """The older memories (earlier in time, or stored before at the same time) closest in meaning
    to ``leaf``, at most CANDIDATES with a cosine of MEANING_FLOOR or more, leaving out those it
    already links, closest first."""
    linked = set(leaf.supersedes)
    found: list[Leaf] = []
    wanted = CANDIDATES + len(linked) + 8  # room for the newer ones and itself, left out below
    for other_id, _score in memory.leaf_index.search(leaf.vector, wanted, MEANING_FLOOR):
        other = memory.leaves.get(other_id)
        if other is None or other_id == leaf.id or other_id in linked:
            continue
        if (other.timestamp, other.seq) >= (leaf.timestamp, leaf.seq):
            continue
        found.append(other)
        if len(found) == CANDIDATES:
            break
    return found


def judge_question(memory: Memory, leaf: Leaf) -> JudgeQuestion | None:
    """What to ask about ``leaf``; None when no older memory is close enough to be judged."""
    older = candidates(memory, leaf)
    if not older:
        return None
    system, user = judge_prompt(
        leaf.text,
        [o.text for o in older],
        new_timestamp=leaf.timestamp,
        timestamps=[o.timestamp for o in older],
    )
    return JudgeQuestion(leaf.id, tuple(o.id for o in older), system, user)


def pending_judgements(memory: Memory) -> list[tuple[int, str]]:
    """(-seq, id) of every memory awaiting judgement, oldest first (the worker takes the largest)."""
    return sorted(((-leaf.seq, leaf.id) for leaf in memory.leaves.values() if leaf.judging), reverse=True)


class Judging:
    """The LLM's side of update links: which memories await judgement, who judges, and the commit.

    The writer marks new memories (``Leaf.judging``) and hands them to :meth:`submit` once committed;
    the spaces hand over what they load (:meth:`loaded`). With ``litellm:<model>`` a worker judges
    in the background (only in a process built with ``background``); with ``sampling`` the client's
    model judges during its calls (:meth:`questions`, :meth:`apply`).
    """

    def __init__(self, settings: Settings, spaces: Spaces, refinement: Refinement) -> None:
        self.settings = settings
        self._spaces = spaces
        self._refinement = refinement
        self._lock = threading.Lock()
        self._worker: Refiner | None = None

    @property
    def enabled(self) -> bool:
        """Whether new memories are judged by an LLM (MEMTREE_LLM other than 'none')."""
        return self._refinement.enabled

    @property
    def worker(self) -> Refiner:
        """The background worker asking the LLM (created on first use)."""
        with self._lock:
            if self._worker is None:
                self._worker = Refiner(
                    self.judge_leaf,
                    self.pending,
                    self._refinement.llm,
                    capacity=self.settings.refine_queue,
                    workers=1,
                    task="judging",
                    paused=PAUSED,
                )
            return self._worker

    def close(self) -> None:
        """Stop the worker; memories still awaiting judgement stay marked in the store."""
        worker = self.stop()
        if worker is not None:
            worker.join(time.monotonic() + CLOSE_SECONDS)

    def stop(self) -> Refiner | None:
        """Tell the worker to stop and let go of it (the next use starts a new one); returns it,
        for the caller to :meth:`Refiner.join`."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
        return worker

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the background worker has judged what it was given; False on timeout or
        failure, True at once when there is no worker."""
        worker = self._worker
        return True if worker is None else worker.wait_idle(timeout)

    # -- fed by the writer and the spaces --------------------------------------------------------

    def submit(self, name: str, leaves: Sequence[tuple[int, str]]) -> None:
        """Hand new memories (``(-seq, id)``, marked and committed) to the background worker, if any."""
        if leaves and self._refinement.in_background:
            self.worker.submit(name, leaves)

    def loaded(self, space: Space) -> None:
        """A namespace was (re)loaded: the memories it still marks go to the worker."""
        if self._refinement.in_background:
            self.submit(space.name, pending_judgements(space.memory))

    def pending(self, name: str) -> list[tuple[int, str]]:
        """(-seq, id) of the memories of namespace ``name`` awaiting judgement, oldest first."""
        with self._spaces.reading(name) as space:
            return pending_judgements(space.memory) if space is not None else []

    # -- judging ---------------------------------------------------------------------------------

    def judge_leaf(self, name: str, leaf_id: str, generator: TextGenerator) -> bool:
        """Judge one marked memory and commit its links; False when nothing was committed (it was
        forgotten, or judged already). The model is asked without holding any lock. Raises
        ProviderError when the model fails (the memory stays marked)."""
        with self._spaces.reading(name) as space:
            leaf = space.memory.leaves.get(leaf_id) if space is not None else None
            if space is None or leaf is None or not leaf.judging:
                return False
            question = judge_question(space.memory, leaf)
        answer = ""
        if question is not None:
            worker = self._worker
            answer = generator.complete(question.system, question.user, max_tokens=JUDGE_TOKENS)
            if worker is not self._worker:
                return False  # closed while the model answered: the memory stays marked
        return self._commit(name, [(leaf_id, question, answer)]) == 1

    def judge_pending(self, name: str, timeout: float = 3_600.0) -> tuple[int, int]:
        """Judge every memory namespace ``name`` still marks, now; (judged, still marked).

        Raises InvalidInput when no LLM is configured and ProviderError when the LLM fails.
        """
        generator = self._refinement.llm()
        if generator is None:
            raise InvalidInput(
                "no LLM is configured to judge updates; set MEMTREE_LLM=litellm:<model> "
                "(sampling works only inside a client session)."
            )
        done = 0
        deadline = time.monotonic() + timeout
        for _order, leaf_id in self.pending(name):
            if time.monotonic() > deadline:
                break
            done += int(self.judge_leaf(name, leaf_id, generator))
        return done, len(self.pending(name))

    def questions(self, name: str, limit: int = MAX_INLINE_JUDGEMENTS) -> list[JudgeQuestion]:
        """Questions for the client's model about the oldest memories awaiting judgement, at most
        ``limit``. Memories with nothing close enough to judge are cleared here, without a question."""
        if not self.enabled:
            return []
        asked: list[JudgeQuestion] = []
        nothing: list[str] = []
        with self._spaces.reading(name) as space:
            if space is None:
                return []
            for _order, leaf_id in pending_judgements(space.memory):
                question = judge_question(space.memory, space.memory.leaves[leaf_id])
                if question is None:
                    nothing.append(leaf_id)
                    continue
                asked.append(question)
                if len(asked) == limit:
                    break
        if nothing:
            self._commit(name, [(leaf_id, None, "") for leaf_id in nothing])
        return asked

    def apply(self, name: str, answers: Sequence[tuple[JudgeQuestion, str]]) -> int:
        """Store the client model's answers to :meth:`questions`; returns how many memories were judged."""
        return self._commit(name, [(q.leaf_id, q, answer) for q, answer in answers]) if answers else 0

    @on_conflict_again
    def _commit(self, name: str, done: Iterable[tuple[str, JudgeQuestion | None, str]]) -> int:
        """Commit judgements (memory id, question or None when nothing was close, answer) of
        memories still marked, in one commit: their links grow by the older memories the answer
        says they update or contradict (those still held), and their marks are cleared."""
        refine: list[tuple[int, str]] = []
        judged, links = 0, False
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                return 0
            memory = space.memory
            with self._spaces.change(space) as change:
                for leaf_id, question, answer in done:
                    leaf = memory.leaves.get(leaf_id)
                    if leaf is None or not leaf.judging:
                        continue
                    olders: list[str] = []
                    if question is not None:
                        verdicts = parse_verdicts(answer, len(question.candidates))
                        olders = [
                            older
                            for older, verdict in zip(question.candidates, verdicts, strict=True)
                            # A link that would close a circle (the older updates this one) is dropped.
                            if verdict in LINKING
                            and older in memory.leaves
                            and not memory.links.reaches(older, leaf_id)
                        ]
                    linked = memory.links.link(leaf_id, olders, "llm") if olders else False
                    leaf.judging = False
                    change.changed.add(leaf_id)
                    change.rewritten.add(leaf_id)
                    judged += 1
                    if linked:
                        links = True
                        log.info("the LLM judged that %s updates %s", leaf_id, ", ".join(olders))
                if links:  # labels and stale marks of the branches above move with the links
                    refine = self._refinement.mark(memory, change.changed, forgotten=False)
        self._refinement.submit(name, refine)
        return judged

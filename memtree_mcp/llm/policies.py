"""LLM-driven choices over the trees: batch-LLM compatibility and the memory agent.

Each wraps a :class:`~memtree_mcp.llm.chat.TextGenerator` behind a protocol of ``core`` (which
stays free of providers), with the prompts of :mod:`memtree_mcp.llm.prompts`:

- :class:`BatchLLMPolicy` is a ``core.trees.temporal.CompatibilityPolicy``: SegTreeMem's batch LLM (seed
  001 §4.2), one call per insertion that sees every open frontier segment.
- :class:`LLMNavigationPolicy` is a ``core.walking.agent.Policy``: HAT's memory agent (seed 003 §3.2),
  one call per step of ``run_agent``.

An LLM that fails (:class:`~memtree_mcp.errors.ProviderError`: down, timing out, refusing the key)
never breaks an insertion or a walk: the policies fall back on the embedding-based ones and count
the failures. (Summaries of branches are written by :mod:`memtree_mcp.service.refine`.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.core.trees.segmenting import Candidate, CompatibilityPolicy, CosinePolicy
from memtree_mcp.core.walking.agent import EmbeddingPolicy, Policy, ScoredNode
from memtree_mcp.core.walking.navigation import CursorView
from memtree_mcp.errors import ProviderError
from memtree_mcp.llm.chat import TextGenerator
from memtree_mcp.llm.prompts import (
    clean_answer,
    compatibility_prompt,
    is_split,
    navigation_prompt,
    parse_compatibility,
)

__all__ = ["BatchLLMPolicy", "LLMNavigationPolicy"]

logger = logging.getLogger(__name__)

# A label or a move is a few tokens; the margin is for models that add a word or a newline.
ANSWER_TOKENS = 16


class BatchLLMPolicy:
    """Ask an LLM whether a new leaf continues its session's segment: ``MERGE_i`` or ``SPLIT``, in one call.

    The candidates go into one prompt lowest first (``MERGE_1`` is the current segment), with the
    leaf's text and time; the answer is read by ``prompts.parse_compatibility``.

    - ``MERGE_i`` continues candidate i.
    - ``SPLIT`` (or an answer that is not a valid label, counted in ``unparseable``) opens a new
      segment in the session.
    - When the generator raises ``ProviderError``, ``fallback`` (default ``CosinePolicy()``) chooses
      instead; ``failures`` counts these calls and ``last_error`` keeps the latest message. The first
      failure is logged as a warning, later ones at debug level (one per insertion would flood).

    ``calls`` counts the questions put to the generator.
    """

    def __init__(
        self,
        generator: TextGenerator,
        *,
        fallback: CompatibilityPolicy | None = None,
        max_tokens: int = ANSWER_TOKENS,
    ) -> None:
        self.generator = generator
        self.fallback: CompatibilityPolicy = fallback if fallback is not None else CosinePolicy()
        self.max_tokens = max_tokens
        self.calls = 0
        self.failures = 0
        self.unparseable = 0
        self.last_error: str | None = None

    def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
        """The id of the candidate ``leaf`` continues, or None for a new segment (see the class)."""
        if not candidates:
            return None
        system, user = compatibility_prompt(leaf.text, candidates, timestamp=leaf.timestamp)
        self.calls += 1
        try:
            answer = self.generator.complete(system, user, max_tokens=self.max_tokens)
        except ProviderError as exc:
            self.failures += 1
            self.last_error = str(exc)
            log = logger.warning if self.failures == 1 else logger.debug
            log("compatibility LLM failed, the embedding policy places this memory: %s", exc)
            return self.fallback.choose(leaf, candidates)
        index = parse_compatibility(answer, len(candidates))
        if index is not None:
            return candidates[index].node_id
        if not is_split(answer):
            self.unparseable += 1
            logger.debug("compatibility answer %r is not a label; taken as SPLIT", answer[:80])
        return None


class LLMNavigationPolicy:
    """HAT's memory agent played by an LLM, for one query (``query_text``): one call per step.

    Each step shows the model the question, the current node's text, its breadcrumb, its children
    numbered from 0 (as ``down i`` takes them) and the moves possible there, and returns the model's
    answer with wrapping removed (``prompts.clean_answer``). An answer that is not a possible action
    is left for ``run_agent`` to replace with its safe action, so it shows in ``AgentRun.notes``.

    When the generator raises ``ProviderError``, ``fallback`` (default ``EmbeddingPolicy()``) decides
    that step and every later one of this walk: an LLM that is down would otherwise cost its timeout
    at each of up to ``max_steps`` steps. ``failures`` counts such errors, ``calls`` the questions put
    to the model, and ``notes`` says which steps the fallback took and why.
    """

    def __init__(
        self,
        generator: TextGenerator,
        query_text: str,
        *,
        fallback: Policy | None = None,
        max_tokens: int = ANSWER_TOKENS,
    ) -> None:
        self.generator = generator
        self.query_text = query_text
        self.fallback: Policy = fallback if fallback is not None else EmbeddingPolicy()
        self.max_tokens = max_tokens
        self.calls = 0
        self.failures = 0
        self.notes: list[str] = []
        self._steps = 0
        self._gave_up = False

    def decide(
        self,
        query_vector: Vector,
        current: CursorView,
        children_scores: Sequence[ScoredNode],
        neighbour_scores: Mapping[str, ScoredNode],
        history: Sequence[str],
    ) -> str:
        """The next action for the walk, as ``core.walking.agent.Policy`` specifies."""
        self._steps += 1
        if not self._gave_up:
            system, user = navigation_prompt(
                self.query_text,
                tree=current.tree,
                node_kind=current.kind,
                node_text=current.text,
                node_leaf_count=current.leaf_count,
                node_score=current.score,
                breadcrumb=current.breadcrumb,
                children=children_scores,
                neighbours=neighbour_scores,
                history=history,
            )
            self.calls += 1
            try:
                return clean_answer(self.generator.complete(system, user, max_tokens=self.max_tokens))
            except ProviderError as exc:
                self.failures += 1
                self._gave_up = True
                logger.warning("navigation LLM failed, the embedding policy finishes the walk: %s", exc)
                self.notes.append(
                    f"step {self._steps}: the LLM failed ({exc}); the embedding policy took over"
                )
        return self.fallback.decide(query_vector, current, children_scores, neighbour_scores, history)

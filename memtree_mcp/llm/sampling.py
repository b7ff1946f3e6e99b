"""Text generation by the connected client's own model, through MCP sampling (``sampling/createMessage``).

With ``MEMTREE_LLM=sampling`` the server has no model of its own: it asks the client that called it,
if that client declared the sampling capability. A server may only ask while one of the client's
requests is open (since the 2026-07-28 protocol revision the questions even travel inside the
tool's result, and the client calls again with the answers), so the questions are put through the
SDK's resolvers (``Sample`` markers) of the ``summarize`` and ``navigate`` tools:

- ``summarize`` asks for the summaries it is about to show that still await an LLM summary, all at
  once, and stores the answers before composing;
- the memory agent of ``navigate`` asks one step at a time: each step's question is computed by
  replaying the walk with the answers given so far (:class:`ReplayChat`), which stops at the first
  question not answered yet (:class:`AskClient`).

Sampling is deprecated by the 2026-07-28 revision (SEP-2577); the SDK still carries it and clients
that implement it answer. A client that did not declare it is never asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memtree_mcp.errors import ProviderError

__all__ = ["AskClient", "ReplayChat", "answer_text", "client_can_sample", "sample"]


def client_can_sample(session: Any) -> bool:
    """Whether the client behind ``session`` declared the sampling capability."""
    capabilities = getattr(session, "client_capabilities", None)
    return capabilities is not None and getattr(capabilities, "sampling", None) is not None


class AskClient(Exception):
    """Raised by :class:`ReplayChat` at the first question it has no answer for."""

    def __init__(self, system: str, user: str, max_tokens: int) -> None:
        super().__init__("the client's model must be asked")
        self.system = system
        self.user = user
        self.max_tokens = max_tokens


class ReplayChat:
    """A :class:`~memtree_mcp.llm.chat.TextGenerator` that answers from answers already given.

    The i-th question gets ``answers[i]``. Past them it raises :class:`AskClient` carrying the next
    question when ``ask`` is true (the walk is being replayed to find that question), or
    ProviderError when it is false (no more answers will come: the caller's fallback takes over).
    """

    def __init__(self, answers: Sequence[str], *, ask: bool) -> None:
        self._answers = list(answers)
        self._ask = ask
        self.asked = 0

    def complete(self, system: str, user: str, *, max_tokens: int = 400) -> str:
        index = self.asked
        self.asked += 1
        if index < len(self._answers):
            return self._answers[index]
        if self._ask:
            raise AskClient(system, user, max_tokens)
        raise ProviderError(
            f"the client's model answered {len(self._answers)} question(s) for this call, the most "
            "one call asks it"
        )


def sample(system: str, user: str, max_tokens: int) -> Any:
    """The SDK's request marker asking the client's model ``user`` under ``system``."""
    from mcp.server.mcpserver import Sample
    from mcp.types import SamplingMessage, TextContent

    message = SamplingMessage(role="user", content=TextContent(type="text", text=user))
    return Sample(
        [message], max_tokens=max_tokens, system_prompt=system, temperature=0.2, include_context="none"
    )


def answer_text(result: Any) -> str | None:
    """The text of a sampling result, or None when there is no result or it holds no text."""
    content = getattr(result, "content", None)
    text = getattr(content, "text", None)
    return text if isinstance(text, str) and text.strip() else None

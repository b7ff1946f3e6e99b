"""The text generator the service asks for summaries, judgements and the memory agent's moves.

:class:`TextGenerator` is what the service needs of a model; :class:`LiteLLMChat` is one reached
through litellm (:class:`~memtree_mcp.llm.endpoint.LiteLLMEndpoint`), and the client's own model
answers through :mod:`memtree_mcp.llm.sampling`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from memtree_mcp.errors import ProviderError
from memtree_mcp.llm.endpoint import LiteLLMEndpoint, detail

__all__ = ["LiteLLMChat", "TextGenerator"]


@runtime_checkable
class TextGenerator(Protocol):
    """Anything that turns a system and a user message into a reply text."""

    def complete(self, system: str, user: str, *, max_tokens: int = 400) -> str:
        """Return the model's reply; raise :class:`ProviderError` on any failure."""
        ...


class LiteLLMChat:
    """A chat model reached through ``litellm.completion``; the arguments are :class:`LiteLLMEndpoint`'s."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 1,
    ) -> None:
        self.endpoint = LiteLLMEndpoint(
            model,
            api_base=api_base,
            api_key=api_key,
            timeout=timeout,
            retries=retries,
            kind="LLM",
            example="openai/gpt-4o-mini",
        )
        self.model = model

    def __repr__(self) -> str:
        end = self.endpoint
        return f"LiteLLMChat(model={end.model!r}, api_base={end.api_base!r}, timeout={end.timeout})"

    def complete(self, system: str, user: str, *, max_tokens: int = 400) -> str:
        """Send one system and one user message; return the reply text, stripped of outer whitespace."""
        response = self.endpoint.call(
            "completion",
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_tokens=max_tokens,
        )
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            raise ProviderError(
                f"the LLM call with model {self.model!r} returned a malformed response "
                f"({detail(exc, None)}); check that the endpoint speaks the chat-completions API"
            ) from exc
        if not isinstance(content, str) or not content.strip():
            raise ProviderError(
                f"the LLM call with model {self.model!r} returned an empty answer; "
                "check the model name and that max_tokens leaves room for an answer"
            )
        return content.strip()

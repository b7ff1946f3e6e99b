"""The user, not the agent, confirms what the agent deletes, where the client can ask the user.

``forget`` by a query, or by the ids of summaries with ``confirm``, deletes memories the agent has
not read one by one. Where the client supports elicitation (Claude Code, Cursor, VS Code, Codex),
the call asks the user first (:func:`ask_to_forget`): how many memories and the first lines of
them, and deletes only on the user's yes; a declined or cancelled question deletes nothing and
says so. The SDK's resolvers carry the question in both revisions: an ``input_required`` round in
2026-07-28, a server-to-client request mid-call before. Where the client has no elicitation, the
two steps stay as they were (a query lists, the ids delete).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from memtree_mcp.core.extractive import gist
from memtree_mcp.core.wording import counted
from memtree_mcp.errors import MemtreeError
from memtree_mcp.server.fields import MemoryContext
from memtree_mcp.server.resolvers import Roots, namespace_from_roots

SHOWN = 5
"""Memories quoted in the question; the rest are counted."""
LINE_CHARS = 100


class Deletion(BaseModel):
    """The user's answer to "forget these memories?"."""

    delete: bool = Field(description="Yes, forget them for good")


def ask_to_forget(
    ctx: MemoryContext,
    roots: Roots = None,
    query: str | None = None,
    ids: list[str] | None = None,
    confirm: bool = False,
    namespace: str | None = None,
) -> Elicit[Deletion] | None:
    """The question for the user before a forget by query or by summaries; None when the client
    cannot ask or there is nothing to ask about (the call then goes as it always did)."""
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return None
    service = ctx.request_context.lifespan_context
    name = namespace or namespace_from_roots(roots)
    try:
        shown = service.forget_preview(query, ids, bool(confirm), name)
    except MemtreeError:
        return None  # the call itself says what is wrong, and deletes nothing
    if not shown:
        return None
    lines = [f"- {gist(' '.join(text.split()), LINE_CHARS)}" for _, text in shown[:SHOWN]]
    if len(shown) > SHOWN:
        lines.append(f"… and {counted(len(shown) - SHOWN, 'more', 'more')}")
    where = service.resolve_namespace(name)
    message = f"Forget {counted(len(shown), 'memory', 'memories')} from '{where}' for good?\n" + "\n".join(
        lines
    )
    return Elicit(message, Deletion)


Confirmed = Annotated[ElicitationResult[Deletion], Resolve(ask_to_forget)]


def asked(decision: object) -> bool:
    """Whether the user was asked at all (the resolver had a question for this call)."""
    return decision is not None and not (isinstance(decision, AcceptedElicitation) and decision.data is None)


def said_yes(decision: object) -> bool:
    """Whether the user's answer is a yes (accepted, with delete checked)."""
    return (
        isinstance(decision, AcceptedElicitation) and decision.data is not None and bool(decision.data.delete)
    )

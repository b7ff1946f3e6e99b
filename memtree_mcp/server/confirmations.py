"""The user, not the agent, confirms what the agent deletes, where the client can ask the user.

``forget`` by a query, or by the ids of summaries with ``confirm``, deletes memories the agent has
not read one by one. Where the client supports (form) elicitation (Claude Code, Cursor, VS Code,
Codex), the call asks the user first (:func:`confirm_forget`): how many memories and the first
lines of them. A yes deletes exactly the ids it was shown, once (DESIGN §7); a no, a cancel or an
answer without a choice deletes nothing and says so. Where the client has no elicitation, the two
steps stay as they were (a query lists, the ids delete).

The ids shown travel with the question (:class:`Shown`), never recomputed after the answer: a
memory stored by another client while the user reads the question would be deleted with them, and
a look-alike would read the same in the question (issue 47).

- In 2026-07-28 the question is an input-required round. :class:`Shown` is the round's request
  state, which the SDK's boundary seals (AES-GCM under a key the server makes when it starts, bound
  to the tool and its arguments, for 10 minutes), so what comes back is what this server wrote.
  Every round carries its question (some clients drop a round that carries state only), and the
  question is a form, the only mode some clients (Claude Code) offer.
- In 2025-11-25 it is a request in the middle of the call, which holds the ids itself.

An answer is used once (:func:`answered_once`): the final round sent again (a client's retry)
deletes nothing more. The answers used are recorded in the server, not in the namespace, because a
state comes back only to the server that sealed it: another server on the same store, or this one
restarted, has another key and refuses it (tests/test_forget_shown.py sends one to a second
server). A server given shared keys (``request_state_security``) would need the record in the
namespace.

The tool drives these rounds itself rather than through the SDK's resolvers: a resolver's state
holds its answers and a digest of its question, not the ids, and a tool has one state channel, so
``forget`` also asks for the client's workspace folder by hand (MEMTREE_NAMESPACE=auto).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal
from weakref import WeakKeyDictionary

import anyio.to_thread
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field, ValidationError

from memtree_mcp.core.trees.extractive import gist
from memtree_mcp.core.wording import counted
from memtree_mcp.errors import MemtreeError
from memtree_mcp.server.fields import MemoryContext
from memtree_mcp.server.resolvers import namespace_from_roots, wants_roots

SHOWN = 5
"""Memories quoted in the question; the rest are counted."""
LINE_CHARS = 100
QUESTION = "forget"
"""The question's key among a round's input requests (2026-07-28)."""
ROOTS = "roots"
INPUT_REQUIRED = "2026-07-28"
"""The first revision whose questions are input-required rounds."""
# How long an answer used is remembered: the SDK's lifetime of a request state (its
# RequestStateSecurity default, which this server keeps) and its allowance for clock skew.
STATE_SECONDS = 600.0 + 60.0

Verdict = Literal["yes", "no", "empty"]
"""The user's answer: yes, no (declined, cancelled or unchecked), or an accept with no choice in it."""

ANSWERED = {
    "no": "Nothing was deleted: the user did not confirm.",
    "empty": "Nothing was deleted: the client sent the user's answer without a yes or no.",
    "spent": "Nothing was deleted: this call repeats an answer already used.",
}
"""What the model reads when nothing was deleted after a question, by the answer."""


class Deletion(BaseModel):
    """The user's answer to "forget these memories?"."""

    delete: bool = Field(description="Yes, forget them for good")


class Shown(BaseModel):
    """What one question showed the user: the ids a yes deletes, in the namespace resolved, when
    it was asked, and a nonce that makes its answer usable once."""

    ids: list[str]
    namespace: str
    asked_at: float
    nonce: str


@dataclass(frozen=True, slots=True)
class Confirmation:
    """How a forget call goes on: in ``namespace`` (the one it names, its workspace's or None for
    the default); if the user was asked, what they were shown and their ``verdict``."""

    namespace: str | None
    shown: Shown | None = None
    verdict: Verdict | None = None


async def confirm_forget(
    ctx: MemoryContext, query: str | None, ids: list[str] | None, confirm: bool, namespace: str | None
) -> Confirmation | InputRequiredResult:
    """Ask the user before a forget by ``query``, or by the summaries among ``ids`` with
    ``confirm``; an InputRequiredResult is the round to return (2026-07-28). Nobody is asked when
    the client cannot ask or there is nothing to ask about (the call then goes as it always did).
    Raises what the client's requests raise in 2025-11-25 (MCPError)."""
    rounds = _rounds(ctx)
    responses = (ctx.input_responses or {}) if rounds else {}
    if rounds and (shown := _shown_in(ctx.request_state)) is not None:
        answer = responses.get(QUESTION)
        if isinstance(answer, ElicitResult):
            return Confirmation(shown.namespace, shown, _verdict(answer))
        namespace = shown.namespace  # the state came back without an answer: ask again
    if wants_roots(namespace, ctx):
        roots = responses.get(ROOTS) if rounds else await _list_roots(ctx)
        if not isinstance(roots, ListRootsResult):
            if rounds:
                return InputRequiredResult(input_requests={ROOTS: ListRootsRequest()})
            roots = None
        namespace = namespace_from_roots(roots)
    if not _can_ask(ctx, rounds):
        return Confirmation(namespace)
    service = ctx.request_context.lifespan_context
    try:
        listed = await anyio.to_thread.run_sync(service.forget_preview, query, ids, confirm, namespace)
        where = service.resolve_namespace(namespace)
    except MemtreeError:
        return Confirmation(namespace)  # the call itself says what is wrong, and deletes nothing
    if not listed:
        return Confirmation(namespace)
    ids_shown = [leaf_id for leaf_id, _ in listed]
    shown = Shown(ids=ids_shown, namespace=where, asked_at=time.time(), nonce=secrets.token_urlsafe(16))
    message = _question(where, [text for _, text in listed])
    schema = render_elicitation_schema(Deletion)
    if rounds:
        question = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
        return InputRequiredResult(input_requests={QUESTION: question}, request_state=shown.model_dump_json())
    answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return Confirmation(where, shown, _verdict(answer))


@contextmanager
def answered_once(ctx: MemoryContext, shown: Shown) -> Iterator[bool]:
    """True the first time the answer to ``shown`` is used on this server, False after: the
    answer is recorded as used for the block, and forgotten again if the block raises (a deletion
    that failed deleted nothing, and the client may retry it)."""
    used = _used.setdefault(ctx.mcp_server, _Used())
    first = used.take(shown.nonce)
    try:
        yield first
    except BaseException:
        if first:
            used.give_back(shown.nonce)
        raise


class _Used:
    """The nonces of the answers one server has used, each kept while its state can come back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: dict[str, float] = {}

    def take(self, nonce: str) -> bool:
        now = time.monotonic()
        with self._lock:
            # A state is sealed before its answer is used, so none carrying this nonce outlives it.
            for old in [n for n, at in self._at.items() if now - at > STATE_SECONDS]:
                del self._at[old]
            if nonce in self._at:
                return False
            self._at[nonce] = now
            return True

    def give_back(self, nonce: str) -> None:
        with self._lock:
            self._at.pop(nonce, None)


# Keyed by the server the SDK puts in every context (each has its own sealing key); an entry goes
# with its server.
_used: WeakKeyDictionary[MCPServer, _Used] = WeakKeyDictionary()


def _rounds(ctx: MemoryContext) -> bool:
    """Whether this call's questions are input-required rounds (2026-07-28) rather than requests
    in the middle of the call."""
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, INPUT_REQUIRED)


def _can_ask(ctx: MemoryContext, rounds: bool) -> bool:
    """Whether the client takes a form question (a client offering only URL elicitation does
    not), and before 2026-07-28 whether this call can send it one."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return False
    return rounds or ctx.session.can_send_request


async def _list_roots(ctx: MemoryContext) -> ListRootsResult | None:
    """The client's workspace folders, asked in the middle of the call (before 2026-07-28)."""
    if not ctx.session.can_send_request:
        return None
    return await ctx.session.send_request(
        ListRootsRequest(), ListRootsResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
    )


def _shown_in(state: str | None) -> Shown | None:
    """What the question of an earlier round showed, from the request state the client sent back
    (the SDK has checked its seal); None without one."""
    if not state:
        return None
    try:
        return Shown.model_validate_json(state)
    except ValidationError:
        return None


def _question(where: str, texts: list[str]) -> str:
    """Forget N memories from 'where' for good? with the first lines of the first SHOWN."""
    lines = [f"- {gist(' '.join(text.split()), LINE_CHARS)}" for text in texts[:SHOWN]]
    if len(texts) > SHOWN:
        lines.append(f"… and {counted(len(texts) - SHOWN, 'more', 'more')}")
    return f"Forget {counted(len(texts), 'memory', 'memories')} from '{where}' for good?\n" + "\n".join(lines)


def _verdict(answer: ElicitResult) -> Verdict:
    if answer.action != "accept":
        return "no"
    if answer.content is None:
        return "empty"
    try:
        return "yes" if Deletion.model_validate(answer.content).delete else "no"
    except ValidationError:
        return "empty"

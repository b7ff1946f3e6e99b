"""The five tools the model calls: remember, recall, navigate, summarize and forget.

Kept thin: arguments are checked by their schema (the types of fields.py) and again by the
service, errors the model should read become ``ToolError``, and blocking work runs in a worker
thread so the event loop keeps serving. Each tool answers with the text the model reads
(``service/rendering.py``) and, for programs, ids and numbers (``outputs.py`` says why not more). The
descriptions are short on purpose: every client sends all of them in every conversation. The
tools are plain functions rather than closures over one service: the SDK builds a tool's schema
from its signature, so a signature written once is a schema written once, and each call finds
its service as the lifespan context of the server that received it.
"""

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field

from memtree_mcp.core.names import DEFAULT_STRATEGY, KindFilter, Move, Strategy, TreeName
from memtree_mcp.core.ranking.relevance import DEFAULT_MIN_RELEVANCE
from memtree_mcp.errors import MemtreeError, failure_reason
from memtree_mcp.llm.sampling import ReplayChat, answer_text
from memtree_mcp.server.confirmations import ANSWERED, answered_once, confirm_forget
from memtree_mcp.server.fields import (
    AgentSteps,
    ChildIndex,
    Content,
    Flag,
    HitCount,
    MemoryContext,
    MemoryIds,
    Namespace,
    NodeId,
    OptionalQuery,
    Query,
    Role,
    Session,
    Share,
    SummaryTokens,
    Supersedes,
    Tags,
    Timestamp,
    TokenBudget,
)
from memtree_mcp.server.outputs import (
    ForgetOutput,
    NavigateOutput,
    RecallOutput,
    RememberOutput,
    SummaryOutput,
)
from memtree_mcp.server.resolvers import (
    SAMPLED_AGENT_STEPS,
    Roots,
    agent_resolvers,
    judge_answers,
    judge_resolvers,
    namespace_from_roots,
    summary_answers,
    summary_resolvers,
    with_answers,
)
from memtree_mcp.service import rendering
from memtree_mcp.service.inputs import DEFAULT_AGENT_STEPS, DEFAULT_K, DEFAULT_SUMMARY_TOKENS
from memtree_mcp.service.requests import RecallRequest

if TYPE_CHECKING:
    from memtree_mcp.service.memory_service import MemoryService

T = TypeVar("T")
log = logging.getLogger("memtree_mcp")


async def remember(
    ctx: MemoryContext,
    content: Content,
    role: Role = "user",
    tags: Annotated[Tags, Field(description="Labels.")] = [],  # noqa: B006 - the SDK reads defaults from the signature; the list is never mutated
    timestamp: Annotated[Timestamp, Field(description="When (ISO 8601); else now.")] = None,
    session: Annotated[Session, Field(description="Conversation id.")] = None,
    namespace: Namespace = None,
    supersedes: Annotated[Supersedes, Field(description="Ids of memories it updates.")] = None,
    unlink: Annotated[Supersedes, Field(description="Ids to unlink.")] = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, RememberOutput]:
    """Store a memory after each turn that taught you something durable: one self-contained fact,
    decision or preference per call. Never store secrets. If it lists memories it may update, call
    again with supersedes=[id] for each it replaces."""
    service: MemoryService = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    stored = await _run(
        lambda: service.remember(
            content, role, tags, timestamp, session, namespace, supersedes, unlink=unlink, by="agent"
        )
    )
    return _answer(rendering.remember_text(stored), RememberOutput.of(stored))


def remember_tool(max_content_chars: int) -> Callable[..., Awaitable[CallToolResult]]:
    """``remember`` with ``content`` limited to ``max_content_chars`` in its schema.

    The limit is a setting (MEMTREE_MAX_CONTENT_CHARS), so each server registers a copy whose
    signature carries its own service's value; changing ``remember`` itself would change it for
    every server built in the process.
    """

    @functools.wraps(remember)
    async def limited(**args: Any) -> CallToolResult:
        return await remember(**args)

    signature = inspect.signature(remember)
    content: Any = Annotated[signature.parameters["content"].annotation, Field(max_length=max_content_chars)]
    params = [
        p.replace(annotation=content) if p.name == "content" else p for p in signature.parameters.values()
    ]
    limited.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    limited.__annotations__ = {**remember.__annotations__, "content": content}
    return limited


@with_answers("judge", judge_resolvers)
async def recall(
    ctx: MemoryContext,
    query: Query,
    k: Annotated[HitCount, Field(description="Most hits.")] = DEFAULT_K,
    max_tokens: Annotated[TokenBudget, Field(description="Most tokens (4 chars each).")] = None,
    namespace: Namespace = None,
    min_relevance: Annotated[
        Share, Field(description="Hide hits below this; 0 shows all.")
    ] = DEFAULT_MIN_RELEVANCE,
    strategy: Annotated[Strategy, Field(description="Ranking; 'gather' is best.")] = DEFAULT_STRATEGY,
    kind: Annotated[KindFilter, Field(description="Memories, summaries or both.")] = "any",
    time_from: Annotated[Timestamp, Field(description="From (ISO 8601).")] = None,
    time_to: Annotated[Timestamp, Field(description="Until (ISO 8601).")] = None,
    tags: Annotated[Tags, Field(description="Any of these tags.")] = [],  # noqa: B006 - the SDK reads defaults from the signature; the list is never mutated
    session: Annotated[Session, Field(description="Only this conversation.")] = None,
    expand: Annotated[Flag, Field(description="Summaries as their memories.")] = False,
    roots: Roots = None,
    as_of: Annotated[Timestamp, Field(description="Version or ISO 8601 time.")] = None,
    **judges: Any,
) -> Annotated[CallToolResult, RecallOutput]:
    """Look up long-term memory before answering, with the user's request or its subject. Hits best
    first: rank. [relevance 0-1 · date] text {id}. "superseded by N": line N replaced it."""
    service: MemoryService = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    judgements = judge_answers(ctx, {"namespace": namespace, **judges})
    # The request is written once, where it is handed on: the worker thread runs exactly this call.
    found = await _run(
        lambda: service.look_up(
            RecallRequest(
                query,
                k=k,
                max_tokens=max_tokens,
                namespace=namespace,
                strategy=strategy,
                kind=kind,
                time_from=time_from,
                time_to=time_to,
                tags=tags,
                session=session,
                expand=expand,
                as_of=as_of,
                min_relevance=min_relevance,
            ),
            judgements,
        )
    )
    # The hits keep within max_tokens; a notice that none fits is never cut (it says what would).
    return _answer(rendering.recall_text(found), RecallOutput.of(found))


@with_answers("step", agent_resolvers)
async def navigate(
    ctx: MemoryContext,
    node_id: Annotated[NodeId, Field(description="Cursor; the root if left out.")] = None,
    move: Annotated[Move, Field(description="'down': to child `index`; 'switch': the other tree.")] = "stay",
    index: Annotated[ChildIndex, Field(description="Child for 'down', from 0.")] = None,
    tree: Annotated[
        TreeName, Field(description="'semantic' (by subject) or 'temporal' (by time).")
    ] = "semantic",
    query: Annotated[OptionalQuery, Field(description="What you are looking for.")] = None,
    agent: Annotated[Flag, Field(description="Walk for `query`.")] = False,
    max_steps: Annotated[AgentSteps, Field(description="Most moves of the agent.")] = DEFAULT_AGENT_STEPS,
    namespace: Namespace = None,
    roots: Roots = None,
    **steps: Any,
) -> Annotated[CallToolResult, NavigateOutput]:
    """Browse memory by subject (semantic tree) or time (temporal tree): a node, its children and
    neighbours. With agent=true and a query the server walks for you."""
    service: MemoryService = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    answers = [answer_text(steps.get(f"step_{k}")) for k in range(SAMPLED_AGENT_STEPS)]
    given = answers[: answers.index(None)] if None in answers else answers
    model = ReplayChat([a for a in given if a is not None], ask=False) if given else None
    shown = await _run(
        lambda: service.navigate(
            node_id, move, index, tree, query, agent, max_steps, namespace, generator=model
        )
    )
    return _answer(rendering.navigate_text(shown), NavigateOutput.of(shown))


@with_answers("judge", judge_resolvers)
@with_answers("summary", summary_resolvers)
async def summarize(
    ctx: MemoryContext,
    node_id: Annotated[NodeId, Field(description="Summarize the subtree under this node.")] = None,
    time_from: Annotated[Timestamp, Field(description="Period start (ISO 8601).")] = None,
    time_to: Annotated[Timestamp, Field(description="Period end (ISO 8601).")] = None,
    query: Annotated[OptionalQuery, Field(description="A subject to summarize.")] = None,
    max_tokens: Annotated[
        SummaryTokens, Field(description="Length (4 chars a token).")
    ] = DEFAULT_SUMMARY_TOKENS,
    namespace: Namespace = None,
    roots: Roots = None,
    **summaries: Any,
) -> Annotated[CallToolResult, SummaryOutput]:
    """Summarize what memory holds now: everything, a subtree (node_id), a period or a subject
    (query); at most one. Each line ends with its id."""
    service: MemoryService = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    args = {
        "node_id": node_id,
        "time_from": time_from,
        "time_to": time_to,
        "query": query,
        "max_tokens": max_tokens,
        "namespace": namespace,
        **summaries,
    }
    answers = summary_answers(ctx, args)
    judgements = judge_answers(ctx, args)
    summary = await _run(
        lambda: service.summarize(
            node_id, time_from, time_to, query, max_tokens, namespace, answers=answers, judgements=judgements
        )
    )
    return _answer(rendering.summary_text(summary), SummaryOutput.of(summary))


async def forget(
    ctx: MemoryContext,
    query: Annotated[
        OptionalQuery, Field(description="Asks the user to delete matches, else lists them.")
    ] = None,
    ids: Annotated[MemoryIds, Field(description="Delete these memories.")] = None,
    confirm: Annotated[Flag, Field(description="Also delete what a summary in ids covers.")] = False,
    namespace: Namespace = None,
) -> Annotated[CallToolResult, ForgetOutput] | InputRequiredResult:
    """Delete memories the user wants forgotten: list them with query, then pass the ids to delete.
    At most 50 a call, never a root."""
    service: MemoryService = ctx.request_context.lifespan_context
    asked = await confirm_forget(ctx, query, ids, bool(confirm), namespace)  # server/confirmations.py
    if isinstance(asked, InputRequiredResult):
        return asked  # a round of 2026-07-28: the client answers and calls again
    shown = asked.shown
    if shown is None:  # nobody was asked: a query lists, ids delete
        done = await _run(lambda: service.forget(None, query, confirm, asked.namespace, ids=ids))
        return _answer(rendering.forget_text(done), ForgetOutput.of(done))
    with answered_once(ctx, shown) as first:  # an answer sent again deletes nothing more
        said = asked.verdict if first else "spent"
        if said != "yes":
            nothing = ForgetOutput(deleted=[], candidates=[], namespace=shown.namespace)
            return _answer(ANSWERED[said or "no"], nothing)
        # Exactly the ids the user was shown: never what matches now (issue 47).
        done = await _run(
            lambda: service.forget_shown(shown.ids, shown.asked_at, query, ids, confirm, shown.namespace)
        )
    return _answer(rendering.forget_text(done), ForgetOutput.of(done))


def _answer(text: str, output: BaseModel) -> CallToolResult:
    """A tool's result: ``text`` for the model, ``output`` (ids and numbers) for programs."""
    # None is left out rather than sent: the published schemas have no null branches.
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=output.model_dump(mode="json", exclude_none=True),
    )


async def _run(operation: Callable[[], T]) -> T:
    """Run a blocking service call in a worker thread; turn anticipated errors into ToolError.

    ``operation`` is the call written out (a lambda), not a callable and its arguments apart, so
    that a reader follows each tool's arguments into the service at the line that passes them.

    Lance reports I/O as RuntimeError or OSError; one that reaches here (the files of a version
    deleted under a read by another process's purge or compaction, say) is told to the model as
    what it is and that a retry works, not as the SDK's bare "Error executing tool" (issue 31).
    Its traceback goes to the log.
    """
    try:
        return await anyio.to_thread.run_sync(operation)
    except MemtreeError as exc:
        raise ToolError(str(exc)) from exc
    except (RuntimeError, OSError) as exc:
        log.warning("a call failed in the store", exc_info=True)
        raise ToolError(
            f"the memory store failed under this call ({failure_reason(exc)}); another process may "
            "have been rewriting it (a purge or a compaction): retry the call. Nothing stored was lost."
        ) from exc

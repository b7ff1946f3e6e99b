"""The five tools the model calls: remember, recall, navigate, summarize and forget.

Kept thin: arguments are checked by their schema (the types of fields.py) and again by the
service, errors the model should read become ``ToolError``, and blocking work runs in a worker
thread so the event loop keeps serving. The tools are plain functions rather than closures over one
service: the SDK builds a tool's schema from its signature, so a signature written once is a schema
written once, and each call finds its service as the lifespan context of the server that received it.
"""

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memtree_mcp.errors import MemtreeError
from memtree_mcp.inputs import DEFAULT_AGENT_STEPS, DEFAULT_K, DEFAULT_SUMMARY_TOKENS
from memtree_mcp.providers.sampling import ReplayChat, answer_text
from memtree_mcp.results import ForgetResult, NavigateResult, RecallResult, RememberResult, SummaryResult
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
    SummaryTokens,
    Tags,
    Timestamp,
    TokenBudget,
)
from memtree_mcp.server.resolvers import (
    SAMPLED_AGENT_STEPS,
    Roots,
    agent_resolvers,
    namespace_from_roots,
    summary_answers,
    summary_resolvers,
    with_answers,
)

T = TypeVar("T")


async def remember(
    ctx: MemoryContext,
    content: Annotated[
        Content,
        Field(
            description="What to remember: a fact, decision, preference or turn. Long text is split "
            "into ordered chunks."
        ),
    ],
    role: Annotated[Role, Field(description="Who said it: 'user', 'assistant', a name…")] = "user",
    tags: Annotated[Tags, Field(description="Short labels to file it under.")] = [],  # noqa: B006 - the SDK reads defaults from the signature; the list is never mutated
    timestamp: Annotated[
        Timestamp,
        Field(description="When it happened, ISO 8601 (e.g. '2024-05-08T13:56:00Z'); now if left out."),
    ] = None,
    session: Annotated[Session, Field(description="Conversation or session id it belongs to.")] = None,
    namespace: Namespace = None,
    roots: Roots = None,
) -> RememberResult:
    """Store a memory for later conversations. Call it after each turn with what is worth keeping.

    Returns the ids of the stored leaves, whether the content was already known (then nothing is
    added), and the semantic path (branches from the top down) where it was filed.
    """
    service = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    return await _run(service.remember, content, role, tags, timestamp, session, namespace)


def remember_tool(max_content_chars: int) -> Callable[..., Awaitable[RememberResult]]:
    """``remember`` with ``content`` limited to ``max_content_chars`` in its schema.

    The limit is a setting (MEMTREE_MAX_CONTENT_CHARS), so each server registers a copy whose
    signature carries its own service's value; changing ``remember`` itself would change it for
    every server built in the process.
    """

    @functools.wraps(remember)
    async def limited(**args: Any) -> RememberResult:
        return await remember(**args)

    signature = inspect.signature(remember)
    content: Any = Annotated[signature.parameters["content"].annotation, Field(max_length=max_content_chars)]
    params = [
        p.replace(annotation=content) if p.name == "content" else p for p in signature.parameters.values()
    ]
    limited.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    limited.__annotations__ = {**remember.__annotations__, "content": content}
    return limited


async def recall(
    ctx: MemoryContext,
    query: Annotated[Query, Field(description="What to look up: the user's question or its subject.")],
    k: Annotated[HitCount, Field(description="How many hits at most.")] = DEFAULT_K,
    max_tokens: Annotated[
        TokenBudget, Field(description="Budget for the hits' text (about 4 characters a token).")
    ] = None,
    namespace: Namespace = None,
    strategy: Annotated[
        Literal["hybrid", "collapsed", "propagate-down", "propagate-up", "refine"],
        Field(
            description="'hybrid' (default): meaning and exact words, with what was said around them; "
            "'collapsed': meaning only, over memories and summaries alike; 'propagate-down' / "
            "'propagate-up': relevance spread along the time tree; 'refine': descend the subject tree."
        ),
    ] = "hybrid",
    kind: Annotated[
        Literal["any", "leaf", "summary"],
        Field(description="'leaf' for single memories only, 'summary' for summaries only."),
    ] = "any",
    time_from: Annotated[Timestamp, Field(description="Only memories from this time on (ISO 8601).")] = None,
    time_to: Annotated[Timestamp, Field(description="Only memories up to this time (ISO 8601).")] = None,
    tags: Annotated[Tags, Field(description="Only memories with at least one of these tags.")] = [],  # noqa: B006 - the SDK reads defaults from the signature; the list is never mutated
    session: Annotated[Session, Field(description="Only memories of this session.")] = None,
    expand: Annotated[
        Flag, Field(description="Replace each summary by its best memories (memories only).")
    ] = False,
    roots: Roots = None,
    as_of: Annotated[
        Timestamp,
        Field(description="Recall from memory as it was then: a version number or an ISO 8601 time."),
    ] = None,
) -> RecallResult:
    """Look up long-term memory. Call it before answering, with the user's request or its subject.

    Returns the best hits first: single memories (kind 'leaf') and summaries of related memories
    (kind 'summary'), each with its score, time span and breadcrumb of subjects.
    """
    service = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    return await _run(
        functools.partial(
            service.recall,
            strategy=strategy,
            kind=kind,
            time_from=time_from,
            time_to=time_to,
            tags=tags,
            session=session,
            expand=expand,
            as_of=as_of,
        ),
        query,
        k,
        max_tokens,
        namespace,
    )


@with_answers("step", agent_resolvers)
async def navigate(
    ctx: MemoryContext,
    node_id: Annotated[
        NodeId,
        Field(description="Where the cursor is (an id from recall or navigate); the root if left out."),
    ] = None,
    move: Annotated[
        Literal["stay", "reset", "up", "down", "left", "right", "switch"],
        Field(
            description="'down' to child `index` (or the best child for `query`), 'up' to the parent, "
            "'left'/'right' to the previous/next sibling (the previous/next period in the temporal "
            "tree), 'reset' to the root, 'switch' to the same place in the other tree."
        ),
    ] = "stay",
    index: Annotated[ChildIndex, Field(description="Which child for 'down', from 0.")] = None,
    tree: Annotated[
        Literal["semantic", "temporal"],
        Field(description="'semantic' (by subject) or 'temporal' (by time)."),
    ] = "semantic",
    query: Annotated[OptionalQuery, Field(description="What you are looking for.")] = None,
    agent: Annotated[
        Flag,
        Field(description="Let the server's memory agent walk the tree for `query` and report back."),
    ] = False,
    max_steps: Annotated[
        AgentSteps, Field(description="Most moves the agent may make.")
    ] = DEFAULT_AGENT_STEPS,
    namespace: Namespace = None,
    roots: Roots = None,
    **steps: Any,
) -> NavigateResult:
    """Browse memory like a file system: look at a node, its children and neighbours, and move.

    Memory has two trees over the same memories: 'semantic' groups them by subject, 'temporal' by
    time. With agent=true and a query, the server walks the tree itself and returns where it
    settled, the moves it made, whether it judged that enough, and the best memories there.
    """
    service = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    answers = [answer_text(steps.get(f"step_{k}")) for k in range(SAMPLED_AGENT_STEPS)]
    given = answers[: answers.index(None)] if None in answers else answers
    model = ReplayChat([a for a in given if a is not None], ask=False) if given else None
    return await _run(
        functools.partial(service.navigate, generator=model),
        node_id,
        move,
        index,
        tree,
        query,
        agent,
        max_steps,
        namespace,
    )


@with_answers("summary", summary_resolvers)
async def summarize(
    ctx: MemoryContext,
    node_id: Annotated[
        NodeId, Field(description="Summarize the subtree under this node (an id from recall).")
    ] = None,
    time_from: Annotated[Timestamp, Field(description="Start of a period to summarize (ISO 8601).")] = None,
    time_to: Annotated[Timestamp, Field(description="End of the period (ISO 8601).")] = None,
    query: Annotated[OptionalQuery, Field(description="A subject to summarize.")] = None,
    max_tokens: Annotated[
        SummaryTokens, Field(description="Length of the summary (about 4 characters a token).")
    ] = DEFAULT_SUMMARY_TOKENS,
    namespace: Namespace = None,
    roots: Roots = None,
    **summaries: Any,
) -> SummaryResult:
    """Summarize what memory holds: everything (no argument), a subtree, a period or a subject.

    Give at most one of node_id, a period (time_from/time_to) and query. Each line of the summary
    ends with the id of the node it comes from; a larger max_tokens reads the memory in more detail.
    """
    service = ctx.request_context.lifespan_context
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
    return await _run(
        functools.partial(service.summarize, answers=answers),
        node_id,
        time_from,
        time_to,
        query,
        max_tokens,
        namespace,
    )


async def forget(
    ctx: MemoryContext,
    query: Annotated[
        OptionalQuery,
        Field(description="List the memories matching this (id, relevance, text); deletes nothing."),
    ] = None,
    ids: Annotated[
        MemoryIds, Field(description="Delete these memories: ids from recall or a query's list.")
    ] = None,
    node_id: Annotated[
        NodeId, Field(description="Delete this memory, or with confirm every memory under this summary.")
    ] = None,
    confirm: Annotated[Flag, Field(description="Delete every memory under the summary node_id.")] = False,
    namespace: Namespace = None,
    roots: Roots = None,
) -> ForgetResult:
    """Delete memories. First list them with query, then pass the ids of those to delete as ids.

    node_id deletes one memory, or with confirm a summary's memories (50 at most, never a root).
    """
    service = ctx.request_context.lifespan_context
    namespace = namespace or namespace_from_roots(roots)
    return await _run(functools.partial(service.forget, ids=ids), node_id, query, confirm, namespace)


async def _run(operation: Callable[..., T], *args: object) -> T:
    """Run a blocking service call in a worker thread; turn anticipated errors into ToolError."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(operation, *args))
    except MemtreeError as exc:
        raise ToolError(str(exc)) from exc

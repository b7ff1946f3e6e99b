"""The MCP face of the memory: tools, instructions and a prompt, over one MemoryService.

Kept thin: arguments are checked by their schema (pydantic ``Field`` limits) and again by the
service, errors the model should read become ``ToolError``, and blocking work runs in a thread so
the event loop keeps serving. Nothing heavy is imported here: lancedb and onnxruntime load on the
first tool call, after the handshake.
"""

import functools
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from memtree_mcp import __version__
from memtree_mcp.errors import MemtreeError, NotFound
from memtree_mcp.inputs import DEFAULT_AGENT_STEPS, DEFAULT_K, DEFAULT_SUMMARY_TOKENS
from memtree_mcp.providers.sampling import ReplayChat, answer_text
from memtree_mcp.results import ForgetResult, NavigateResult, RecallResult, RememberResult, SummaryResult
from memtree_mcp.server.fields import (
    AgentSteps,
    ChildIndex,
    Content,
    HitCount,
    MemoryContext,
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
from memtree_mcp.server.instructions import INSTRUCTIONS, USE_MEMORY_PROMPT
from memtree_mcp.server.resolvers import (
    SAMPLED_AGENT_STEPS,
    Roots,
    agent_resolvers,
    namespace_from_roots,
    summary_answers,
    summary_resolvers,
    with_answers,
)
from memtree_mcp.service import MemoryService

T = TypeVar("T")

HANDSHAKE_METHODS = frozenset({"initialize", "notifications/initialized", "server/discover"})


def build_server(service: MemoryService) -> MCPServer:
    """An MCP server exposing ``service``. The caller owns the service and closes it.

    The lifespan does not close it: over SSE the SDK runs the lifespan once per connection, so a
    client leaving would close the store under the clients still connected.
    """

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[MemoryService]:
        yield service

    mcp = MCPServer(
        name="memtree-mcp",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=service.settings.log_level,
    )

    warm_up = threading.Thread(target=service.warm_up, name="memtree-warm-up", daemon=True)

    async def warm_up_after_handshake(ctx: Any, call_next: Any) -> Any:
        # The heavy imports and the model load start in the background once the first request after
        # the handshake (usually tools/list) has been answered: starting them earlier slowed that
        # answer by competing for the interpreter; starting them later makes the first recall wait.
        result = await call_next(ctx)
        if ctx.method not in HANDSHAKE_METHODS and warm_up.ident is None:
            warm_up.start()
        return result

    mcp.middleware.append(warm_up_after_handshake)

    @mcp.tool(
        annotations=ToolAnnotations(
            title="Remember", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        )
    )
    async def remember(
        content: Annotated[
            Content,
            Field(
                description="What to remember: a fact, decision, preference or turn. Long text is split "
                "into ordered chunks.",
                max_length=service.settings.max_content_chars,
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
        namespace = namespace or namespace_from_roots(roots)
        return await _run(service.remember, content, role, tags, timestamp, session, namespace)

    @mcp.tool(annotations=ToolAnnotations(title="Recall", read_only_hint=True, open_world_hint=False))
    async def recall(
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
        time_from: Annotated[
            Timestamp, Field(description="Only memories from this time on (ISO 8601).")
        ] = None,
        time_to: Annotated[Timestamp, Field(description="Only memories up to this time (ISO 8601).")] = None,
        tags: Annotated[Tags, Field(description="Only memories with at least one of these tags.")] = [],  # noqa: B006 - the SDK reads defaults from the signature; the list is never mutated
        session: Annotated[Session, Field(description="Only memories of this session.")] = None,
        expand: Annotated[
            bool, Field(description="Replace each summary by its best memories (memories only).")
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

    @mcp.tool(annotations=ToolAnnotations(title="Navigate", read_only_hint=True, open_world_hint=False))
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
            bool,
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

    @mcp.tool(annotations=ToolAnnotations(title="Summarize", read_only_hint=True, open_world_hint=False))
    @with_answers("summary", summary_resolvers)
    async def summarize(
        ctx: MemoryContext,
        node_id: Annotated[
            NodeId, Field(description="Summarize the subtree under this node (an id from recall).")
        ] = None,
        time_from: Annotated[
            Timestamp, Field(description="Start of a period to summarize (ISO 8601).")
        ] = None,
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

    @mcp.tool(
        annotations=ToolAnnotations(
            title="Forget", read_only_hint=False, destructive_hint=True, idempotent_hint=False
        )
    )
    async def forget(
        node_id: Annotated[
            NodeId, Field(description="The memory (or, with confirm, the summary) to delete.")
        ] = None,
        query: Annotated[
            OptionalQuery, Field(description="Find memories to delete; lists them unless confirm.")
        ] = None,
        confirm: Annotated[
            bool, Field(description="Really delete what the query finds or the summary covers.")
        ] = False,
        namespace: Namespace = None,
        roots: Roots = None,
    ) -> ForgetResult:
        """Delete memories for good: one memory by id, every memory under a summary (confirm=true), or the
        memories a query finds (confirm=true; without it the candidates are only listed).

        Deleted text disappears from every summary and from recall at once.
        """
        namespace = namespace or namespace_from_roots(roots)
        return await _run(service.forget, node_id, query, confirm, namespace)

    @mcp.resource(
        "memtree://{namespace}/outline/{tree}",
        name="outline",
        description="The semantic (by subject) or temporal (by time) tree of a namespace, three levels deep.",
        mime_type="text/plain",
    )
    async def outline(namespace: str, tree: str) -> str:
        return await _read(service.outline, tree, 3, namespace)

    @mcp.resource(
        "memtree://{namespace}/node/{node_id}",
        name="node",
        description="One memory or summary, with its children and neighbours, as JSON.",
        mime_type="application/json",
    )
    async def node(namespace: str, node_id: str) -> str:
        shown = await _read(service.node_view, node_id, namespace)
        return shown.model_dump_json()

    @mcp.prompt(name="use-memory", description="How to use this long-term memory in a conversation.")
    def use_memory() -> str:
        return USE_MEMORY_PROMPT

    return mcp


async def _read(operation: Callable[..., T], *args: object) -> T:
    """Like ``_run``, for resources: anticipated errors become ResourceError."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(operation, *args))
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except MemtreeError as exc:
        raise ResourceError(str(exc)) from exc


async def _run(operation: Callable[..., T], *args: object) -> T:
    """Run a blocking service call in a worker thread; turn anticipated errors into ToolError."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(operation, *args))
    except MemtreeError as exc:
        raise ToolError(str(exc)) from exc

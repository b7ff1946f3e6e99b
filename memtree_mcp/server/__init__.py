"""The MCP face of the memory: tools, instructions and a prompt, over one MemoryService.

Kept thin: arguments are checked by their schema (pydantic ``Field`` limits) and again by the
service, errors the model should read become ``ToolError``, and blocking work runs in a thread so
the event loop keeps serving. Nothing heavy is imported here: lancedb and onnxruntime load on the
first tool call, after the handshake.
"""

import functools
import inspect
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import unquote, urlparse

import anyio.to_thread
from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import CreateMessageResult, ListRootsResult, ToolAnnotations
from pydantic import Field

from memtree_mcp import __version__
from memtree_mcp.config import AUTO_NAMESPACE
from memtree_mcp.errors import MemtreeError, NotFound
from memtree_mcp.inputs import DEFAULT_AGENT_STEPS, DEFAULT_K, DEFAULT_SUMMARY_TOKENS, MAX_NAMESPACE_CHARS
from memtree_mcp.providers.sampling import AskClient, ReplayChat, answer_text, client_can_sample, sample
from memtree_mcp.refine import SUMMARY_TOKENS
from memtree_mcp.results import ForgetResult, NavigateResult, RecallResult, RememberResult, SummaryResult
from memtree_mcp.server.fields import (
    AgentSteps,
    ChildIndex,
    Content,
    HitCount,
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
from memtree_mcp.service import MAX_INLINE_SUMMARIES, MemoryService, SummaryQuestion

log = logging.getLogger("memtree_mcp")

T = TypeVar("T")

# How many steps of the memory agent the client's model takes (MEMTREE_LLM=sampling); the
# embedding policy finishes a longer walk.
SAMPLED_AGENT_STEPS = 6
SUMMARY_ARGS = ("node_id", "time_from", "time_to", "query", "max_tokens", "namespace")
NAVIGATE_ARGS = ("node_id", "move", "index", "tree", "query", "agent", "max_steps", "namespace")


def Sampled(fn: Callable[..., Any]) -> Any:
    """The type of a parameter the SDK fills with the client model's answer to resolver ``fn``."""
    return Annotated[CreateMessageResult | None, Resolve(fn)]


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

    def ask_roots(namespace: str | None, ctx: Context) -> ListRoots | None:
        # With MEMTREE_NAMESPACE=auto, a call that names no namespace uses the client's workspace
        # folder; clients without roots fall back to 'default'.
        if namespace or service.settings.namespace != AUTO_NAMESPACE:
            return None
        capabilities = ctx.client_capabilities
        return ListRoots() if capabilities is not None and capabilities.roots is not None else None

    Roots = Annotated[ListRootsResult | None, Resolve(ask_roots)]

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

    # MEMTREE_LLM=sampling: the client's model is asked through resolvers (see providers/sampling.py).
    said_no_sampling = threading.Event()

    def can_sample(ctx: Context) -> bool:
        if service.settings.llm != "sampling":
            return False
        if client_can_sample(ctx.session):
            return True
        if not said_no_sampling.is_set():  # said once per server, not on every call
            said_no_sampling.set()
            log.warning(
                "MEMTREE_LLM=sampling, but a client did not declare the sampling capability: "
                "its summaries stay extractive and its agent walks by embeddings"
            )
        return False

    summary_plans: OrderedDict[Hashable, list[SummaryQuestion]] = OrderedDict()

    def plan_key(ctx: Context, args: dict[str, Any]) -> Hashable:
        return (ctx.request_id, *(args.get(name) for name in SUMMARY_ARGS))

    def summary_plan(ctx: Context, args: dict[str, Any]) -> list[SummaryQuestion]:
        # Every resolver of one call, and the call itself, work from the same questions.
        key = plan_key(ctx, args)
        if key not in summary_plans:
            try:
                summary_plans[key] = service.summary_questions(
                    node_id=args.get("node_id"),
                    time_from=args.get("time_from"),
                    time_to=args.get("time_to"),
                    query=args.get("query"),
                    max_tokens=args.get("max_tokens") or DEFAULT_SUMMARY_TOKENS,
                    namespace=call_namespace(args),
                )
            except MemtreeError:
                summary_plans[key] = []  # the call itself reports the problem
            while len(summary_plans) > 64:
                summary_plans.popitem(last=False)
        return summary_plans[key]

    def summary_answers(ctx: Context | None, args: dict[str, Any]) -> list[tuple[SummaryQuestion, str]]:
        texts = [answer_text(args.get(f"summary_{k}")) for k in range(MAX_INLINE_SUMMARIES)]
        if ctx is None or all(text is None for text in texts):
            return []  # the client's model was not asked: nothing to plan again
        questions = summary_plan(ctx, args)
        summary_plans.pop(plan_key(ctx, args), None)
        return [(q, text) for q, text in zip(questions, texts, strict=False) if text is not None]

    def ask_summary(k: int) -> Callable[..., Any]:
        def ask(**args: Any) -> Any:
            if not can_sample(args["ctx"]):
                return None
            questions = summary_plan(args["ctx"], args)
            if k >= len(questions):
                return None
            return sample(questions[k].system, questions[k].user, SUMMARY_TOKENS)

        return resolver(ask, f"ask_summary_{k}", SUMMARY_ARGS, {})

    def ask_agent_step(k: int, previous: list[Callable[..., Any]]) -> Callable[..., Any]:
        def ask(**args: Any) -> Any:
            if not args.get("agent") or not can_sample(args["ctx"]):
                return None
            answers = [answer_text(args.get(f"step_{i}")) for i in range(k)]
            if any(a is None for a in answers):
                return None  # the walk ended before this step
            try:
                service.navigate(
                    node_id=args.get("node_id"),
                    tree=args.get("tree") or "semantic",
                    query=args.get("query"),
                    agent=True,
                    max_steps=args.get("max_steps") or DEFAULT_AGENT_STEPS,
                    namespace=call_namespace(args),
                    generator=ReplayChat([a for a in answers if a is not None], ask=True),
                )
            except AskClient as question:
                return sample(question.system, question.user, question.max_tokens)
            except MemtreeError:
                return None  # the call itself reports the problem
            return None

        deps = {f"step_{i}": fn for i, fn in enumerate(previous)}
        return resolver(ask, f"ask_agent_step_{k}", NAVIGATE_ARGS, deps)

    def resolver(
        body: Callable[..., Any], name: str, by_name: Sequence[str], deps: dict[str, Callable[..., Any]]
    ) -> Callable[..., Any]:
        # A resolver takes the call's arguments by name, its roots, the context and earlier answers.
        params = [inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY) for arg in by_name]
        hints: dict[str, Any] = {"roots": Roots, "ctx": Context}
        hints |= {dep: Sampled(fn) for dep, fn in deps.items()}
        params += [inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY) for arg in hints]
        body.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        body.__annotations__ = hints
        body.__name__ = body.__qualname__ = name
        return body

    def call_namespace(args: dict[str, Any]) -> str | None:
        return args.get("namespace") or namespace_from_roots(args.get("roots"))

    summary_resolvers = [ask_summary(k) for k in range(MAX_INLINE_SUMMARIES)]
    agent_resolvers: list[Callable[..., Any]] = []
    for k in range(SAMPLED_AGENT_STEPS):
        agent_resolvers.append(ask_agent_step(k, list(agent_resolvers)))

    def with_answers(
        prefix: str, resolvers: Sequence[Callable[..., Any]]
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        # Adds one keyword parameter per resolver to a tool; the SDK fills them, never the caller.
        def extend(tool: Callable[..., T]) -> Callable[..., T]:
            signature = inspect.signature(tool)
            kept = [p for p in signature.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
            added = {f"{prefix}_{k}": Sampled(fn) for k, fn in enumerate(resolvers)}
            kept += [
                inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=hint)
                for arg, hint in added.items()
            ]
            tool.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
            tool.__annotations__ = {**tool.__annotations__, **added}
            return tool

        return extend

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
        ctx: Context | None = None,
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
        ctx: Context | None = None,
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


def namespace_from_roots(roots: ListRootsResult | None) -> str | None:
    """The namespace of a client's first workspace folder: its name, reduced to a valid namespace."""
    if roots is None or not roots.roots:
        return None
    path = unquote(urlparse(str(roots.roots[0].uri)).path).rstrip("/")
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", path.rsplit("/", 1)[-1]).strip("-_")[:MAX_NAMESPACE_CHARS]
    return name if name else None


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

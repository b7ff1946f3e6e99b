"""What the tools ask the client before they run: its workspace folder and its model's answers.

The SDK fills a tool parameter annotated ``Annotated[T, Resolve(fn)]`` by running the resolver
``fn`` first; a resolver that returns a ``ListRoots`` or ``Sample`` marker gets the client's
answer. That is how the tools ask the client something (since the 2026-07-28 revision the
questions travel inside the tool's result and the client calls again with the answers; ``forget``
drives its rounds itself, ``server/confirmations.py`` says why), so:

- with MEMTREE_NAMESPACE=auto, ``Roots`` asks for the client's workspace folder, which names the
  namespace of a call that names none;
- with MEMTREE_LLM=sampling, ``summarize`` asks the client's model for the summaries it is about
  to show, ``recall`` and ``summarize`` ask it to judge the oldest memories awaiting judgement of
  what they update (``service/judging.py``), and ``navigate``'s memory agent asks it one step at a time
  (see providers/sampling.py).

The SDK finds a resolver's inputs by parameter name, so the signatures of the sampling resolvers
are generated (``_resolver``: the tool arguments they read, the client's roots, the context and the
answers they depend on), and ``with_answers`` gives a tool one parameter per answer. All of it is
built once, at import; the resolvers read the service from the context, and what they remember
between runs (the questions of a summarize call, whether a client without sampling was reported)
is kept per server, so servers built in one process (the tests build many) share nothing.
"""

import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote, urlparse
from weakref import WeakKeyDictionary

from mcp.server.mcpserver import ListRoots, MCPServer, Resolve
from mcp.types import CreateMessageResult, ListRootsResult

from memtree_mcp.config import AUTO_NAMESPACE
from memtree_mcp.errors import MemtreeError
from memtree_mcp.host.folders import folder_namespace
from memtree_mcp.llm.sampling import AskClient, ReplayChat, answer_text, client_can_sample, sample
from memtree_mcp.server.fields import MemoryContext
from memtree_mcp.service.inputs import DEFAULT_AGENT_STEPS, DEFAULT_SUMMARY_TOKENS
from memtree_mcp.service.judging import JUDGE_TOKENS, MAX_INLINE_JUDGEMENTS, JudgeQuestion
from memtree_mcp.service.refine import MAX_INLINE_SUMMARIES, SUMMARY_TOKENS, SummaryQuestion

log = logging.getLogger("memtree_mcp")

T = TypeVar("T")

# How many steps of the memory agent the client's model takes (MEMTREE_LLM=sampling); the
# embedding policy finishes a longer walk.
SAMPLED_AGENT_STEPS = 6
SUMMARY_ARGS = ("node_id", "time_from", "time_to", "query", "max_tokens", "namespace")
NAVIGATE_ARGS = ("node_id", "move", "index", "tree", "query", "agent", "max_steps", "namespace")
JUDGE_ARGS = ("namespace",)
# Hex digits of the workspace path's hash in an automatic namespace (MEMTREE_NAMESPACE=auto).
# Summary plans kept per server, the oldest dropped first; a call drops its own once it has its answers.
MAX_SUMMARY_PLANS = 64


def wants_roots(namespace: str | None, ctx: MemoryContext) -> bool:
    """Whether a call naming ``namespace`` needs the client's workspace folder: with
    MEMTREE_NAMESPACE=auto, a call that names no namespace uses it; clients without roots fall back
    to 'default'."""
    if namespace or ctx.request_context.lifespan_context.settings.namespace != AUTO_NAMESPACE:
        return False
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.roots is not None


def ask_roots(namespace: str | None, ctx: MemoryContext) -> ListRoots | None:
    return ListRoots() if wants_roots(namespace, ctx) else None


Roots = Annotated[ListRootsResult | None, Resolve(ask_roots)]


def namespace_from_roots(roots: ListRootsResult | None) -> str | None:
    """The namespace of a client's first workspace folder: its name and a short hash of its path.

    The name keeps the namespace readable (``Billing-Service-1f3a9c2e``); the hash (8 hex digits of
    the SHA-256 of the folder's full path) keeps two projects with the same folder name, such as
    ``~/work/api`` and ``~/play/api``, in separate memories. The name is reduced to the namespace
    rule (ASCII letters, digits, '-' and '_'; accents dropped) and cut so the whole fits in 64
    characters; a folder without a usable name (``/``) is ``workspace-<hash>``. None when the
    client sent no roots.
    """
    if roots is None or not roots.roots:
        return None
    uri = urlparse(str(roots.roots[0].uri))
    path = unquote(uri.path).rstrip("/") or "/"
    where = path if uri.scheme == "file" and uri.netloc in ("", "localhost") else f"{uri.netloc}{path}"
    return folder_namespace(path, where)


def Sampled(fn: Callable[..., Any]) -> Any:
    """The type of a parameter the SDK fills with the client model's answer to resolver ``fn``."""
    return Annotated[CreateMessageResult | None, Resolve(fn)]


class _Memo:
    """What the resolvers of one server remember between runs."""

    def __init__(self) -> None:
        self.said_no_sampling = threading.Event()
        self.summary_plans: OrderedDict[Hashable, list[SummaryQuestion]] = OrderedDict()
        self.judge_plans: OrderedDict[Hashable, list[JudgeQuestion]] = OrderedDict()


# Keyed by the server the SDK puts in every context; an entry goes with its server.
_memos: WeakKeyDictionary[MCPServer, _Memo] = WeakKeyDictionary()


def _memo(ctx: MemoryContext) -> _Memo:
    return _memos.setdefault(ctx.mcp_server, _Memo())


def can_sample(ctx: MemoryContext) -> bool:
    if ctx.request_context.lifespan_context.settings.llm != "sampling":
        return False
    if client_can_sample(ctx.session):
        return True
    said = _memo(ctx).said_no_sampling
    if not said.is_set():  # said once per server, not on every call
        said.set()
        log.warning(
            "MEMTREE_LLM=sampling, but a client did not declare the sampling capability: "
            "its summaries stay extractive and its agent walks by embeddings"
        )
    return False


def _plan_key(ctx: MemoryContext, args: dict[str, Any]) -> Hashable:
    return (ctx.request_id, *(args.get(name) for name in SUMMARY_ARGS))


def _summary_plan(ctx: MemoryContext, args: dict[str, Any]) -> list[SummaryQuestion]:
    # Every resolver of one call, and the call itself, work from the same questions.
    plans = _memo(ctx).summary_plans
    key = _plan_key(ctx, args)
    if key not in plans:
        try:
            plans[key] = ctx.request_context.lifespan_context.summary_questions(
                node_id=args.get("node_id"),
                time_from=args.get("time_from"),
                time_to=args.get("time_to"),
                query=args.get("query"),
                max_tokens=args.get("max_tokens") or DEFAULT_SUMMARY_TOKENS,
                namespace=_call_namespace(args),
            )
        except MemtreeError:
            plans[key] = []  # the call itself reports the problem
        while len(plans) > MAX_SUMMARY_PLANS:
            plans.popitem(last=False)
    return plans[key]


def summary_answers(ctx: MemoryContext, args: dict[str, Any]) -> list[tuple[SummaryQuestion, str]]:
    """The client model's answers a summarize call received, each with the question it answers."""
    texts = [answer_text(args.get(f"summary_{k}")) for k in range(MAX_INLINE_SUMMARIES)]
    if all(text is None for text in texts):
        return []  # the client's model was not asked: nothing to plan again
    questions = _summary_plan(ctx, args)
    _memo(ctx).summary_plans.pop(_plan_key(ctx, args), None)
    return [(q, text) for q, text in zip(questions, texts, strict=False) if text is not None]


def _ask_summary(k: int) -> Callable[..., Any]:
    def ask(**args: Any) -> Any:
        if not can_sample(args["ctx"]):
            return None
        questions = _summary_plan(args["ctx"], args)
        if k >= len(questions):
            return None
        return sample(questions[k].system, questions[k].user, SUMMARY_TOKENS)

    return _resolver(ask, f"ask_summary_{k}", SUMMARY_ARGS, {})


def _judge_plan(ctx: MemoryContext, args: dict[str, Any]) -> list[JudgeQuestion]:
    # The memories awaiting an LLM's judgement that this call asks about, the same for every
    # resolver of the call and for the call itself.
    plans = _memo(ctx).judge_plans
    key = (ctx.request_id, _call_namespace(args))
    if key not in plans:
        try:
            plans[key] = ctx.request_context.lifespan_context.judge_questions(_call_namespace(args))
        except MemtreeError:
            plans[key] = []  # the call itself reports the problem
        while len(plans) > MAX_SUMMARY_PLANS:
            plans.popitem(last=False)
    return plans[key]


def judge_answers(ctx: MemoryContext, args: dict[str, Any]) -> list[tuple[JudgeQuestion, str]]:
    """The client model's verdicts a recall or summarize call received, each with its question."""
    texts = [answer_text(args.get(f"judge_{k}")) for k in range(MAX_INLINE_JUDGEMENTS)]
    if all(text is None for text in texts):
        return []
    questions = _judge_plan(ctx, args)
    _memo(ctx).judge_plans.pop((ctx.request_id, _call_namespace(args)), None)
    return [(q, text) for q, text in zip(questions, texts, strict=False) if text is not None]


def _ask_judge(k: int) -> Callable[..., Any]:
    def ask(**args: Any) -> Any:
        if not can_sample(args["ctx"]):
            return None
        questions = _judge_plan(args["ctx"], args)
        if k >= len(questions):
            return None
        return sample(questions[k].system, questions[k].user, JUDGE_TOKENS)

    return _resolver(ask, f"ask_judge_{k}", JUDGE_ARGS, {})


def _ask_agent_step(k: int, previous: list[Callable[..., Any]]) -> Callable[..., Any]:
    def ask(**args: Any) -> Any:
        if not args.get("agent") or not can_sample(args["ctx"]):
            return None
        answers = [answer_text(args.get(f"step_{i}")) for i in range(k)]
        if any(a is None for a in answers):
            return None  # the walk ended before this step
        try:
            args["ctx"].request_context.lifespan_context.navigate(
                node_id=args.get("node_id"),
                tree=args.get("tree") or "semantic",
                query=args.get("query"),
                agent=True,
                max_steps=args.get("max_steps") or DEFAULT_AGENT_STEPS,
                namespace=_call_namespace(args),
                generator=ReplayChat([a for a in answers if a is not None], ask=True),
            )
        except AskClient as question:
            return sample(question.system, question.user, question.max_tokens)
        except MemtreeError:
            return None  # the call itself reports the problem
        return None

    deps = {f"step_{i}": fn for i, fn in enumerate(previous)}
    return _resolver(ask, f"ask_agent_step_{k}", NAVIGATE_ARGS, deps)


def _resolver(
    body: Callable[..., Any], name: str, by_name: Sequence[str], deps: dict[str, Callable[..., Any]]
) -> Callable[..., Any]:
    # A resolver takes the call's arguments by name, its roots, the context and earlier answers.
    params = [inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY) for arg in by_name]
    hints: dict[str, Any] = {"roots": Roots, "ctx": MemoryContext}
    hints |= {dep: Sampled(fn) for dep, fn in deps.items()}
    params += [inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY) for arg in hints]
    body.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    body.__annotations__ = hints
    body.__name__ = body.__qualname__ = name
    return body


def _call_namespace(args: dict[str, Any]) -> str | None:
    return args.get("namespace") or namespace_from_roots(args.get("roots"))


def _agent_resolvers() -> list[Callable[..., Any]]:
    # Step k depends on the answers to steps 0 to k-1: the walk is replayed with them to find it.
    built: list[Callable[..., Any]] = []
    for k in range(SAMPLED_AGENT_STEPS):
        built.append(_ask_agent_step(k, list(built)))
    return built


summary_resolvers = [_ask_summary(k) for k in range(MAX_INLINE_SUMMARIES)]
judge_resolvers = [_ask_judge(k) for k in range(MAX_INLINE_JUDGEMENTS)]
agent_resolvers = _agent_resolvers()


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

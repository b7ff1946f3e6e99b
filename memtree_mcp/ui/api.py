"""The explorer: a JSON API over a MemoryService and the static page that uses it, all under ``/ui``.

Endpoints (GET unless said otherwise; every answer is JSON, every error ``{"error", "detail"}``
with a 4xx status for bad input):

- ``/ui/api/namespaces``: the namespaces, their memory counts, the default one, whether edits are on;
- ``/ui/api/children?ns=&tree=&node=&offset=&limit=``: one page of a node's children (the root's
  without ``node``), so a page never loads more of a 10k-leaf tree than it shows;
- ``/ui/api/node?ns=&id=``: a node in full: text, span, timestamps, parent and path in each tree,
  and its first children; for a memory, the later memory that updates it (``superseded_by``) and
  the earlier ones it updates (``supersedes``);
- ``/ui/api/search?ns=&q=&k=``: ``recall`` hits, each with its path in both trees so the page can
  unfold the tree down to it, and recall's ``superseded_by``;
- ``/ui/api/timeline?ns=``: the sessions (or coarser periods) with their time spans;
- ``POST /ui/api/forget`` ``{"ns", "id"}``: forget one memory; 403 unless edits were allowed.

A memory that a later one updates (a link stored by the agent, the user or an LLM judge, read as
every tool reads it: :func:`memtree_mcp.core.ranking.currency.newest_updates`) is
marked wherever it is listed: ``stale`` and ``superseded_by`` (the id of its latest update). The
marks are computed on each request, so forgetting the update makes the older memory current again.

A path is the list of a node's ancestors from the top down (the root left out) followed by the
node itself; each step carries its ``index`` among its parent's children, which tells the page
which page of children to load to reach it.

The page is read-only unless the app is built with ``allow_edit``. With a ``token``, the API (not
the page, which holds no data) requires ``Authorization: Bearer <token>``; the page reads the
token from its URL fragment (``/ui/#token=…``), which browsers never send to a server.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import TREES, TreeName
from memtree_mcp.core.ranking.currency import newest_updates
from memtree_mcp.core.trees.calendar import SESSION, Calendar, period_name
from memtree_mcp.core.trees.extractive import gist
from memtree_mcp.core.trees.hierarchy import Hierarchy
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.temporal import TemporalTree
from memtree_mcp.errors import InvalidInput, MemtreeError, NotFound, ProviderError
from memtree_mcp.secrets.detection import quoted
from memtree_mcp.service import MemoryService
from memtree_mcp.service.inputs import check_tree, format_timestamp
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.transports.guards import BearerTokenMiddleware

__all__ = ["ui_app"]

PAGE_LIMIT = 100
MAX_PAGE_LIMIT = 500
NODE_CHILDREN = 200
DEFAULT_K = 10
MAX_K = 50
MAX_FORGET_BODY = 4_096
LABEL_CHARS = 60
# The timeline shows one card a session, or a coarser period when there are more sessions than this.
TIMELINE_MAX = 400

_STATIC = ("index.html", "app.js", "style.css")
_MEDIA = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css"}
# No request leaves the machine: everything comes from this origin, nothing may frame the page.
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_API_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


_NONE: Mapping[str, Leaf] = {}


class ApiError(Exception):
    """A request the API refuses: its HTTP status and a message for the person using the page."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail


# -- reading the trees ------------------------------------------------------------------------------


def _hierarchy(memory: Memory, tree: str) -> Hierarchy:
    return memory.semantic if tree == "semantic" else memory.temporal


def _label(node: Leaf | Branch) -> str:
    if isinstance(node, Leaf):
        return gist(node.text, LABEL_CHARS)
    return node.label or gist(node.text, LABEL_CHARS) or "(untitled)"


def _span(first_ts: float, last_ts: float, calendar: Calendar) -> dict[str, Any]:
    return {
        "time_from": format_timestamp(first_ts, calendar),
        "time_to": format_timestamp(last_ts, calendar),
        "first_ts": first_ts,
        "last_ts": last_ts,
    }


def _item(memory: Memory, node_id: str, newest: Mapping[str, Leaf] = _NONE) -> dict[str, Any]:
    """What a tree row shows of a node: label, kind, how many memories and children, time span;
    for a memory, whether a later one updates it (``newest``: :func:`_updates`)."""
    node = memory.node(node_id)
    if isinstance(node, Leaf):
        update = newest.get(node.id)
        return {
            "id": node.id,
            "kind": "leaf",
            "label": _label(node),
            "leaf_count": 1,
            "child_count": 0,
            **_span(node.timestamp, node.timestamp, memory.calendar),
            "stale": update is not None,
            "superseded_by": update.id if update is not None else None,
        }
    return {
        "id": node.id,
        "kind": node.kind,
        "label": _label(node),
        "leaf_count": node.leaf_count,
        "child_count": len(node.children),
        **_span(node.first_ts, node.last_ts, memory.calendar),
    }


def _updates(memory: Memory, node_ids: Iterable[str]) -> dict[str, Leaf]:
    """Each memory among ``node_ids`` that a later one says it updates -> its latest update, as
    navigate and summarize read the links."""
    return newest_updates(memory, [memory.leaves[n] for n in node_ids if n in memory.leaves])


def _reference(leaf: Leaf, calendar: Calendar) -> dict[str, Any]:
    """Another memory as a mark names it: id, first words, day and time."""
    time = format_timestamp(leaf.timestamp, calendar)
    return {"id": leaf.id, "label": _label(leaf), "day": time[:10], "time": time}


def _updated(memory: Memory, leaf: Leaf) -> list[Leaf]:
    """The earlier memories that ``leaf`` says it updates (its ``supersedes``), oldest first."""
    named = [memory.leaves[o] for o in leaf.supersedes if o in memory.leaves]
    return sorted(named, key=lambda older: (older.timestamp, older.seq))


def _check_in_tree(memory: Memory, node_id: str, tree: str) -> Hierarchy:
    """The hierarchy of ``tree`` once ``node_id`` is known to be one of its nodes; ApiError otherwise."""
    hierarchy = _hierarchy(memory, tree)
    if node_id in hierarchy.branches or node_id in hierarchy.parent_of:
        return hierarchy
    branch = memory.branch(node_id)
    if branch is not None:
        raise ApiError(
            400,
            "wrong_tree",
            f"{node_id} is a branch of the {branch.tree} tree, not of the {tree} tree; "
            f"ask with tree={branch.tree}.",
        )
    raise ApiError(404, "not_found", f"no node {quoted(node_id)} in this memory; it may have been forgotten.")


def path_to(memory: Memory, node_id: str, tree: str) -> list[dict[str, Any]]:
    """The node's ancestors from the top down (the root left out), then the node itself.

    Each step has ``id``, ``label`` and ``index``, its position among its parent's children.
    """
    hierarchy = _hierarchy(memory, tree)
    chain = [b.id for b in hierarchy.ancestors(node_id) if b.kind != "root"]
    steps: list[dict[str, Any]] = []
    for step_id in [*chain, node_id]:
        branch = hierarchy.branches.get(step_id)
        parent = branch.parent if branch is not None else hierarchy.parent_of.get(step_id)
        if parent is None:
            continue
        steps.append(
            {
                "id": step_id,
                "label": _label(memory.node(step_id)),
                "index": hierarchy.branches[parent].children.index(step_id),
            }
        )
    return steps


def _trees_of(memory: Memory, node_id: str) -> list[str]:
    """The trees a node is placed in: both for a memory, its own for a summary."""
    branch = memory.branch(node_id)
    if branch is not None:
        return [branch.tree]
    return [tree for tree in TREES if node_id in _hierarchy(memory, tree).parent_of]


def children_page(memory: Memory, tree: str, node_id: str | None, offset: int, limit: int) -> dict[str, Any]:
    """One page of the children of ``node_id`` (the root when None) in ``tree``."""
    hierarchy = _hierarchy(memory, tree)
    parent = hierarchy.root.id if node_id is None else node_id
    _check_in_tree(memory, parent, tree)
    branch = hierarchy.branches.get(parent)
    children = list(branch.children) if branch is not None else []
    shown = children[offset : offset + limit]
    newest = _updates(memory, shown)
    return {
        "tree": tree,
        "node": parent,
        "total": len(children),
        "memories": len(memory.leaves),
        "offset": offset,
        "limit": limit,
        "children": [_item(memory, child, newest) for child in shown],
    }


def node_details(memory: Memory, node_id: str) -> dict[str, Any]:
    """Everything the node panel shows of one node."""
    try:
        node = memory.node(node_id)
    except KeyError:
        raise ApiError(
            404, "not_found", f"no node {quoted(node_id)} in this memory; it may have been forgotten."
        ) from None
    children = list(node.children) if isinstance(node, Branch) else []
    listed = children[:NODE_CHILDREN]
    newest = _updates(memory, [node_id, *listed])
    details = _item(memory, node_id, newest)
    trees = _trees_of(memory, node_id)
    parents: dict[str, dict[str, str] | None] = dict.fromkeys(TREES)
    depths: dict[str, int | None] = dict.fromkeys(TREES)
    for tree in trees:
        hierarchy = _hierarchy(memory, tree)
        parent = node.parent if isinstance(node, Branch) else hierarchy.parent_of.get(node_id)
        depths[tree] = hierarchy.depth_of(node_id)
        if parent is not None:
            parents[tree] = {"id": parent, "label": _label(memory.node(parent))}
    details.update(
        text=node.text,
        tree=node.tree if isinstance(node, Branch) else None,
        trees=trees,
        first_seq=node.seq if isinstance(node, Leaf) else node.first_seq,
        last_seq=node.seq if isinstance(node, Leaf) else node.last_seq,
        depths=depths,
        parents=parents,
        paths={tree: path_to(memory, node_id, tree) for tree in trees},
        children={
            "total": len(children),
            "items": [_item(memory, child, newest) for child in listed],
        },
    )
    if isinstance(node, Leaf):
        details.update(
            role=node.role,
            tags=list(node.tags),
            session=node.session,
            created=format_timestamp(node.created, memory.calendar) if node.created else None,
            superseded_by=_reference(newest[node_id], memory.calendar) if node_id in newest else None,
            supersedes=[_reference(older, memory.calendar) for older in _updated(memory, node)],
        )
    return details


def timeline_segments(memory: Memory) -> dict[str, Any]:
    """The temporal tree's sessions in time order, one card each; when there are more than
    TIMELINE_MAX of them, the finest period that has at most that many (days, weeks, months, years).
    ``period`` names what the cards are."""
    tree = memory.temporal
    level, nodes = SESSION, _level(tree, SESSION)
    while len(nodes) > TIMELINE_MAX and level + 1 < tree.height - 1:
        level += 1
        nodes = _level(tree, level)
    shown = nodes[:TIMELINE_MAX]
    newest = _updates(memory, shown)
    segments = [{**_item(memory, n, newest), "depth": tree.depth_of(n)} for n in shown]
    root = tree.root
    return {
        "memories": len(memory.leaves),
        "period": period_name(level),
        "segments": segments,
        "truncated": len(nodes) > len(shown),
        **(_span(root.first_ts, root.last_ts, memory.calendar) if memory.leaves else {}),
    }


def _level(tree: TemporalTree, level: int) -> list[str]:
    """The branches of one level of the temporal tree (0: segments, 1: sessions, …), in time order."""
    nodes = [tree.root.id]
    for _ in range(tree.height - 1 - level):
        nodes = [c for n in nodes for c in tree.branches[n].children if c in tree.branches]
    return nodes if tree.height > level + 1 else []


# -- the HTTP layer -------------------------------------------------------------------------------


def _text_param(request: Request, name: str, *, required: bool = False) -> str | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        if required:
            raise ApiError(400, "bad_request", f"the parameter {name!r} is missing.")
        return None
    return value


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "bad_request", f"{name} must be a whole number; got {quoted(raw)}.") from None
    if not low <= value <= high:
        raise ApiError(400, "bad_request", f"{name} must be from {low} to {high}; got {value}.")
    return value


def _tree_param(request: Request) -> TreeName:
    """The tree a request names (semantic by default); an unknown one is InvalidInput, answered 400."""
    return check_tree(request.query_params.get("tree") or "semantic")


class ExplorerApi:
    """The JSON endpoints over one MemoryService."""

    def __init__(self, service: MemoryService, *, allow_edit: bool) -> None:
        self.service = service
        self.allow_edit = allow_edit

    def _name(self, namespace: str | None) -> str:
        """The namespace a request means: its ``ns``, else the server's default (as the service picks it)."""
        return self.service.resolve_namespace(namespace)

    def _read(
        self, request: Request, read: Callable[[Memory], dict[str, Any]], empty: dict[str, Any] | ApiError
    ) -> Any:
        """``read`` on the namespace's memory, with writers kept out while it looks.

        ``empty`` is the answer (or the refusal) for a namespace that holds nothing yet.
        """
        name = self._name(_text_param(request, "ns"))  # InvalidInput for a malformed name
        found = self.service.read(read, name)
        if found is None:
            if isinstance(empty, ApiError):
                raise empty
            return {"namespace": name, **empty}
        return {"namespace": name, **found}

    def namespaces(self, request: Request) -> Any:
        default = self._name(None)
        counts = dict(self.service.namespaces())
        counts.setdefault(default, 0)
        return {
            "namespaces": [{"name": n, "memories": c} for n, c in sorted(counts.items())],
            "default": default,
            "allow_edit": self.allow_edit,
        }

    def children(self, request: Request) -> Any:
        tree = _tree_param(request)
        node = _text_param(request, "node")
        offset = _int_param(request, "offset", 0, 0, 10_000_000)
        limit = _int_param(request, "limit", PAGE_LIMIT, 1, MAX_PAGE_LIMIT)
        empty: dict[str, Any] | ApiError = {
            "tree": tree,
            "node": None,
            "total": 0,
            "memories": 0,
            "offset": offset,
            "limit": limit,
            "children": [],
        }
        if node is not None:
            empty = _no_node(node)
        return self._read(request, lambda m: children_page(m, tree, node, offset, limit), empty)

    def node(self, request: Request) -> Any:
        node_id = _text_param(request, "id", required=True)
        assert node_id is not None
        return self._read(request, lambda m: node_details(m, node_id), _no_node(node_id))

    def search(self, request: Request) -> Any:
        query = _text_param(request, "q", required=True)
        assert query is not None
        k = _int_param(request, "k", DEFAULT_K, 1, MAX_K)
        found = self.service.look_up(
            RecallRequest(query, k=k, namespace=self._name(_text_param(request, "ns")))
        )

        def with_paths(memory: Memory) -> dict[str, Any]:
            hits: list[dict[str, Any]] = []
            for hit in found.hits:
                if hit.id not in memory.leaves and memory.branch(hit.id) is None:
                    continue  # forgotten between the recall and this look
                hits.append(
                    {
                        "id": hit.id,
                        "kind": hit.kind,
                        "tree": hit.tree if hit.kind == "summary" else None,
                        "score": hit.score,
                        "relevance": hit.relevance,  # shown: recall's 0-1, as the model reads it
                        "text": hit.text,
                        "label": _label(memory.node(hit.id)),
                        "time_from": hit.time_from,
                        "time_to": hit.time_to,
                        "paths": {tree: path_to(memory, hit.id, tree) for tree in _trees_of(memory, hit.id)},
                        "superseded_by": hit.superseded_by,
                    }
                )
            return {"query": query, "hits": hits}

        return self._read(request, with_paths, {"query": query, "hits": []})

    def timeline(self, request: Request) -> Any:
        return self._read(request, timeline_segments, {"memories": 0, "segments": [], "truncated": False})

    async def forget(self, request: Request) -> Any:
        if not self.allow_edit:
            raise ApiError(
                403,
                "read_only",
                "this explorer is read-only; start it with --allow-edit (memtree-mcp ui --allow-edit, or "
                "memtree-mcp serve --allow-edit) to forget memories from the page.",
            )
        if not (request.headers.get("content-type") or "").lower().startswith("application/json"):
            raise ApiError(
                415, "bad_request", 'send a JSON body: {"ns": "<namespace>", "id": "<memory id>"}.'
            )
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORGET_BODY:
                raise ApiError(413, "too_large", f"the request body is over {MAX_FORGET_BODY} bytes.")
        try:
            payload = json.loads(body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ApiError(400, "bad_request", "the body is not valid JSON.") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("id"), str):
            raise ApiError(400, "bad_request", 'send {"ns": "<namespace>", "id": "<memory id>"}.')
        namespace = payload.get("ns")
        if namespace is not None and not isinstance(namespace, str):
            raise ApiError(400, "bad_request", "ns must be the name of a namespace.")
        return await run_in_threadpool(self._forget_one, payload["id"], namespace or None)

    def _forget_one(self, node_id: str, namespace: str | None) -> dict[str, Any]:
        memory = self.service.memory(namespace)
        if memory is not None and memory.branch(node_id) is not None:
            raise ApiError(
                400,
                "not_a_memory",
                f"{node_id} is a summary; the explorer forgets one memory at a time (use the forget tool "
                "with confirm=true to delete everything under a summary).",
            )
        result = self.service.forget(node_id=node_id, namespace=namespace)
        return {"deleted": result.deleted, "namespace": result.namespace}


def _no_node(node_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no node {quoted(node_id)}: this namespace holds no memories yet.")


def _error(status: int, error: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=_API_HEADERS)


def _endpoint(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """A route answering ``handler``'s result as JSON and every anticipated error as a JSON 4xx."""
    asynchronous = inspect.iscoroutinefunction(handler)

    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request) if asynchronous else await run_in_threadpool(handler, request)
        except ApiError as exc:
            return _error(exc.status, exc.error, exc.detail)
        except InvalidInput as exc:
            return _error(400, "bad_request", str(exc))
        except NotFound as exc:
            return _error(404, "not_found", str(exc))
        except ProviderError as exc:
            return _error(503, "unavailable", str(exc))
        except MemtreeError as exc:
            return _error(500, "store_error", str(exc))
        return JSONResponse(result, headers=_API_HEADERS)

    return endpoint


def _static(name: str) -> Callable[[Request], Response]:
    suffix = name.rsplit(".", 1)[-1]

    def page(_request: Request) -> Response:
        body = resources.files("memtree_mcp.ui").joinpath("static", name).read_bytes()
        return Response(body, media_type=_MEDIA[suffix], headers=_PAGE_HEADERS)

    return page


async def _not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    return _error(
        status, "not_found" if status == 404 else "bad_request", f"no such endpoint: {request.url.path}"
    )


class _UiApp:
    """Sends ``/ui/api/…`` to the API (behind the bearer token when there is one), the rest to the page."""

    def __init__(self, page: ASGIApp, api: ASGIApp) -> None:
        self.page = page
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/ui/api/"):
            await self.api(scope, receive, send)
        else:
            await self.page(scope, receive, send)


def ui_app(service: MemoryService, *, allow_edit: bool = False, token: str | None = None) -> ASGIApp:
    """The explorer's ASGI app: the page at ``/ui/`` and its JSON API at ``/ui/api/``.

    It serves full paths (``/ui/…``), so it works alone and behind a dispatcher that passes it the
    ``/ui`` requests unchanged. ``token`` guards the API only; Host checks are the caller's job
    (:func:`memtree_mcp.transports.http.http_app` and :func:`memtree_mcp.ui.server.serve_ui` add them).
    """
    explorer = ExplorerApi(service, allow_edit=allow_edit)
    api_routes = [
        Route("/ui/api/namespaces", _endpoint(explorer.namespaces)),
        Route("/ui/api/children", _endpoint(explorer.children)),
        Route("/ui/api/node", _endpoint(explorer.node)),
        Route("/ui/api/search", _endpoint(explorer.search)),
        Route("/ui/api/timeline", _endpoint(explorer.timeline)),
        Route("/ui/api/forget", _endpoint(explorer.forget), methods=["POST"]),
    ]
    handlers: dict[Any, Any] = {404: _not_found, 405: _not_found}
    api: ASGIApp = Starlette(routes=api_routes, exception_handlers=handlers)
    if token is not None:
        api = BearerTokenMiddleware(api, token)
    page_routes = [
        Route("/", lambda _r: RedirectResponse("/ui/")),
        Route("/ui", lambda _r: RedirectResponse("/ui/")),
        Route("/ui/", _static("index.html")),
        *(Route(f"/ui/{name}", _static(name)) for name in _STATIC),
    ]
    page = Starlette(routes=page_routes)
    return _UiApp(page, api)

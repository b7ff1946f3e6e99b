"""Memory as documents a client opens by URI, and the prompt that teaches a model to use it.

The resources serve the client and its user (show the outline of a namespace, open one node) where
the tools serve the model. Like the tools they read the service from the request's context; their
anticipated errors become ``ResourceNotFoundError`` (an unknown node) or ``ResourceError``, which
the SDK reports as resource errors rather than as a crash.
"""

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from memtree_mcp.errors import MemtreeError, NotFound
from memtree_mcp.server.fields import MemoryContext
from memtree_mcp.server.instructions import USE_MEMORY_PROMPT
from memtree_mcp.service import rendering

if TYPE_CHECKING:
    from memtree_mcp.service.memory_service import MemoryService

OUTLINE_DEPTH = 3  # levels below the root, fewer when they would not fit (rendering.bounded_outline)

T = TypeVar("T")


async def outline(namespace: str, tree: str, ctx: MemoryContext) -> str:
    service: MemoryService = ctx.request_context.lifespan_context

    def within_budget() -> str:
        return rendering.bounded_outline(lambda depth: service.outline(tree, depth, namespace), OUTLINE_DEPTH)

    return await _read(within_budget)


async def node(namespace: str, node_id: str, ctx: MemoryContext) -> str:
    """The node as navigate shows it, as JSON: its children those navigate lists, and
    ``more_children`` counting the rest."""
    service: MemoryService = ctx.request_context.lifespan_context
    shown = await _read(lambda: service.node_view(node_id, namespace))
    listed = rendering.shown_children(shown)
    data = shown.model_dump(mode="json")
    if listed < len(shown.children):
        data["children"] = data["children"][:listed]
        data["more_children"] = len(shown.children) - listed
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def use_memory() -> str:
    return USE_MEMORY_PROMPT


async def _read(operation: Callable[[], T]) -> T:
    """Run a blocking service call (written out, as ``tools._run`` takes it) in a worker thread;
    turn anticipated errors into ResourceError."""
    try:
        return await anyio.to_thread.run_sync(operation)
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except MemtreeError as exc:
        raise ResourceError(str(exc)) from exc

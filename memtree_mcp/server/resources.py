"""Memory as documents a client opens by URI, and the prompt that teaches a model to use it.

The resources serve the client and its user (show the outline of a namespace, open one node) where
the tools serve the model. Like the tools they read the service from the request's context; their
anticipated errors become ``ResourceNotFoundError`` (an unknown node) or ``ResourceError``, which
the SDK reports as resource errors rather than as a crash.
"""

import functools
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from memtree_mcp.errors import MemtreeError, NotFound
from memtree_mcp.server.fields import MemoryContext
from memtree_mcp.server.instructions import USE_MEMORY_PROMPT

T = TypeVar("T")


async def outline(namespace: str, tree: str, ctx: MemoryContext) -> str:
    return await _read(ctx.request_context.lifespan_context.outline, tree, 3, namespace)


async def node(namespace: str, node_id: str, ctx: MemoryContext) -> str:
    shown = await _read(ctx.request_context.lifespan_context.node_view, node_id, namespace)
    return shown.model_dump_json()


def use_memory() -> str:
    return USE_MEMORY_PROMPT


async def _read(operation: Callable[..., T], *args: object) -> T:
    """Run a blocking service call in a worker thread; turn anticipated errors into ResourceError."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(operation, *args))
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except MemtreeError as exc:
        raise ResourceError(str(exc)) from exc

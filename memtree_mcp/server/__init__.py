"""The MCP face of the memory: one MCPServer over one MemoryService.

Laid out like the SDK's own ``mcpserver`` package, one concern per module: ``fields`` (the
arguments' types and limits), ``tools`` (the five tools), ``resolvers`` (what a tool asks the
client before it runs: its workspace folder, its model's answers), ``resources`` (resources and
the ``use-memory`` prompt) and ``instructions`` (the text the model reads). Tools, resolvers and
resources find the service as the lifespan context of the request, so they are written once;
``build_server`` ties one service to them. Nothing heavy is imported here: lancedb and onnxruntime
load on the first tool call, after the handshake.

May import ``core``, ``host`` (a workspace folder's namespace), ``config``, ``errors``, ``service``
and ``llm`` (the client's model, sampling).
"""

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from memtree_mcp import __version__
from memtree_mcp.server import resources, tools
from memtree_mcp.server.instructions import INSTRUCTIONS
from memtree_mcp.service import MemoryService

HANDSHAKE_METHODS = frozenset({"initialize", "notifications/initialized", "server/discover"})


def build_server(service: MemoryService) -> MCPServer:
    """An MCP server exposing ``service``. The caller owns the service and closes it.

    The lifespan does not close it: over SSE the SDK runs the lifespan once per connection, so a
    client leaving would close the store under the clients still connected.
    """

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[MemoryService]:
        yield service

    mcp = LeanSchemaServer(
        name="memtree-mcp",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=service.settings.log_level,
    )
    mcp.middleware.append(_warm_up_after_handshake(service))

    _add_tool(
        mcp,
        tools.remember_tool(service.settings.max_content_chars),
        ToolAnnotations(title="Remember", read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    _add_tool(mcp, tools.recall, ToolAnnotations(title="Recall", read_only_hint=True, open_world_hint=False))
    _add_tool(
        mcp, tools.navigate, ToolAnnotations(title="Navigate", read_only_hint=True, open_world_hint=False)
    )
    _add_tool(
        mcp, tools.summarize, ToolAnnotations(title="Summarize", read_only_hint=True, open_world_hint=False)
    )
    _add_tool(
        mcp,
        tools.forget,
        ToolAnnotations(title="Forget", read_only_hint=False, destructive_hint=True, idempotent_hint=False),
    )

    mcp.resource(
        "memtree://{namespace}/outline/{tree}",
        name="outline",
        description="The semantic (by subject) or temporal (by time) tree of a namespace, three levels deep.",
        mime_type="text/plain",
    )(resources.outline)
    mcp.resource(
        "memtree://{namespace}/node/{node_id}",
        name="node",
        description="One memory or summary, with its children and neighbours, as JSON.",
        mime_type="application/json",
    )(resources.node)
    mcp.add_prompt(
        Prompt.from_function(
            resources.use_memory,
            name="use-memory",
            description="How to use this long-term memory in a conversation.",
        )
    )
    return mcp


class LeanSchemaServer(MCPServer):
    """An MCPServer whose ``tools/list`` sends lean schemas.

    Every client sends every tool's schemas to the model in every conversation; pydantic's
    generated titles and null branches say nothing a model needs. The tools keep their full schemas
    for validating calls; only what is listed is trimmed (see :func:`lean_schema`).
    """

    async def list_tools(self) -> list[MCPTool]:
        return [
            tool.model_copy(
                update={
                    "input_schema": lean_schema(tool.input_schema),
                    "output_schema": None
                    if tool.output_schema is None
                    else lean_schema(tool.output_schema, descriptions=False),
                }
            )
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The SDK's ``call_tool``, with arguments that fail the schema told in one line: pydantic's
        own text is four lines per error and a URL, where the service's errors are one line."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            # Raised from the ValidationError still, so the SDK logs the fields it names.
            invalid = exc.__cause__
            raise ToolError(f"Error executing tool {name}: {argument_errors(invalid)}") from invalid


def argument_errors(error: ValidationError) -> str:
    """What is wrong with a tool's arguments, one clause per argument: its name and what it takes."""
    said: dict[str, str] = {}
    for problem in error.errors():
        where = str(problem["loc"][0]) if problem["loc"] else "arguments"
        if where in said:
            continue  # one clause an argument: a union lists each branch it failed
        if problem["type"] == "missing":
            said[where] = f"argument {where} is required"
        else:
            got = repr(problem["input"])
            got = got if len(got) <= 40 else got[:37] + "..."
            said[where] = f"argument {where}: {problem['msg']} (got {got})"
    return "; ".join(said.values()) + "."


def _add_tool(mcp: MCPServer, tool: Callable[..., Any], annotations: ToolAnnotations) -> None:
    # The SDK sends a tool's docstring verbatim as its description: without its indentation, and
    # on one line, it costs every conversation fewer tokens.
    description = " ".join(inspect.cleandoc(tool.__doc__ or "").split())
    mcp.add_tool(tool, description=description, annotations=annotations)


def lean_schema(schema: Any, *, descriptions: bool = True) -> Any:
    """``schema`` without titles, with ``X | None`` written as ``X`` (leaving an argument out is
    how a caller says None), and without descriptions unless ``descriptions``."""
    if isinstance(schema, list):
        return [lean_schema(item, descriptions=descriptions) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "description" and not descriptions and isinstance(value, str):
            continue
        out[key] = lean_schema(value, descriptions=descriptions)
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        (kept,) = [branch for branch in branches if branch != {"type": "null"}]
        del out["anyOf"]
        out = {**kept, **out}
        if out.get("default", 0) is None:
            del out["default"]
    return out


def _warm_up_after_handshake(service: MemoryService) -> ServerMiddleware[Any]:
    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # The heavy imports and the model load start in the background once the first request after
        # the handshake (usually tools/list) has been answered: starting them earlier slowed that
        # answer by competing for the interpreter; starting them later makes the first recall wait.
        # (Over HTTP the server has warmed up when it started listening: this does nothing.)
        # A tool call as the first request needs both at once: started before it, the model loads
        # beside the namespace the call reads, instead of after it.
        if ctx.method == "tools/call":
            service.start_warm_up()
        result = await call_next(ctx)
        if ctx.method not in HANDSHAKE_METHODS:
            service.start_warm_up()
        return result

    return middleware

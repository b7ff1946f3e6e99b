"""Serve MCP over standard input and output, and stop at once on Ctrl-C or SIGTERM.

The SDK's ``run_stdio_async`` reads standard input with ``readline`` in an anyio worker thread, and
a cancelled worker thread is waited for: on SIGINT the event loop waited for the client's next
line, which on a terminal never comes (two Ctrl-C were ignored for 30 s). Here a daemon thread
reads standard input and hands each line to the event loop, and SIGINT or SIGTERM cancels the
server: a tool call under way still finishes (it runs in a worker thread, which cancellation
waits for; its write is one commit), the read of the next line is not waited for, and the reading
thread ends with the process.

A line that is not a JSON-RPC message gets the JSON-RPC error a client can read (id null): -32700
when it is not UTF-8 or not JSON (a lone surrogate, 100,000-deep nesting, a 5,000-digit number),
-32600 when it is JSON but no message. The SDK's own reading logs such a line and answers nothing,
so a client waited for ever, and read bytes that were not UTF-8 as replacement characters (issue 31).

On a terminal a person, not a client, started the server: one line on standard error says what it
waits for and how to stop it, and a line typed that is not JSON gets one saying what to use
instead. Standard output carries the protocol and nothing else.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["NOT_JSON_ON_A_TERMINAL", "STOP_SIGNALS", "WAITING_ON_A_TERMINAL", "serve_stdio"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
WAITING_ON_A_TERMINAL = "memtree-mcp: waiting for an MCP client on standard input; Ctrl-C to stop"
NOT_JSON_ON_A_TERMINAL = (
    "memtree-mcp: that line is not JSON: `serve` talks MCP (JSON-RPC) with a client, not with a person. "
    "From a shell, use `memtree-mcp remember` or `memtree-mcp recall` (see --help); Ctrl-C to stop"
)
_READ_SIZE = 1 << 16


def serve_stdio(server: MCPServer) -> int:
    """Serve ``server`` on this process's standard input and output (blocking).

    Returns 0 when the client closes standard input, or the number of the signal (SIGINT,
    SIGTERM) that stopped the server.
    """
    on_a_terminal = sys.stdin is not None and sys.stdin.isatty()
    return anyio.run(_serve, server, sys.stdin.fileno(), on_a_terminal)


async def _serve(server: MCPServer, fd: int, on_a_terminal: bool) -> int:
    stopped_by = 0
    async with anyio.create_task_group() as group:

        async def stop_on_signal(
            *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
        ) -> None:
            nonlocal stopped_by
            try:
                with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                    task_status.started()
                    async for number in signals:
                        stopped_by = number
                        group.cancel_scope.cancel()
                        return
            except NotImplementedError:
                # Windows' event loops take no signal handlers: Ctrl-C still raises
                # KeyboardInterrupt, and reading standard input no longer holds the loop up.
                task_status.started()
                return

        # The person at the terminal is told how to stop the server only once a signal stops it
        # in order: one sent earlier would land in the middle of the event loop's start.
        await group.start(stop_on_signal)
        if on_a_terminal:
            print(WAITING_ON_A_TERMINAL, file=sys.stderr, flush=True)
        lines = TerminalLines(fd) if on_a_terminal else StdinLines(fd)
        # stdio_server only iterates its stdin; it still claims standard output (fd 1 points at
        # standard error while it serves, so stray prints cannot corrupt the protocol).
        async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
            lines.answer_with(write)
            # The SDK offers no public way to run an MCPServer on streams it is given.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()
    return stopped_by


class StdinLines:
    """The lines of a file descriptor, read by a daemon thread: iterating them is cancellable.

    Only JSON-RPC messages are handed on; any other line is answered with a JSON-RPC error on the
    stream given to :meth:`answer_with`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._answers: MemoryObjectSendStream[SessionMessage] | None = None
        self._answering = anyio.Event()

    def answer_with(self, answers: MemoryObjectSendStream[SessionMessage]) -> None:
        """Where the errors for lines that are no JSON-RPC message go (the server's output)."""
        self._answers = answers
        self._answering.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        send, receive = anyio.create_memory_object_stream[bytes]()
        token = anyio.lowlevel.current_token()
        reader = threading.Thread(
            target=self._hand_over, args=(send, token), name="memtree-stdin", daemon=True
        )
        reader.start()
        async with receive:
            async for raw in receive:
                line, error = unparsable(raw)
                if error is None:
                    yield line
                    continue
                await self._answering.wait()
                assert self._answers is not None
                await self._answers.send(
                    SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))
                )

    def _hand_over(self, send: MemoryObjectSendStream[bytes], token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            for line in self._lines():
                anyio.from_thread.run(send.send, line, token=token)
            anyio.from_thread.run_sync(send.close, token=token)
        except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The server stopped and reads no more (RunFinishedError is a RuntimeError).
            return

    def _lines(self) -> Iterator[bytes]:
        pending = b""
        while True:
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except OSError:  # a terminal that went away: the end of input
                chunk = b""
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            yield from (line for line in lines if line.strip())
        if pending.strip():
            yield pending


def unparsable(raw: bytes) -> tuple[str, types.ErrorData | None]:
    """``raw``, a line of input, as text, and the JSON-RPC error that answers it when it is no
    JSON-RPC message (None when it is one)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"the line is not UTF-8 (byte {exc.start}); send JSON-RPC messages in UTF-8, one a line"
        return "", types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {why}")
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        invalid = [error["msg"] for error in exc.errors() if error["type"] == "json_invalid"]
        if invalid:
            return line, _parse_error(invalid[0])
        why = "the line is JSON but not a JSON-RPC 2.0 request, notification or response"
        return line, types.ErrorData(code=types.INVALID_REQUEST, message=f"Invalid Request: {why}")
    except Exception as exc:  # worse than invalid: too deep to parse, say
        return line, _parse_error(str(exc) or type(exc).__name__)
    return line, None


def _parse_error(detail: str) -> types.ErrorData:
    shown = " ".join(detail.split())[:120]
    why = f"the line is not JSON ({shown}); send one JSON-RPC message a line"
    return types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {why}")


class TerminalLines(StdinLines):
    """:class:`StdinLines` typed by a person: a line that is not JSON gets a hint on standard
    error (the SDK would only log it), and is handed on as any line is."""

    def _lines(self) -> Iterator[Any]:
        for line in super()._lines():
            try:
                json.loads(line)
            except ValueError:
                print(NOT_JSON_ON_A_TERMINAL, file=sys.stderr, flush=True)
            yield line

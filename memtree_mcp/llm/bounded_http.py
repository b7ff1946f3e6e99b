"""The HTTP client litellm is given: each response held to its call's deadline and byte cap.

httpx's timeouts bound only the gap between two reads (see :mod:`memtree_mcp.llm.endpoint`): this
transport checks the call's :data:`bounds` as each chunk arrives. httpx
comes with litellm, the ``llm`` extra, so this module is imported only on that extra's path, never
by the default install.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx

__all__ = ["bounded_client", "bounds"]


class _Bounds(threading.local):
    """The deadline (time.monotonic) and byte cap of the call running in this thread, and why it
    was cut short; no bounds outside a call."""

    deadline: float | None = None
    limit: int | None = None
    exceeded: str | None = None


bounds = _Bounds()
"""Set by :meth:`~memtree_mcp.llm.endpoint.LiteLLMEndpoint.call` around each call; read as each
chunk arrives."""


class _BoundedStream(httpx.SyncByteStream):
    """A response body that stops once its call is past its deadline or has read its cap."""

    def __init__(self, inner: httpx.SyncByteStream, deadline: float | None, limit: int | None) -> None:
        self.inner, self.deadline, self.limit, self.read = inner, deadline, limit, 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.read += len(chunk)
            if self.limit is not None and self.read > self.limit:
                bounds.exceeded = f"the reply passed {self.limit:,} bytes"
                raise httpx.ReadError(bounds.exceeded)
            if self.deadline is not None and time.monotonic() > self.deadline:
                bounds.exceeded = "it passed its deadline"
                raise httpx.ReadTimeout(bounds.exceeded)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class _BoundedTransport(httpx.HTTPTransport):
    """httpx's transport, holding each response of a call to that call's deadline and byte cap."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline, limit = bounds.deadline, bounds.limit
        if deadline is not None and time.monotonic() > deadline:
            bounds.exceeded = "it passed its deadline"
            raise httpx.ConnectTimeout(bounds.exceeded, request=request)
        response = super().handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _BoundedStream(response.stream, deadline, limit)
        return response


def bounded_client() -> httpx.Client:
    """A client on the bounded transport (redirects followed, as litellm's own client does)."""
    return httpx.Client(transport=_BoundedTransport(), follow_redirects=True)

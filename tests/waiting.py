"""One bounded wait for every test: poll a condition until it holds or the time runs out.

Tests never sleep for a fixed time hoping something happened: they wait for what they need, at
most ``within`` seconds, and fail naming what they waited for.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


def wait_until(condition: Callable[[], T], within: float = 30.0, *, every: float = 0.01, what: str = "") -> T:
    """``condition()``'s first truthy value, called every ``every`` seconds for at most ``within``
    seconds; AssertionError naming ``what`` when it never comes."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {within:g} s for {what or 'the condition'}")
        time.sleep(every)


async def wait_until_async(
    condition: Callable[[], Awaitable[T]], within: float = 30.0, *, every: float = 0.2, what: str = ""
) -> T:
    """:func:`wait_until` for a condition that must be awaited, sleeping on the event loop."""
    deadline = time.monotonic() + within
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {within:g} s for {what or 'the condition'}")
        await anyio.sleep(every)

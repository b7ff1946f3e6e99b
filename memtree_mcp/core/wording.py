"""Counts as words agree with them: "1 memory", "2 memories", in every line a person reads."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, one: str, many: str) -> str:
    """``n`` and the noun in the number it takes: ``counted(1, "memory", "memories") == "1 memory"``."""
    return f"{n:,} {one if n == 1 else many}"

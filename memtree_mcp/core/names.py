"""The names that callers pass and core reads, each set declared once: recall's strategies and
the kinds of node it returns, the two trees, the kinds of node and the cursor's moves.

Each is a ``Literal`` type (what the tools' schemas and mypy read) and the tuple of its values
(what the checks, the CLI's choices and the error messages read), the tuple taken from the type.
A name core does not know is quoted in its error by :func:`as_given`.
"""

from typing import Literal, get_args

Strategy = Literal["gather", "hybrid", "collapsed", "propagate-down", "propagate-up", "refine"]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
DEFAULT_STRATEGY: Strategy = "gather"

# What recall returns (a memory or a summary), and what it may be asked for.
HitKind = Literal["leaf", "summary"]
KindFilter = Literal["any", HitKind]
KINDS: tuple[KindFilter, ...] = get_args(KindFilter)

TreeName = Literal["semantic", "temporal"]
TREES: tuple[TreeName, ...] = get_args(TreeName)

# A node as the cursor shows it: a tree's root, a branch below it, or a memory.
NodeKind = Literal["root", "internal", "leaf"]

Move = Literal["stay", "reset", "up", "down", "left", "right", "switch"]
MOVES: tuple[Move, ...] = get_args(Move)


def as_given(value: object, limit: int = 40) -> str:
    """``value`` as core's error messages quote it: its ``repr``, cut at ``limit`` characters.

    Core loads no secret detection (numpy and the standard library only). Its errors reach a person
    through the service, which checks what a person gives (a tree, a move, a node's id) before core
    reads it, and quotes it with its secrets redacted (``memtree_mcp.secrets.detection.quoted``).
    """
    return repr(value[:limit]) if isinstance(value, str) else repr(value)[:limit]

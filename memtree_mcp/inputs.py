"""Every limit on what callers may pass, and the checks that enforce them, in one place.

The MCP tools build their schemas from these constants (``server/fields.py``), the CLI and the
explorer call the same checks, and the service checks every argument again, so a limit is
written once and a caller that bypasses the schema (the CLI, the explorer, a direct call) meets
the same rule with the same message. Each check raises InvalidInput naming what was wrong and
what to do.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, cast

from memtree_mcp.config import AUTO_NAMESPACE, NAMESPACE_PATTERN, NAMESPACE_RULE
from memtree_mcp.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory

TreeName = Literal["semantic", "temporal"]
TREES: tuple[TreeName, ...] = ("semantic", "temporal")
TREE_RULE = "use 'semantic' (by subject) or 'temporal' (by time)"
KINDS = ("any", "leaf", "summary")

MAX_QUERY_CHARS = 4_000
MAX_K = 100
DEFAULT_K = 8
MAX_TOKENS = 100_000
MIN_SUMMARY_TOKENS = 16
DEFAULT_SUMMARY_TOKENS = 400
MAX_AGENT_STEPS = 50
DEFAULT_AGENT_STEPS = 12
MAX_CHILD_INDEX = 1_000_000
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_ROLE_CHARS = 32
MAX_SESSION_CHARS = 128
MAX_NODE_ID_CHARS = 64
MAX_NAMESPACE_CHARS = 64
# Timestamps and versions (``as_of``): ISO 8601 needs far fewer characters than this.
MAX_TIME_CHARS = 64
MAX_OUTLINE_DEPTH = 20
_ALLOWED_CONTROLS = {"\n", "\r", "\t"}


def check_tree(tree: object) -> TreeName:
    """``tree`` if it names one of the two trees; InvalidInput otherwise."""
    if tree not in TREES:
        shown = tree[:40] if isinstance(tree, str) else tree
        raise InvalidInput(f"unknown tree {shown!r}; {TREE_RULE}.")
    return cast(TreeName, tree)


def check_namespace(namespace: str | None, default: str) -> str:
    """The namespace a call means: the one it names, else ``default`` (the configured one).

    With MEMTREE_NAMESPACE=auto and no name given (the CLI, clients without roots) it is 'default'.
    """
    if namespace is None or namespace == "":
        return "default" if default == AUTO_NAMESPACE else default
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.fullmatch(namespace):
        raise InvalidInput(f"invalid namespace {namespace!r}: use {NAMESPACE_RULE}.")
    return namespace


def check_text(value: object, what: str, limit: int) -> str:
    """``value`` stripped, if it is non-empty text of at most ``limit`` characters without control codes."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text, not {type(value).__name__}.")
    text = value.strip()
    if not text:
        raise InvalidInput(
            f"{what} is empty: give the text to {'store' if what == 'content' else 'look up'}."
        )
    if len(text) > limit:
        raise InvalidInput(
            f"{what} has {len(text):,} characters; the limit is {limit:,}. Split it into smaller parts."
        )
    for position, char in enumerate(text):
        if char not in _ALLOWED_CONTROLS and unicodedata.category(char) in ("Cc", "Cs"):
            raise InvalidInput(
                f"{what} contains the control character U+{ord(char):04X} at position {position}; "
                "remove it (newlines and tabs are fine)."
            )
    return text


def check_node(memory: Memory, node_id: object) -> str:
    """``node_id`` if it names a node of ``memory``; NotFound otherwise."""
    if not isinstance(node_id, str) or len(node_id) > MAX_NODE_ID_CHARS:
        raise InvalidInput("node_id must be the id of a memory or summary, as recall or navigate return it.")
    try:
        memory.node(node_id)
    except KeyError:
        raise NotFound(f"no node {node_id!r}; recall or navigate give the ids of existing nodes.") from None
    return node_id


def check_range(value: object, what: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(f"{what} must be a whole number from {low} to {high}; got {value!r}.")
    return value


def check_share(value: object, what: str) -> float:
    """``value`` if it is a number from 0 to 1 (a relevance cut-off); InvalidInput otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{what} must be a number from 0 to 1; got {value!r}.")
    return float(value)


def check_role(role: object) -> str:
    if not isinstance(role, str) or not role.strip() or len(role) > MAX_ROLE_CHARS or not role.isprintable():
        raise InvalidInput(
            f"role must be a short word such as 'user' or 'assistant' (at most {MAX_ROLE_CHARS})."
        )
    return role.strip()


def check_tags(tags: object) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise InvalidInput("tags must be a list of short strings.")
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"at most {MAX_TAGS} tags per memory; got {len(tags)}.")
    cleaned: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_CHARS or not tag.isprintable():
            raise InvalidInput(
                f"each tag must be printable text of 1 to {MAX_TAG_CHARS} characters; got {tag!r}."
            )
        if tag.strip() not in cleaned:
            cleaned.append(tag.strip())
    return tuple(cleaned)


def check_session(session: object) -> str | None:
    if session is None:
        return None
    if not isinstance(session, str) or not session.strip() or len(session) > MAX_SESSION_CHARS:
        raise InvalidInput(f"session must be text of 1 to {MAX_SESSION_CHARS} characters, or left out.")
    if not session.isprintable():
        raise InvalidInput("session contains control characters; use plain text.")
    return session.strip()


def parse_timestamp(value: object) -> float:
    """Seconds since the epoch from an ISO 8601 date or date-time; a time without zone is taken as UTC."""
    if not isinstance(value, str):
        raise InvalidInput("timestamp must be an ISO 8601 string such as '2024-05-08T13:56:00Z'.")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(
            f"timestamp {value[:40]!r} is not ISO 8601; use a form such as '2024-05-08' or "
            "'2024-05-08T13:56:00+02:00'."
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = moment.timestamp()
    try:
        datetime.fromtimestamp(seconds, tz=UTC)  # must be writable back as a date in UTC
    except (ValueError, OverflowError, OSError):
        raise InvalidInput(
            f"timestamp {value[:40]!r} falls outside the years 1 to 9999 in UTC; give a real date."
        ) from None
    return seconds


def format_timestamp(seconds: float) -> str:
    """ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

"""Every limit on what callers may pass, and the checks that enforce them, in one place.

The MCP tools build their schemas from these constants (``server/fields.py``), the CLI and the
explorer call the same checks, and the service checks every argument again, so a limit is
written once and a caller that bypasses the schema (the CLI, the explorer, a direct call) meets
the same rule with the same message. Each check raises InvalidInput naming what was wrong and
what to do; an argument it quotes goes through ``secrets.detection.quoted``, which never repeats a
secret.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from memtree_mcp.config import AUTO_NAMESPACE, NAMESPACE_PATTERN, NAMESPACE_RULE
from memtree_mcp.core.names import TREES, TreeName
from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.secrets.detection import NAME_CHARS, quoted

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory

TREE_RULE = "use 'semantic' (by subject) or 'temporal' (by time)"

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
# A memory's names: written once in secrets/detection.py, whose redaction keeps a name within them.
MAX_TAG_CHARS = NAME_CHARS["tags"]
MAX_ROLE_CHARS = NAME_CHARS["role"]
MAX_SESSION_CHARS = NAME_CHARS["session"]
# The years a memory's time may fall in (as written). A memory's time is when it was said or
# happened: a year outside is a sentinel ("0001-01-01", "9999-12-31") or a typo, and one far ahead
# would sort after every real memory for good. Inside Python's years 1 to 9999 with room to spare,
# so a date stays a date in every zone (year 1 was year 0, an OverflowError, west of UTC).
EARLIEST_YEAR, LATEST_YEAR = 1900, 2199
MAX_NODE_ID_CHARS = 64
MAX_NAMESPACE_CHARS = 64
# Timestamps and versions (``as_of``): ISO 8601 needs far fewer characters than this.
MAX_TIME_CHARS = 64
MAX_OUTLINE_DEPTH = 20
# One forget call deletes at most this many memories (ids, or the memories under a summary); more,
# and the roots, only from the CLI (``memtree-mcp forget --all-under``), a person's own act.
MAX_FORGET = 50
# A forget query lists at most this many candidates.
FORGET_CANDIDATES = 10
# A remember names at most this many earlier memories it updates (``supersedes``).
MAX_SUPERSEDES = 16
# A memory's id: "m" and 15 hexadecimal digits (``writing.new_leaf_id``).
MEMORY_ID_CHARS = 16
_MEMORY_ID = re.compile("m[0-9a-f]{15}")
# A summary's id (core/trees/semantic.py, core/trees/temporal.py): a branch's, or a root's.
_SUMMARY_ID = re.compile("b[0-9a-f]{15}|semantic-root|temporal-root")
_ALLOWED_CONTROLS = {"\n", "\r", "\t"}
# Characters that change what a reader sees without being seen, removed from every text stored or
# looked up: Unicode tag characters (U+E0000-E007F, which can spell hidden instructions to a
# model), variation selectors, and the bidirectional embeddings, overrides and isolates that can
# make text display in another order than it is read (U+202A-202E, U+2066-2069).
INVISIBLE = re.compile("[\U000e0000-\U000e007f\ufe00-\ufe0f\U000e0100-\U000e01ef\u202a-\u202e\u2066-\u2069]")
# What shows nothing on its own: spaces and format characters (zero-width space, joiners, the
# byte-order mark, soft hyphens). Kept in a text (a joiner makes one emoji of several), but a text
# made only of them says nothing and is refused.
_UNSEEN = {"Zs", "Zl", "Zp", "Cf"}
# A version number for ``as_of``: ASCII digits only (``str.isdigit`` also takes '²' and '١').
_VERSION = re.compile("[0-9]{1,18}")


def check_tree(tree: object) -> TreeName:
    """``tree`` if it names one of the two trees; InvalidInput otherwise."""
    if tree not in TREES:
        raise InvalidInput(f"unknown tree {quoted(tree)}; {TREE_RULE}.")
    return cast(TreeName, tree)


def check_namespace(namespace: str | None, default: str) -> str:
    """The namespace a call means: the one it names, else ``default`` (the configured one).

    With MEMTREE_NAMESPACE=auto and no name given (the CLI, clients without roots) it is 'default'.
    """
    if namespace is None or namespace == "":
        return "default" if default == AUTO_NAMESPACE else default
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.fullmatch(namespace):
        raise InvalidInput(f"invalid namespace {quoted(namespace)}: use {NAMESPACE_RULE}.")
    if namespace == AUTO_NAMESPACE:
        # A setting's value, not a name: named in a call, it made a namespace called 'auto'.
        raise InvalidInput(
            "namespace 'auto' is a setting (MEMTREE_NAMESPACE=auto: the client's workspace names the "
            "namespace), not a name: leave namespace out to use the configured one, or name another."
        )
    return namespace


def visible(text: str) -> str:
    """``text`` without the invisible characters of :data:`INVISIBLE`."""
    return INVISIBLE.sub("", text)


def check_text(value: object, what: str, limit: int) -> str:
    """``value`` stripped, if it is non-empty text of at most ``limit`` characters without control codes.

    Invisible characters (:data:`INVISIBLE`) are removed first.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text, not {type(value).__name__}.")
    text = visible(value).strip()
    if not text:
        raise InvalidInput(
            f"{what} is empty: give the text to {'store' if what == 'content' else 'look up'}."
        )
    if not any(unicodedata.category(char) not in _UNSEEN for char in text):
        raise InvalidInput(
            f"{what} has only invisible characters (zero-width spaces, joiners, format marks): give "
            f"the text to {'store' if what == 'content' else 'look up'}."
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
        raise NotFound(
            f"no node {quoted(node_id)}; recall or navigate give the ids of existing nodes."
        ) from None
    return node_id


def check_flag(value: object, what: str) -> bool:
    """``value`` if it is true or false; InvalidInput for anything else ('yes', 1, "true")."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false; got {quoted(value)}.")
    return value


def check_ids(ids: object, limit: int | None) -> list[str]:
    """``ids`` without repeats, if it is a non-empty list of at most ``limit`` node ids."""
    if isinstance(ids, str) or not isinstance(ids, Sequence) or not ids:
        raise InvalidInput(
            "ids must be a non-empty list of memory ids, as recall or a forget query give them."
        )
    if limit is not None and len(ids) > limit:
        raise InvalidInput(f"at most {limit} ids a call; got {len(ids)}.")
    for node_id in ids:
        if not isinstance(node_id, str) or not 0 < len(node_id) <= MAX_NODE_ID_CHARS:
            raise InvalidInput(f"each id must be a memory id, as recall gives them; got {quoted(node_id)}.")
    return list(dict.fromkeys(ids))


def check_supersedes(ids: object, what: str = "supersedes") -> tuple[str, ...]:
    """``ids`` without repeats, if it is a list of at most MAX_SUPERSEDES memory ids (a summary's id
    has another form; whether each names a stored memory is the writer's check, under its lock);
    ``what`` names the argument (``supersedes`` or ``unlink``) in the error."""
    if ids is None:
        return ()
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise InvalidInput(f"{what} must be a list of memory ids, as recall shows them; nothing was stored.")
    if len(ids) > MAX_SUPERSEDES:
        raise InvalidInput(
            f"{what} names at most {MAX_SUPERSEDES} memories; got {len(ids)}. Nothing was stored."
        )
    for node_id in ids:
        if isinstance(node_id, str) and _SUMMARY_ID.fullmatch(node_id):
            raise InvalidInput(
                f"{what}: {node_id} is a summary, not a memory; name the memories (ids starting "
                "with 'm') that this one updates, e.g. from recall with expand=true. Nothing was stored."
            )
        if not isinstance(node_id, str) or not _MEMORY_ID.fullmatch(node_id):
            raise InvalidInput(
                f"{what}: {quoted(node_id)} is not a memory id ('m' and 15 hex digits, as recall shows "
                "them in braces). Nothing was stored; recall to find the current id."
            )
    return tuple(dict.fromkeys(ids))


def check_version(when: object, what: str = "as_of") -> int | None:
    """The version number ``when`` names (ASCII digits), or None when it is meant as a time;
    ``what`` names the argument in the error."""
    if not isinstance(when, str) or len(when) > MAX_TIME_CHARS:
        raise InvalidInput(
            f"{what} must be a version number or an ISO 8601 time such as '2024-05-08T13:56:00Z'."
        )
    return int(when.strip()) if _VERSION.fullmatch(when.strip()) else None


def check_range(value: object, what: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(f"{what} must be a whole number from {low} to {high}; got {quoted(value)}.")
    return value


def check_share(value: object, what: str) -> float:
    """``value`` if it is a number from 0 to 1 (a relevance cut-off); InvalidInput otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{what} must be a number from 0 to 1; got {quoted(value)}.")
    return float(value)


def check_role(role: object) -> str:
    if isinstance(role, str):
        role = visible(role)
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
        if isinstance(tag, str):
            tag = visible(tag)
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_CHARS or not tag.isprintable():
            raise InvalidInput(
                f"each tag must be printable text of 1 to {MAX_TAG_CHARS} characters; got {quoted(tag)}."
            )
        if tag.strip() not in cleaned:
            cleaned.append(tag.strip())
    return tuple(cleaned)


def check_session(session: object) -> str | None:
    if session is None:
        return None
    if isinstance(session, str):
        session = visible(session)
    if not isinstance(session, str) or not session.strip() or len(session) > MAX_SESSION_CHARS:
        raise InvalidInput(f"session must be text of 1 to {MAX_SESSION_CHARS} characters, or left out.")
    if not session.isprintable():
        raise InvalidInput("session contains control characters; use plain text.")
    return session.strip()


def parse_timestamp(value: object, calendar: Calendar) -> float:
    """Seconds since the epoch from an ISO 8601 date or date-time (a bound of a search, the time of
    a version); a time without zone is taken in ``calendar``'s (the namespace's). Raises
    InvalidInput for anything else, and for a time outside the years 1 to 9999 in UTC."""
    moment = _moment(value, calendar)
    try:
        seconds = moment.timestamp()
        datetime.fromtimestamp(seconds, tz=UTC)  # must be writable back as a date in UTC
    except (ValueError, OverflowError, OSError):
        raise InvalidInput(
            f"timestamp {quoted(str(value))} falls outside the years 1 to 9999 in UTC; give a real date."
        ) from None
    return seconds


def memory_timestamp(value: object, calendar: Calendar) -> float:
    """When a memory was made, as :func:`parse_timestamp` reads it, of the years
    :data:`EARLIEST_YEAR` to :data:`LATEST_YEAR` as written. Raises InvalidInput otherwise."""
    moment = _moment(value, calendar)
    if not EARLIEST_YEAR <= moment.year <= LATEST_YEAR:
        raise InvalidInput(
            f"timestamp {quoted(str(value))} is outside the years {EARLIEST_YEAR} to {LATEST_YEAR}; "
            "give the date the memory was made."
        )
    return parse_timestamp(value, calendar)


def _moment(value: object, calendar: Calendar) -> datetime:
    """``value`` as an ISO 8601 date-time, in ``calendar``'s zone when it names none."""
    if not isinstance(value, str):
        raise InvalidInput("timestamp must be an ISO 8601 string such as '2024-05-08T13:56:00Z'.")
    try:
        if not value.isascii():  # fromisoformat reads other scripts' digits too
            raise ValueError(value)
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(
            f"timestamp {quoted(value)} is not ISO 8601; use a form such as '2024-05-08' or "
            "'2024-05-08T13:56:00+02:00'."
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=calendar.zone)


def format_timestamp(seconds: float, calendar: Calendar) -> str:
    """ISO 8601 to the second, in ``calendar``'s zone (the namespace's; UTC written Z)."""
    return calendar.iso(seconds)


@dataclass(frozen=True, slots=True)
class ImportTerms:
    """How an import takes its records, when they come from a writer the namespace trusts more than
    a file: ``keep_makers``, the records' links keep who made them (the namespace's own records,
    read back by this process); ``secrets`` and ``max_chars``, the MEMTREE_SECRETS mode and the
    MEMTREE_MAX_CONTENT_CHARS their writer applied already (a hook's queued turn), used instead of
    this process's (None: this process's)."""

    keep_makers: bool = False
    secrets: str | None = None
    max_chars: int | None = None


FROM_A_FILE = ImportTerms()

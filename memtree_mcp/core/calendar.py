"""The calendar of the temporal tree: which session a memory belongs to, and the periods above it.

HAT (seed 003 §3.1) groups turns into sessions and sessions into larger stretches of time; people
think of time the same way ("last Tuesday's session", "the week of the release"). The temporal tree
(``core/temporal.py``) therefore has one level per time scale, counted from the leaves up:

- level 0, **segment**: a topical run of turns inside a session (SegTreeMem, seed 001, decides where a
  long session splits; a short one is a single segment);
- level 1, **session**: one conversation (see :func:`session_break`);
- level 2 and above, **day**, **week**, **month**, **year**: present only once the memory spans more
  than one of the period below (a memory of one afternoon has no day level).

Periods nest: a week is cut at a month's end (the week of 2026-03-30 holds two days of March; April's
first days are a week of their own), so that every period lies in one period of each level above.
A session belongs to the day it started on, so a session that runs past midnight is never cut.
Days are calendar days in one time zone, UTC unless the user names another (MEMTREE_TIMEZONE, set
with :func:`set_zone`), and every date the server shows is a date in that zone.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

if TYPE_CHECKING:
    from memtree_mcp.core.model import Leaf

Period = Literal["segment", "session", "day", "week", "month", "year"]
PERIODS: tuple[Period, ...] = ("segment", "session", "day", "week", "month", "year")
SEGMENT, SESSION, DAY, WEEK, MONTH, YEAR = range(6)

# A silence longer than this ends a session whose memories carry no session id (MEMTREE_SESSION_GAP).
SESSION_GAP_SECONDS = 30 * 60.0
DAY_SECONDS = 86_400.0


_zone: tzinfo = UTC


def zone_named(name: str) -> tzinfo:
    """The time zone called ``name`` (an IANA name such as ``Europe/Berlin``, or ``UTC``).
    Raises ValueError naming it when the system knows no such zone."""
    if name.strip().upper() in ("UTC", "Z", ""):
        return UTC
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name[:60]!r}; use an IANA name such as 'Europe/Berlin' or "
            "'America/New_York', or 'UTC'"
        ) from None


def set_zone(name: str) -> None:
    """Make ``name`` the zone whose days the calendar counts and whose dates the server shows."""
    global _zone
    _zone = zone_named(name)


def zone() -> tzinfo:
    """The zone of the calendar (UTC unless :func:`set_zone` named another)."""
    return _zone


def local(seconds: float) -> datetime:
    """A Unix time as a date and time in the calendar's zone."""
    return datetime.fromtimestamp(seconds, tz=_zone)


def shown_date(seconds: float) -> str:
    """The day of a Unix time as the server shows it: ``2026-03-14``, in the calendar's zone."""
    return local(seconds).strftime("%Y-%m-%d")


def shown_time(seconds: float) -> str:
    """A Unix time as the server shows it to the minute: ``2026-03-14 09:30``, in the calendar's zone."""
    return local(seconds).strftime("%Y-%m-%d %H:%M")


def day_of(seconds: float) -> date:
    """The calendar day of a Unix time, in the calendar's zone."""
    return local(seconds).date()


def session_break(previous: Leaf | None, leaf: Leaf, gap_seconds: float = SESSION_GAP_SECONDS) -> bool:
    """Whether ``leaf`` starts a new session after ``previous`` (the memory before it in time).

    - Another session id (or one memory with an id and the other without) starts a new session.
    - Without session ids, a silence longer than ``gap_seconds`` or a change of day does.
    - With the same id, the session goes on through pauses; only a silence longer than
      ``gap_seconds`` that also crosses into another day starts a new one (a conversation taken up
      again the next morning is that day's session).
    """
    if previous is None:
        return False
    if previous.session != leaf.session:
        return True
    silence = leaf.timestamp - previous.timestamp > gap_seconds
    new_day = day_of(previous.timestamp) != day_of(leaf.timestamp)
    if leaf.session is None:
        return silence or new_day
    return silence and new_day


def period_key(level: int, seconds: float) -> tuple[int, ...]:
    """What a period of ``level`` (day and above) is told apart by: equal keys, same period."""
    day = day_of(seconds)
    if level == DAY:
        return (day.year, day.month, day.day)
    if level == WEEK:
        return (day.year, day.month, _week_start(day).day)
    if level == MONTH:
        return (day.year, day.month)
    return (day.year,)


def coarsest_change(before: float, after: float) -> int | None:
    """The coarsest period level (year down to day) whose period differs between two times, or None
    when both fall on the same day."""
    for level in (YEAR, MONTH, WEEK, DAY):
        if period_key(level, before) != period_key(level, after):
            return level
    return None


def period_name(level: int) -> Period:
    """The name of a level (0 = segment); levels above the year are years too."""
    return PERIODS[min(level, YEAR)]


SESSION_ID_CHARS = 40  # of a session id in a session node's title


def period_title(level: int, first: float, session: str | None = None) -> str:
    """How a node of ``level`` that starts at ``first`` is named: its date at that time scale; a
    session node says it is one, with its ``session`` id when its memories came with one."""
    moment = local(first)
    day = moment.date()
    if level <= SEGMENT:
        return moment.strftime("%Y-%m-%d %H:%M")
    if level == SESSION:
        named = f" {session[:SESSION_ID_CHARS]}" if session else ""
        return f"session{named} {moment.strftime('%Y-%m-%d %H:%M')}"
    if level == DAY:
        return f"{day.isoformat()} ({day.strftime('%A')})"
    if level == WEEK:
        return f"week of {_week_start(day).isoformat()}"
    if level == MONTH:
        return day.strftime("%B %Y")
    return str(day.year)


def _week_start(day: date) -> date:
    """The first day of ``day``'s week (weeks start on Monday) that is in ``day``'s month."""
    monday = day - timedelta(days=day.weekday())
    return monday if monday.month == day.month else day.replace(day=1)

"""The calendar of the temporal tree: which session a memory belongs to, and the periods above it.

HAT (seed 003 §3.1) groups turns into sessions and sessions into larger stretches of time; people
think of time the same way ("last Tuesday's session", "the week of the release"). The temporal tree
(``core/trees/temporal.py``) therefore has one level per time scale, counted from the leaves up:

- level 0, **segment**: a topical run of turns inside a session (SegTreeMem, seed 001, decides where a
  long session splits; a short one is a single segment);
- level 1, **session**: one conversation (see :func:`session_break`);
- level 2 and above, **day**, **week**, **month**, **year**: present only once the memory spans more
  than one of the period below (a memory of one afternoon has no day level).

Periods nest: a week is cut at a month's end (the week of 2026-03-30 holds two days of March; April's
first days are a week of their own), so that every period lies in one period of each level above.
A session belongs to the day it started on, so a session that runs past midnight is never cut.
Days are calendar days in one time zone, the namespace's (:class:`Calendar`): a namespace takes
MEMTREE_TIMEZONE (UTC by default) when it is first written, keeps it with its temporal tree, and
every date the server shows of it is a date in that zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

if TYPE_CHECKING:
    from memtree_mcp.core.trees.model import Leaf

Period = Literal["segment", "session", "day", "week", "month", "year"]
PERIODS: tuple[Period, ...] = ("segment", "session", "day", "week", "month", "year")
SEGMENT, SESSION, DAY, WEEK, MONTH, YEAR = range(6)

# A silence longer than this ends a session whose memories carry no session id (MEMTREE_SESSION_GAP).
SESSION_GAP_SECONDS = 30 * 60.0
DAY_SECONDS = 86_400.0
SESSION_ID_CHARS = 40  # of a session id in a session node's title


# What the calendar shows of a time outside these (a memory an older memtree-mcp stored as year 1 or
# 9999): the nearest of them. A day inside Python's years 1 to 9999 wherever the zone's offset
# puts it (offsets stay under a day), so no stored time makes a namespace unreadable.
EARLIEST_SHOWN = datetime(1, 1, 3, tzinfo=UTC).timestamp()
LATEST_SHOWN = datetime(9999, 12, 29, tzinfo=UTC).timestamp()


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


@dataclass(frozen=True, slots=True)
class Calendar:
    """The days of one time zone: how a namespace's memories fall into sessions, days, weeks,
    months and years, and how the server shows their dates.

    Each namespace has its own (``Memory.calendar``), stored with its temporal tree: two processes
    (or two projects served by one hook worker) with different MEMTREE_TIMEZONE read the same
    namespace by the same days. Make one with :meth:`named`.
    """

    name: str  # "UTC" or an IANA name, as stored
    zone: tzinfo

    @classmethod
    def named(cls, name: str) -> Calendar:
        """The calendar of zone ``name`` (see :func:`zone_named`; UTC for "utc", "Z" or "").
        Raises ValueError naming it when the system knows no such zone."""
        zone = zone_named(name)
        return cls("UTC" if zone is UTC else str(getattr(zone, "key", name.strip())), zone)

    def local(self, seconds: float) -> datetime:
        """A Unix time as a date and time in this zone; a time beyond the years the calendar shows
        reads as the nearest it shows (:data:`EARLIEST_SHOWN`, :data:`LATEST_SHOWN`)."""
        if not seconds >= EARLIEST_SHOWN:  # NaN too
            seconds = EARLIEST_SHOWN
        elif seconds > LATEST_SHOWN:
            seconds = LATEST_SHOWN
        return datetime.fromtimestamp(seconds, tz=self.zone)

    def shown_date(self, seconds: float) -> str:
        """The day of a Unix time as the server shows it: ``2026-03-14``."""
        return self.local(seconds).strftime("%Y-%m-%d")

    def shown_time(self, seconds: float) -> str:
        """A Unix time as the server shows it to the minute: ``2026-03-14 09:30``."""
        return self.local(seconds).strftime("%Y-%m-%d %H:%M")

    def iso(self, seconds: float) -> str:
        """ISO 8601 to the second, with this zone's offset (UTC written Z)."""
        return self.local(seconds).isoformat(timespec="seconds").replace("+00:00", "Z")

    def day_of(self, seconds: float) -> date:
        """The calendar day of a Unix time."""
        return self.local(seconds).date()

    def session_break(
        self, previous: Leaf | None, leaf: Leaf, gap_seconds: float = SESSION_GAP_SECONDS
    ) -> bool:
        """Whether ``leaf`` starts a new session after ``previous`` (the memory before it in time).

        - Another session id (or one memory with an id and the other without) starts a new session.
        - Without session ids, a silence longer than ``gap_seconds`` or a change of day does.
        - With the same id, the session goes on through pauses; only a silence longer than
          ``gap_seconds`` that also crosses into another day starts a new one (a conversation taken
          up again the next morning is that day's session).
        """
        if previous is None:
            return False
        if previous.session != leaf.session:
            return True
        silence = leaf.timestamp - previous.timestamp > gap_seconds
        new_day = self.day_of(previous.timestamp) != self.day_of(leaf.timestamp)
        if leaf.session is None:
            return silence or new_day
        return silence and new_day

    def period_key(self, level: int, seconds: float) -> tuple[int, ...]:
        """What a period of ``level`` (day and above) is told apart by: equal keys, same period."""
        day = self.day_of(seconds)
        if level == DAY:
            return (day.year, day.month, day.day)
        if level == WEEK:
            return (day.year, day.month, _week_start(day).day)
        if level == MONTH:
            return (day.year, day.month)
        return (day.year,)

    def coarsest_change(self, before: float, after: float) -> int | None:
        """The coarsest period level (year down to day) whose period differs between two times, or
        None when both fall on the same day."""
        for level in (YEAR, MONTH, WEEK, DAY):
            if self.period_key(level, before) != self.period_key(level, after):
                return level
        return None

    def period_title(self, level: int, first: float, session: str | None = None) -> str:
        """How a node of ``level`` that starts at ``first`` is named: its date at that time scale; a
        session node says it is one, with its ``session`` id when its memories came with one."""
        moment = self.local(first)
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


UTC_CALENDAR = Calendar("UTC", UTC)


def period_name(level: int) -> Period:
    """The name of a level (0 = segment); levels above the year are years too."""
    return PERIODS[min(level, YEAR)]


def _week_start(day: date) -> date:
    """The first day of ``day``'s week (weeks start on Monday) that is in ``day``'s month."""
    monday = day - timedelta(days=day.weekday())
    return monday if monday.month == day.month else day.replace(day=1)

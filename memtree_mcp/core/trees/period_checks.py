"""Whether the temporal tree's periods are the calendar's: what ``doctor`` checks and a load heeds.

A tree is built by its calendar (``core/trees/calendar.py``): each session under the day, week, month and
year its start names, in the calendar's time zone, and a level for each time scale the memories
span more than one period of. A tree built by an older memtree-mcp out of time order, or under
another zone, breaks this: :func:`period_faults` names where, so that ``doctor`` reports it and a
load of a namespace that recorded no zone finds which zone its tree agrees with, or builds it
again (``Memory.load``).
"""

from __future__ import annotations

from collections.abc import Sequence

from memtree_mcp.core.trees.calendar import SESSION, UTC_CALENDAR, Calendar, period_name
from memtree_mcp.core.trees.temporal import TemporalTree

# (the branch at fault, what is wrong)
Fault = tuple[str, str]


def period_faults(tree: TemporalTree) -> list[Fault]:
    """Where the periods of ``tree`` (a tree whose shape is sound) are not the calendar's: a level
    missing for a time scale its sessions span, a session under a period its start does not name,
    two siblings naming the same period. One walk up from each session."""
    sessions = [branch for branch in tree.branches.values() if tree.level_of(branch.id) == SESSION]
    if not sessions:
        return []
    calendar = tree.calendar
    faults: list[Fault] = []
    starts = [session.first_ts for session in sessions]
    needed = calendar.coarsest_change(min(starts), max(starts))
    if needed is not None and tree.height - 1 <= needed:
        name = period_name(needed)
        faults.append(
            (tree.root.id, f"the sessions span more than one {name} and the tree has no {name} level")
        )
    faulty: set[str] = set()
    for session in sessions:
        level, up = SESSION + 1, session.parent
        while up is not None and up not in faulty and tree.branches[up].parent is not None:
            branch = tree.branches[up]
            if calendar.period_key(level, session.first_ts) != calendar.period_key(level, branch.first_ts):
                faulty.add(up)
                name = period_name(level)
                faults.append(
                    (
                        up,
                        f"the {name} {up} ({calendar.shown_time(branch.first_ts)}) holds a session of "
                        f"another {name} ({calendar.shown_time(session.first_ts)})",
                    )
                )
            level, up = level + 1, branch.parent
    for branch in tree.branches.values():
        level = tree.level_of(branch.id)
        if level - 1 > SESSION:
            named = [calendar.period_key(level - 1, tree.branches[c].first_ts) for c in branch.children]
            if len(set(named)) < len(named):
                faults.append(
                    (branch.id, f"two children of {branch.id} name the same {period_name(level - 1)}")
                )
    return faults


def zones_to_try(
    recorded: str, setting: Calendar, forced: Calendar | None = None
) -> tuple[Calendar | None, list[Calendar]]:
    """For a stored tree whose root recorded zone ``recorded`` ('' for none): the calendar to trust
    as it is (None: check the tree), and the ones to check it against in turn, the first of them
    the one to build it in when it agrees with none.

    A recorded zone is trusted: this code builds every tree in time order and by the zone it
    records. A tree that recorded none was built before zones were stored, in the zone of whoever
    wrote it last: ``setting`` (MEMTREE_TIMEZONE), else UTC, the default then. ``forced``: the
    zone to count in whatever was recorded (moving a namespace to another zone).
    """
    if forced is not None:
        return (forced if recorded == forced.name else None), [forced]
    if recorded:
        try:
            return Calendar.named(recorded), []
        except ValueError:  # a zone this system's time zone database does not know
            pass
    return None, [setting] if setting.name == "UTC" else [setting, UTC_CALENDAR]


def agreeing(tree: TemporalTree, calendars: Sequence[Calendar]) -> Calendar | None:
    """The first of ``calendars`` whose days ``tree`` was built by: its leaves in time order, each
    session under the periods its start names, no level missing (``period_faults``). The tree is
    left counting in the last one tried."""
    for calendar in calendars:
        tree.use(calendar)
        if tree.in_time_order() and not period_faults(tree):
            return calendar
    return None

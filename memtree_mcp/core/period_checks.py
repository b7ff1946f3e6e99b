"""Whether the temporal tree's periods are the calendar's: what ``doctor`` checks and a load heeds.

A tree is built by the calendar of its day (``core/calendar.py``): each session under the day, week,
month and year its start names, in the calendar's time zone, and a level for each time scale the
memories span more than one period of. A tree built by an older memtree-mcp out of time order, or
under another MEMTREE_TIMEZONE, breaks this: :func:`period_faults` names where, so that ``doctor``
reports it and a load builds the tree again (``Memory.load``).
"""

from __future__ import annotations

from memtree_mcp.core.calendar import SESSION, coarsest_change, period_key, period_name, shown_time
from memtree_mcp.core.temporal import TemporalTree

# (the branch at fault, what is wrong)
Fault = tuple[str, str]


def period_faults(tree: TemporalTree) -> list[Fault]:
    """Where the periods of ``tree`` (a tree whose shape is sound) are not the calendar's: a level
    missing for a time scale its sessions span, a session under a period its start does not name,
    two siblings naming the same period. One walk up from each session."""
    sessions = [branch for branch in tree.branches.values() if tree.level_of(branch.id) == SESSION]
    if not sessions:
        return []
    faults: list[Fault] = []
    starts = [session.first_ts for session in sessions]
    needed = coarsest_change(min(starts), max(starts))
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
            if period_key(level, session.first_ts) != period_key(level, branch.first_ts):
                faulty.add(up)
                name = period_name(level)
                faults.append(
                    (
                        up,
                        f"the {name} {up} ({shown_time(branch.first_ts)}) holds a session of another "
                        f"{name} ({shown_time(session.first_ts)})",
                    )
                )
            level, up = level + 1, branch.parent
    for branch in tree.branches.values():
        level = tree.level_of(branch.id)
        if level - 1 > SESSION:
            named = [period_key(level - 1, tree.branches[c].first_ts) for c in branch.children]
            if len(set(named)) < len(named):
                faults.append(
                    (branch.id, f"two children of {branch.id} name the same {period_name(level - 1)}")
                )
    return faults

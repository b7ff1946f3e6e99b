"""The memory as it was: which table version a version number or a time names, and the memory of
that version without what has been forgotten since.

Both recall's ``as_of`` (the read path) and ``restore`` (maintenance) need it; it reads a table and
writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import TYPE_CHECKING

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.calendar import SESSION_GAP_SECONDS, Calendar
from memtree_mcp.errors import InvalidInput
from memtree_mcp.secrets.detection import quoted
from memtree_mcp.service.inputs import check_version, parse_timestamp

if TYPE_CHECKING:
    from memtree_mcp.store.table import NamespaceTable


def resolve_version(table: NamespaceTable, when: str, calendar: Calendar, what: str = "as_of") -> int:
    """The table version ``when`` names: a version number (ASCII digits), or the last version
    written by then (an ISO 8601 time, in ``calendar``'s zone when it names none). Raises
    InvalidInput, naming the argument as ``what``, for anything else and for a version the table
    does not keep."""
    wanted = check_version(when, what)
    versions = table.versions()
    if wanted is not None:
        if wanted not in {v for v, _ in versions}:
            known = f"{versions[0][0]} to {versions[-1][0]}" if versions else "none"
            raise InvalidInput(f"no version {wanted}; the versions kept are {known}.")
        return wanted
    try:
        moment = parse_timestamp(when, calendar)
    except InvalidInput:
        raise InvalidInput(
            f"{what} {quoted(when.strip())} is neither a version number (digits 0-9; `memtree-mcp history` "
            "lists them) nor an ISO 8601 time such as '2024-05-08T13:56:00Z'."
        ) from None
    # Times are shown to the second (`history`), so a version counts from the second it was written.
    earlier = [v for v, at in versions if math.floor(at) <= moment]
    if not earlier:
        raise InvalidInput(f"the memory has no version as old as {when}; `memtree-mcp history` lists them.")
    return earlier[-1]


def memory_as_of(
    table: NamespaceTable,
    when: str,
    dimension: int,
    present: Collection[str],
    calendar: Calendar,
    session_gap: float = SESSION_GAP_SECONDS,
) -> Memory:
    """The memory of ``table`` as it was at version or time ``when`` (see :func:`resolve_version`),
    without what has been forgotten since, its days those of ``calendar`` (the namespace's now).

    ``present`` holds the ids of the memories that exist now. A version that holds none other is
    loaded as it was; otherwise its trees are rebuilt from its memories that still exist, so that
    neither a forgotten memory nor a summary written while it was there comes back.
    """
    snapshot = table.read(resolve_version(table, when, calendar))
    memory = Memory(dimension, session_gap=session_gap, calendar=calendar)
    kept = [leaf for leaf in snapshot.leaves if leaf.id in present]
    if len(kept) == len(snapshot.leaves):
        memory.load(
            snapshot.leaves,
            snapshot.branches,
            vectors=snapshot.vectors,
            shapes=snapshot.shapes,
            calendar=calendar,
        )
        return memory
    for leaf in kept:  # in the order they were remembered (Snapshot.leaves is sorted by seq)
        memory.add_leaf(leaf)
    return memory

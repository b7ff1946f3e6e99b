"""What each commit of a namespace table did, read back from its rows: ``history`` lists it so
that "the version before the forget" can be found.

Nothing new is stored for it: the rows of a commit already say which memories it added and which
it deleted. The one thing they could not tell apart is a restore that only deletes (going back to
before some remembers) from a forget, so a restore's deletion rows carry ``tree = "restore"``
(a deletion row's ``tree`` was always empty and is read by nothing else). Tables written before
that read the same, such a restore named a forget. What is inferred:

- ``restore``: a memory deleted earlier comes back, or the deletions are a restore's;
- ``forget``: memories deleted and none added;
- ``remember`` / ``import``: memories added, all with one time (a remember, its chunks included)
  or with several (an import's batch);
- ``purge``: the first commit kept after a purge (or after old history was dropped by
  MEMTREE_RETENTION): what came before it cannot be restored;
- ``update``: no memory added or deleted (summaries, a repair, a re-index).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from memtree_mcp.store.rows import DELETED

# The columns what a commit did is read from.
COMMIT_COLUMNS = ("rev", "updated", "id", "kind", "tree", "first_ts")
RESTORE_MARK = "restore"


@dataclass(frozen=True)
class Commit:
    """One version of the memory: when it was written, what did it, and the memories it added
    and deleted (zero when read from ``rev`` and ``updated`` alone)."""

    version: int
    at: float
    action: str = ""
    added: int = 0
    removed: int = 0
    memories: int = 0


def commits_of(rows: pa.Table, floor: int) -> list[Commit]:
    """The commits of ``rows`` (every revision of a table) from ``floor`` on, oldest first; with
    what each did when ``rows`` has :data:`COMMIT_COLUMNS`, else only versions and times."""
    if not rows.num_rows:
        return []
    if "kind" not in rows.column_names:
        grouped = rows.group_by("rev").aggregate([("updated", "max")])
        revs = grouped.column("rev").to_numpy()
        times = grouped.column("updated_max").to_numpy(zero_copy_only=False)
        kept = revs >= floor
        order = np.argsort(revs[kept], kind="stable")
        return [Commit(int(v), float(t)) for v, t in zip(revs[kept][order], times[kept][order], strict=True)]
    order = np.argsort(rows.column("rev").to_numpy(), kind="stable")
    rows = rows.take(pa.array(order))
    columns = {name: rows.column(name).to_pylist() for name in COMMIT_COLUMNS}
    live: set[str] = set()
    gone: set[str] = set()
    found: list[Commit] = []
    start = 0
    while start < rows.num_rows:
        rev = columns["rev"][start]
        end = start
        while end < rows.num_rows and columns["rev"][end] == rev:
            end += 1
        added = removed = 0
        back = marked = False
        dates: set[float] = set()
        for i in range(start, end):
            node_id, kind = columns["id"][i], columns["kind"][i]
            if kind == "leaf" and node_id not in live:
                back = back or node_id in gone
                live.add(node_id)
                gone.discard(node_id)
                added += 1
                dates.add(columns["first_ts"][i])
            elif kind == DELETED and node_id in live:
                marked = marked or columns["tree"][i] == RESTORE_MARK
                live.discard(node_id)
                gone.add(node_id)
                removed += 1
        if rev >= floor:
            at = max(columns["updated"][start:end])
            action = _action(added, removed, back or marked, len(dates), first=rev == floor and floor > 0)
            found.append(Commit(int(rev), float(at), action, added, removed, len(live)))
        start = end
    return found


def _action(added: int, removed: int, restored: bool, times: int, *, first: bool) -> str:
    if first:
        return "purge"
    if restored:
        return "restore"
    if added:
        return "import" if times > 1 else "remember"
    return "forget" if removed else "update"

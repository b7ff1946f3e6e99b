"""Explicit update links between memories (``Leaf.supersedes``): who says which memory it updates.

A memory that updates older ones names them in ``supersedes`` and who made each link in
``supersedes_by`` (the agent, the user or an LLM judge). :class:`Linked` keeps the reverse map
(which memories name a given one) and answers what recall, summaries and the tools ask of it:
whether a memory was updated, by which, and where a chain of updates leads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memtree_mcp.core.model import Leaf, LinkMaker, makers_of


class Linked:
    """The update links of a memory's leaves; :class:`~memtree_mcp.core.memory.Memory` is one.

    ``leaves`` holds the memories by id; ``_named_by`` maps an older memory to the memories that
    say they update it (in the order they said so), kept by :meth:`_link` and :meth:`_unlink`."""

    leaves: Mapping[str, Leaf]
    _named_by: dict[str, dict[str, None]]

    def link(self, leaf_id: str, olders: Iterable[str], by: LinkMaker = "agent") -> bool:
        """Record that held leaf ``leaf_id`` updates the memories ``olders`` too, as ``by`` said
        (its ``supersedes`` grows, in order, without repeats); whether anything was added. The
        caller checks the ids and that no link would close a circle (:meth:`reaches`,
        ``service/writing.py``) and rewrites the leaf's row. Raises KeyError for a leaf not held."""
        leaf = self.leaves[leaf_id]
        makers = dict(zip(leaf.supersedes, makers_of(leaf), strict=True))
        for older in olders:
            if older != leaf_id:
                makers.setdefault(older, by)
        if tuple(makers) == leaf.supersedes:
            return False
        self._unlink(leaf)
        leaf.supersedes, leaf.supersedes_by = tuple(makers), tuple(makers.values())
        self._link(leaf)
        return True

    def unlink(self, leaf_id: str, olders: Iterable[str]) -> bool:
        """Undo the links of held leaf ``leaf_id`` to ``olders``; whether any was there (as :meth:`link`)."""
        leaf = self.leaves[leaf_id]
        gone = set(olders)
        kept = [
            (older, maker)
            for older, maker in zip(leaf.supersedes, makers_of(leaf), strict=True)
            if older not in gone
        ]
        if len(kept) == len(leaf.supersedes):
            return False
        self._unlink(leaf)
        leaf.supersedes = tuple(older for older, _ in kept)
        leaf.supersedes_by = tuple(maker for _, maker in kept)
        self._link(leaf)
        return True

    def linked_olders(self) -> list[str]:
        """Every held memory that some held memory says it updates."""
        return [older for older in self._named_by if older in self.leaves]

    def reaches(self, start: str, target: str) -> bool:
        """Whether the links from held memory ``start`` lead to ``target``: ``start`` supersedes
        it, or supersedes one that does, and so on. Linking ``target`` to supersede ``start``
        would then close a circle."""
        seen, todo = {start}, [start]
        while todo:
            leaf = self.leaves.get(todo.pop())
            for older in leaf.supersedes if leaf is not None else ():
                if older == target:
                    return True
                if older not in seen:
                    seen.add(older)
                    todo.append(older)
        return False

    def superseded_by(self, older_id: str) -> str | None:
        """The held memory that says it updates held memory ``older_id`` (``Leaf.supersedes``), the
        latest of them when several do; None when none does or ``older_id`` is not held."""
        newers = self._named_by.get(older_id)
        if not newers or older_id not in self.leaves:
            return None
        return max(newers, key=lambda newer: (self.leaves[newer].timestamp, self.leaves[newer].seq))

    def current_of(self, older_id: str) -> str | None:
        """Where the explicit links from ``older_id`` lead: the memory that updates it, or the one
        that updates that in turn, and so on (C updates B, which updated A: A's is C); None when no
        memory says it updates ``older_id``. A circle of links stops before it closes."""
        seen = {older_id}
        current = None
        newer = self.superseded_by(older_id)
        while newer is not None and newer not in seen:
            seen.add(newer)
            current = newer
            newer = self.superseded_by(newer)
        return current

    def _link(self, leaf: Leaf) -> None:
        for older in leaf.supersedes:
            if older != leaf.id:
                self._named_by.setdefault(older, {})[leaf.id] = None

    def _unlink(self, leaf: Leaf) -> None:
        for older in leaf.supersedes:
            newers = self._named_by.get(older)
            if newers is not None:
                newers.pop(leaf.id, None)
                if not newers:
                    del self._named_by[older]

"""Explicit update links between memories (``Leaf.supersedes``): who says which memory it updates.

A memory that updates older ones names them in ``supersedes`` and who made each link in
``supersedes_by`` (the agent, the user, an LLM judge or an import). :class:`Links` keeps the
reverse map (which memories name a given one) and answers what recall, summaries and the tools ask
of it: whether a memory was updated, by which, and where a chain of updates leads. It holds the
rules every writer meets, whoever calls it:

- no circle: a link that would close one is refused (:meth:`Links.link`), since a circle marks
  every memory in it superseded and none current; :func:`circles` finds one a store holds anyway
  (an earlier version's import), for ``doctor``, and :func:`break_circles` undoes it;
- a link the user made is undone only by the user (:meth:`Links.unlink`,
  :func:`~memtree_mcp.core.trees.model.may_undo`); a maker saying again what a weaker one said makes the
  link its own;
- forgetting a memory in the middle of a chain keeps the chain's newest current
  (:meth:`Links.carry_over`): each memory that named the forgotten one names what it named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memtree_mcp.core.trees.model import Leaf, LinkMaker, link_maker, makers_of, may_undo, stronger, weaker
from memtree_mcp.core.trees.temporal import time_key


class Links:
    """The update links among a memory's leaves, one object that
    :class:`~memtree_mcp.core.memory.Memory` holds as ``memory.links`` and tells of each leaf it
    takes in or lets go (:meth:`add`, :meth:`remove`, :meth:`clear`).

    ``leaves`` is the memory's own mapping of memories by id, read (never changed) to follow a
    chain; ``_named_by`` maps an older memory to the memories that say they update it (in the
    order they said so), whether or not that id is held: a restore may bring it back."""

    def __init__(self, leaves: Mapping[str, Leaf]) -> None:
        """``leaves``: the memories by id, as their holder keeps them (read as it changes)."""
        self.leaves = leaves
        self._named_by: dict[str, dict[str, None]] = {}

    def link(self, leaf_id: str, olders: Iterable[str], by: LinkMaker = "agent") -> bool:
        """Record that held leaf ``leaf_id`` updates the memories ``olders`` too, as ``by`` said
        (its ``supersedes`` grows, in order, without repeats; a link a weaker maker made becomes
        ``by``'s); whether anything changed. The caller checks that the ids name memories and
        rewrites the leaf's row.

        Raises KeyError for a leaf not held, and ValueError, changing nothing, when a link would
        close a circle (an older one already updates ``leaf_id``, directly or through others:
        :meth:`reaches`); callers that drop such a link rather than refuse check it first."""
        leaf = self.leaves[leaf_id]
        wanted = [older for older in dict.fromkeys(olders) if older != leaf_id]
        for older in wanted:
            if self.reaches(older, leaf_id):
                raise ValueError(
                    f"{older} already updates {leaf_id}, directly or through others: "
                    "linking them would close a circle"
                )
        makers = dict(zip(leaf.supersedes, makers_of(leaf), strict=True))
        for older in wanted:
            makers[older] = stronger(makers[older], by) if older in makers else by
        if (tuple(makers), tuple(makers.values())) == (leaf.supersedes, makers_of(leaf)):
            return False
        self.remove(leaf)
        leaf.supersedes, leaf.supersedes_by = tuple(makers), tuple(makers.values())
        self.add(leaf)
        return True

    def unlink(self, leaf_id: str, olders: Iterable[str], by: LinkMaker = "agent") -> bool:
        """Undo the links of held leaf ``leaf_id`` to ``olders``, as ``by`` asks; whether any was
        there (as :meth:`link`). Raises KeyError for a leaf not held, and ValueError, changing
        nothing, when one of them is the user's and ``by`` is not the user."""
        leaf = self.leaves[leaf_id]
        gone = set(olders)
        links = list(zip(leaf.supersedes, makers_of(leaf), strict=True))
        for older, maker in links:
            if older in gone and not may_undo(by, maker):
                raise ValueError(f"the user linked {leaf_id} to {older}: only the user can undo it")
        kept = [(older, maker) for older, maker in links if older not in gone]
        if len(kept) == len(leaf.supersedes):
            return False
        self.remove(leaf)
        leaf.supersedes = tuple(older for older, _ in kept)
        leaf.supersedes_by = tuple(maker for _, maker in kept)
        self.add(leaf)
        return True

    def carry_over(self, leaf_id: str) -> set[str]:
        """Before held memory ``leaf_id`` is forgotten: each held memory that says it updates it
        says, from now on, that it updates what ``leaf_id`` updated (x ← y ← z, y forgotten: z
        updates x), so the chain's newest memory stays current over the older ones. A carried
        link rests on two, and is the weaker maker's: the user's only when the user made both
        (the user never said that z updates x otherwise); one a memory has already keeps the
        stronger maker, and none closes a circle. Returns the ids of the memories whose links
        changed (their rows are to be written). Raises KeyError for a memory not held."""
        gone = self.leaves[leaf_id]
        olders = [
            (older, maker)
            for older, maker in zip(gone.supersedes, makers_of(gone), strict=True)
            if older in self.leaves and older != leaf_id
        ]
        changed: set[str] = set()
        for newer_id in list(self._named_by.get(leaf_id, ())):
            newer = self.leaves.get(newer_id)
            if newer is None or newer_id == leaf_id:
                continue
            through = link_maker(newer, leaf_id)
            for older, maker in olders:
                if older == newer_id or self.reaches(older, newer_id):
                    continue  # a circle already (doctor breaks it); carrying it on would close another
                if self.link(newer_id, [older], weaker(through, maker)):
                    changed.add(newer_id)
        return changed

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
        return max(newers, key=lambda newer: time_key(self.leaves[newer]))

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

    def add(self, leaf: Leaf) -> None:
        """Take in the links of ``leaf``, which its holder now holds (or holds with other links)."""
        for older in leaf.supersedes:
            if older != leaf.id:
                self._named_by.setdefault(older, {})[leaf.id] = None

    def remove(self, leaf: Leaf) -> None:
        """Let go of the links of ``leaf``, which its holder lets go (or is about to relink)."""
        for older in leaf.supersedes:
            newers = self._named_by.get(older)
            if newers is not None:
                newers.pop(leaf.id, None)
                if not newers:
                    del self._named_by[older]

    def clear(self) -> None:
        """Let go of every link, before its holder loads other leaves."""
        self._named_by.clear()


def circles(leaves: Mapping[str, Leaf]) -> list[list[str]]:
    """The circles of links among ``leaves`` (a memory that updates one that updates it, directly
    or through others), each from its oldest memory on, in the order the links lead; one circle
    for each link :func:`break_circles` undoes, so two circles that share a link are one. A store
    holds one only when an earlier version let it in (an import); ``doctor`` reports them."""
    return [found for found, _ in _circles(leaves)]


def break_circles(leaves: Mapping[str, Leaf]) -> set[str]:
    """Undo, in each circle of links among ``leaves`` (:func:`circles`), the link from its oldest
    memory: of memories that say they update one another, the newer stays the update (later
    memories supersede earlier ones). Changes the leaves given; returns the ids of those changed."""
    changed: set[str] = set()
    for _, (newer, older) in _circles(leaves):
        leaf = leaves[newer]
        kept = [(o, m) for o, m in zip(leaf.supersedes, makers_of(leaf), strict=True) if o != older]
        leaf.supersedes = tuple(o for o, _ in kept)
        leaf.supersedes_by = tuple(m for _, m in kept)
        changed.add(newer)
    return changed


def _circles(leaves: Mapping[str, Leaf]) -> list[tuple[list[str], tuple[str, str]]]:
    """Each circle (oldest memory first) with the link that breaks it, found one after another in a
    copy of the links with each breaking link taken out: the circles' links, until none is left."""
    edges = {
        leaf_id: [older for older in dict.fromkeys(leaf.supersedes) if older in leaves and older != leaf_id]
        for leaf_id, leaf in leaves.items()
        if leaf.supersedes
    }
    found: list[tuple[list[str], tuple[str, str]]] = []
    done: set[str] = set()  # reach no circle, and never will: links are only taken out
    for start in sorted(edges):
        while (circle := _circle_from(start, edges, done)) is not None:
            first = min(circle, key=lambda node_id: time_key(leaves[node_id]))
            at = circle.index(first)
            ordered = circle[at:] + circle[:at]
            edges[ordered[0]].remove(ordered[1])
            found.append((ordered, (ordered[0], ordered[1])))
    return found


def _circle_from(start: str, edges: Mapping[str, list[str]], done: set[str]) -> list[str] | None:
    """A circle of ``edges`` that the links from ``start`` reach, as its memories in link order;
    None when none does. A depth-first walk without recursion (chains may be long) that skips the
    memories in ``done`` and adds those it finds reach no circle, so that a whole pass is linear."""
    if start in done:
        return None
    path: list[str] = []
    on_path: dict[str, int] = {}
    todo: list[tuple[str, int]] = [(start, 0)]
    while todo:
        node, at = todo.pop()
        if at == 0:
            on_path[node] = len(path)
            path.append(node)
        nexts = edges.get(node, [])
        if at < len(nexts):
            todo.append((node, at + 1))
            following = nexts[at]
            if following in on_path:
                return path[on_path[following] :]
            if following not in done:
                todo.append((following, 0))
            continue
        done.add(node)
        del on_path[path.pop()]
    return None

"""The trees' shapes as numpy arrays, kept up to date node by node: what recall reads of a tree.

- :class:`TreeArrays`: one tree's branches by position (parent, depth, leaves under it, ...) and
  each leaf-index row's parent, so that leaf scores are averaged up the tree a level at a time;
- :class:`TreeStructure`: a tree as parent arrays over leaves and branches, for propagation;
- :class:`Timeline`: the leaves in time order and their segments of the conversation;
- :class:`Positions`: which node stands at each position of a score array;
- :func:`branch_index`: the match vector of every internal branch, built at once.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memtree_mcp.core.indexes.vectors import VectorIndex
from memtree_mcp.core.trees.calendar import DAY_SECONDS, Calendar
from memtree_mcp.core.trees.hierarchy import Shape
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.semantic import SemanticTree
from memtree_mcp.core.trees.temporal import TemporalTree


def summary_hit(branch: Branch) -> bool:
    """Whether recall may answer ``branch`` as a summary: an internal branch of the semantic tree
    with a vector. A root stands for everything at once and would answer every query; a temporal
    branch groups a stretch of time, not a subject (a session of unrelated turns would stand for
    all of them, hiding the ones the query is not about): periods are read by summarize and navigate."""
    return branch.kind == "internal" and branch.tree == "semantic" and branch.vector is not None


def branch_index(dimension: int, trees: Sequence[SemanticTree | TemporalTree]) -> VectorIndex:
    """A branch index of every branch recall may answer (:func:`summary_hit`), by its match vector,
    built at once."""
    chosen = [(tree, branch) for tree in trees for branch in tree.branches.values() if summary_hit(branch)]
    index = VectorIndex(dimension, capacity=headroom(len(chosen)))
    if not chosen:
        return index
    vectors = np.stack([branch.vector for _, branch in chosen])  # type: ignore[misc]
    # As match_vector_of: average linkage scales the centroid by its cohesion, in float32.
    scale = np.asarray(
        [branch.cohesion if tree.linkage == "average" else 1.0 for tree, branch in chosen], dtype=np.float32
    )
    index.extend([branch.id for _, branch in chosen], (vectors * scale[:, None]).astype(np.float32))
    return index


class Positions:
    """Which node stands at each position of a score array: leaf-index rows first, then the parts.

    A part is a list of ids (branch positions of a tree's arrays, where None marks a free one).
    Only the few positions at the top of a ranking are ever looked up.
    """

    __slots__ = ("_leaf_index", "_leaves", "_parts")

    def __init__(self, leaf_index: VectorIndex, parts: Sequence[Sequence[str | None]]) -> None:
        self._leaf_index = leaf_index
        self._leaves = len(leaf_index)
        self._parts = parts

    def __len__(self) -> int:
        return self._leaves + sum(len(part) for part in self._parts)

    def __getitem__(self, position: int) -> str | None:
        if position < self._leaves:
            return self._leaf_index.id_at(position)
        position -= self._leaves
        for part in self._parts:
            if position < len(part):
                return part[position]
            position -= len(part)
        raise IndexError(position)


class Members:
    """A set of small integers in an array, O(1) add and discard (the last entry fills a hole)."""

    __slots__ = ("_values", "_where", "size")

    def __init__(self) -> None:
        self._values = np.zeros(4, dtype=np.int64)
        self._where: dict[int, int] = {}
        self.size = 0

    @classmethod
    def of(cls, values: np.ndarray) -> Members:
        """The set of ``values`` (distinct), in that order, as ``add`` one by one would hold them."""
        members = cls()
        members._values = np.array(values, dtype=np.int64) if len(values) else members._values
        members._where = {int(value): i for i, value in enumerate(values.tolist())}
        members.size = len(values)
        return members

    def add(self, value: int) -> None:
        if self.size == len(self._values):
            self._values = np.concatenate([self._values, np.zeros_like(self._values)])
        self._values[self.size] = value
        self._where[value] = self.size
        self.size += 1

    def discard(self, value: int) -> None:
        hole = self._where.pop(value, None)
        if hole is None:
            return
        self.size -= 1
        if hole != self.size:
            last = int(self._values[self.size])
            self._values[hole] = last
            self._where[last] = hole

    def values(self) -> np.ndarray:
        return self._values[: self.size]


_ID = operator.attrgetter("id")
_PARENT = operator.attrgetter("parent")
_DEPTH = operator.attrgetter("depth")
_LEAF_COUNT = operator.attrgetter("leaf_count")
_CHILDREN = operator.attrgetter("children")
_VECTOR = operator.attrgetter("vector")
_KIND = operator.attrgetter("kind")


class TreeArrays:
    """One tree's shape as arrays, kept up to date node by node: what recall needs from a tree.

    Each branch has a position (``position``; a freed position is reused, lowest first, and its id
    is None meanwhile). By position: ``parent`` (the parent's position, -1 for the root), ``count``
    (leaves under it), ``fan_out`` (children), ``has_vector`` and ``eligible`` (a branch recall may
    answer, :func:`summary_hit`). ``leaf_parent`` holds the parent's position of the leaf in each
    leaf-index row, and ``levels`` the positions at each depth, so that leaf scores are summed up the
    tree one level at a time (:meth:`means`), deepest first.
    """

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.position: dict[str, int] = {}
        self._free: list[int] = []  # a min-heap
        self.parent = np.full(16, -1, dtype=np.int64)
        self.depth = np.full(16, -1, dtype=np.int64)
        self.count = np.zeros(16, dtype=np.float64)
        self.fan_out = np.zeros(16, dtype=np.float64)
        self.has_vector = np.zeros(16, dtype=bool)
        self.eligible = np.zeros(16, dtype=bool)
        self.leaf_parent = np.full(16, -1, dtype=np.int64)
        self.levels: list[Members] = []

    @classmethod
    def build(
        cls, tree: SemanticTree | TemporalTree, leaf_index: VectorIndex, shape: Shape | None = None
    ) -> TreeArrays:
        """The arrays of ``tree`` from scratch (its leaves must all be in ``leaf_index``), taking
        what ``shape`` holds of it (its branches' in the order of ``tree.branches``) when given."""
        # What set_branch and set_leaf do node by node (positions in the order of the tree's
        # branches), with one numpy assignment per array: at 100k memories 2.7 s of a load took 0.3 s.
        arrays = cls()
        branches = list(tree.branches.values())
        count = len(branches)
        position = arrays.position
        position.update(zip(map(_ID, branches), itertools.count()))
        at = np.arange(count)  # each branch's position: their order
        parent_of = tree.parent_of
        given = shape if shape is not None and len(shape.depth) == count else None
        if given is None:
            # Every parent is one of the branches; one that is not still gets a position (what
            # set_branch and set_leaf would give it).
            lost = set(map(_PARENT, branches)).union(parent_of.values()).difference(position)
            lost.discard(None)
            position.update(zip(sorted(lost), itertools.count(len(position))))
        arrays.ids = list(position)
        arrays._grow(max(16, len(position)))
        # Iterated with C-level callables (map, attrgetter), not generator expressions: a frame
        # per node made this 0.45 s at 100k memories; from a shape, no step per node at all.
        if given is not None:
            parents, depth = given.parent, given.depth
            arrays.count[:count] = given.leaf_count
            arrays.fan_out[:count] = given.fan_out
            internal = given.internal
        else:
            parents = np.array(
                [position[parent] if parent is not None else -1 for parent in map(_PARENT, branches)],
                dtype=np.int64,
            )
            depth = np.fromiter(map(_DEPTH, branches), np.int64, count)
            arrays.count[:count] = np.fromiter(map(_LEAF_COUNT, branches), np.float64, count)
            arrays.fan_out[:count] = np.fromiter(map(len, map(_CHILDREN, branches)), np.float64, count)
            internal = np.fromiter(map("internal".__eq__, map(_KIND, branches)), bool, count)
        arrays.parent[:count] = parents
        arrays.depth[:count] = depth
        has_vector = np.fromiter((vector is not None for vector in map(_VECTOR, branches)), bool, count)
        arrays.has_vector[:count] = has_vector
        arrays.eligible[:count] = has_vector & internal & (tree.tree_name == "semantic")  # as summary_hit
        arrays.levels = [Members.of(at[depth == level]) for level in range(int(depth.max(initial=-1)) + 1)]
        if given is not None and len(leaf_index) == given.leaves:
            rows, under = given.leaf_rows, given.leaf_parent
        elif parent_of:
            rows = np.fromiter(map(leaf_index.row_of.__getitem__, parent_of.keys()), np.int64, len(parent_of))
            under = np.fromiter(map(position.__getitem__, parent_of.values()), np.int64, len(parent_of))
        else:
            rows = under = np.zeros(0, dtype=np.int64)
        if len(rows):
            arrays.leaf_parent = np.full(max(16, int(rows.max()) + 1), -1, dtype=np.int64)
            arrays.leaf_parent[rows] = under
        return arrays

    def _slot(self, node_id: str) -> int:
        found = self.position.get(node_id)
        if found is not None:
            return found
        if self._free:
            found = heapq.heappop(self._free)
            self.ids[found] = node_id
        else:
            found = len(self.ids)
            self.ids.append(node_id)
            if found == len(self.parent):
                self._grow(2 * found)
        self.position[node_id] = found
        return found

    def _grow(self, capacity: int) -> None:
        for name, fill in (
            ("parent", -1),
            ("depth", -1),
            ("count", 0),
            ("fan_out", 0),
            ("has_vector", False),
            ("eligible", False),
        ):
            old = getattr(self, name)
            grown = np.full(capacity, fill, dtype=old.dtype)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def set_branch(self, branch: Branch) -> None:
        """Record ``branch`` as it is now (a new one gets a position)."""
        p = self._slot(branch.id)
        self.parent[p] = -1 if branch.parent is None else self._slot(branch.parent)
        if self.depth[p] != branch.depth:
            if self.depth[p] >= 0:
                self.levels[int(self.depth[p])].discard(p)
            while len(self.levels) <= branch.depth:
                self.levels.append(Members())
            self.levels[branch.depth].add(p)
            self.depth[p] = branch.depth
        self.count[p] = branch.leaf_count
        self.fan_out[p] = len(branch.children)
        self.has_vector[p] = branch.vector is not None
        self.eligible[p] = summary_hit(branch)

    def drop_branch(self, node_id: str) -> None:
        """Forget a deleted branch; unknown ids are ignored."""
        p = self.position.pop(node_id, None)
        if p is None:
            return
        if self.depth[p] >= 0:
            self.levels[int(self.depth[p])].discard(p)
        self.parent[p], self.depth[p], self.count[p], self.fan_out[p] = -1, -1, 0, 0
        self.has_vector[p] = self.eligible[p] = False
        self.ids[p] = None
        heapq.heappush(self._free, p)

    def set_leaf(self, row: int, parent: str) -> None:
        """Record that the leaf in leaf-index ``row`` hangs under ``parent``."""
        if row >= len(self.leaf_parent):
            grown = np.full(max(2 * len(self.leaf_parent), row + 1), -1, dtype=np.int64)
            grown[: len(self.leaf_parent)] = self.leaf_parent
            self.leaf_parent = grown
        self.leaf_parent[row] = self._slot(parent)

    def move_leaf(self, old_row: int, new_row: int) -> None:
        """The leaf in ``old_row`` moved to ``new_row`` (the leaf index filled a hole); free ``old_row``."""
        self.leaf_parent[new_row] = self.leaf_parent[old_row]
        self.leaf_parent[old_row] = -1

    def means(self, leaf_scores: np.ndarray) -> np.ndarray:
        """By position, the mean of ``leaf_scores`` (by leaf-index row) over each branch's leaves."""
        size = len(self.ids)
        sums = np.bincount(self.leaf_parent[: len(leaf_scores)], weights=leaf_scores, minlength=size)
        for level in reversed(self.levels[1:]):
            members = level.values()
            if len(members):
                np.add.at(sums, self.parent[members], sums[members])
        return sums[:size] / np.maximum(self.count[:size], 1.0)

    def structure(self, leaf_index: VectorIndex) -> TreeStructure:
        """The tree as a :class:`TreeStructure`, leaves in leaf-index row order, then the branches."""
        n = len(leaf_index)
        size = len(self.ids)
        branches = np.flatnonzero(self.depth[:size] >= 0)
        renumber = np.full(size + 1, -1, dtype=np.int64)  # the last entry maps -1 (no parent) to -1
        renumber[branches] = n + np.arange(len(branches))
        parent = np.concatenate([renumber[self.leaf_parent[:n]], renumber[self.parent[branches]]])
        fan_out = np.concatenate([np.zeros(n), self.fan_out[branches]])
        ids: list[str | None] = [*leaf_index.ids(), *(self.ids[p] for p in branches)]
        return TreeStructure(
            ids=ids, leaf_rows=np.arange(n), parent=parent, fan_out=fan_out, branch_positions=branches
        )

    def picture(self, leaf_index: VectorIndex) -> dict[str, tuple[object, ...]]:
        """What the arrays say about each node, by id (for comparing with a fresh build)."""
        out: dict[str, tuple[object, ...]] = {}
        for p, node_id in enumerate(self.ids):
            if node_id is None:
                continue
            parent = int(self.parent[p])
            out[node_id] = (
                None if parent < 0 else self.ids[parent],
                int(self.depth[p]),
                float(self.count[p]),
                float(self.fan_out[p]),
                bool(self.has_vector[p]),
                bool(self.eligible[p]),
            )
        for row, leaf_id in enumerate(leaf_index.ids()):
            out[leaf_id] = (self.ids[int(self.leaf_parent[row])],)
        levels = {d: sorted(int(p) for p in level.values()) for d, level in enumerate(self.levels)}
        expected: dict[int, list[int]] = {}
        for position in np.flatnonzero(self.depth[: len(self.ids)] >= 0).tolist():
            expected.setdefault(int(self.depth[position]), []).append(position)
        out["__levels_consistent__"] = ({d: v for d, v in levels.items() if v} == expected,)
        return out


@dataclass(slots=True)
class Timeline:
    """Leaves in time order and their segments (runs without a session change or long silence)."""

    _rows: np.ndarray  # index rows of the leaves, in time order (capacity; the first ``size`` used)
    _segment: np.ndarray  # segment number of each, in the same order
    size: int

    @property
    def rows(self) -> np.ndarray:
        return self._rows[: self.size]

    @property
    def segment(self) -> np.ndarray:
        return self._segment[: self.size]

    @classmethod
    def build(
        cls, leaves: dict[str, Leaf], gap_seconds: float, index: VectorIndex, calendar: Calendar
    ) -> Timeline:
        return cls.of(
            sorted(leaves.values(), key=lambda leaf: (leaf.timestamp, leaf.seq)), gap_seconds, index, calendar
        )

    @classmethod
    def of(
        cls,
        ordered: Sequence[Leaf],
        gap_seconds: float,
        index: VectorIndex,
        calendar: Calendar,
        rows: np.ndarray | None = None,
    ) -> Timeline:
        """The timeline of ``ordered``, every leaf held, in time order (timestamp, then seq), its
        days those of ``calendar``;
        ``rows``: their rows in ``index`` when the caller knows them (after a load), instead of
        looking each up."""
        n = len(ordered)
        stamps = np.fromiter((leaf.timestamp for leaf in ordered), dtype=np.float64, count=n)
        sessions = np.empty(n, dtype=object)
        sessions[:] = [leaf.session for leaf in ordered]
        known = np.fromiter((session is not None for session in sessions), dtype=bool, count=n)
        # As Calendar.session_break between each leaf and the previous one, column-wise (object
        # arrays compare element by element with ``!=``): a Python loop over the pairs was 40 ms of
        # the first recall after loading 10k memories.
        other = (sessions[1:] != sessions[:-1]).astype(bool)
        silence = np.diff(stamps) > gap_seconds
        new_day = np.diff(day_numbers(stamps, calendar)) != 0
        boundary = other | np.where(known[1:], silence & new_day, silence | new_day)
        segment = np.concatenate([np.zeros(min(n, 1), dtype=np.int64), np.cumsum(boundary, dtype=np.int64)])
        if rows is None:
            row_of = index.row_of
            rows = np.fromiter((row_of[leaf.id] for leaf in ordered), dtype=np.int64, count=n)
        return cls(_rows=rows, _segment=segment, size=n)

    def append(self, row: int, boundary: bool) -> None:
        """Add the newest leaf (index ``row``); ``boundary`` when it starts a new segment."""
        segment = (int(self._segment[self.size - 1]) + int(boundary)) if self.size else 0
        if self.size == len(self._rows):
            capacity = max(16, 2 * self.size)
            self._rows = np.concatenate([self._rows, np.zeros(capacity - self.size, dtype=np.int64)])
            self._segment = np.concatenate([self._segment, np.zeros(capacity - self.size, dtype=np.int64)])
        self._rows[self.size] = row
        self._segment[self.size] = segment
        self.size += 1

    def insert(self, at: int, row: int, boundary: Callable[[int, int], bool]) -> None:
        """Put the leaf in index ``row`` at place ``at`` of the time order (a memory earlier than
        the last); ``boundary`` as for :meth:`remove`. Segment numbers after it move by the
        boundaries it makes and the one it stands in, so they still count boundaries from the
        first leaf."""
        size = self.size
        self.append(row, False)  # room at the end, then moved into place
        rows, segment = self._rows, self._segment
        rows[at + 1 : size + 1] = rows[at:size].copy()
        segment[at + 1 : size + 1] = segment[at:size].copy()
        rows[at] = row
        before = int(boundary(int(rows[at - 1]), row)) if at > 0 else 0
        after = int(boundary(row, int(rows[at + 1]))) if at < size else 0
        crossed = int(segment[at + 1] - segment[at - 1]) if 0 < at < size else 0
        segment[at] = int(segment[at - 1]) + before if at > 0 else 0
        if at < size:
            segment[at + 1 : size + 1] += before + after - crossed

    def positions(self) -> np.ndarray:
        """The place in time order of each leaf-index row (-1 for a row not in the timeline)."""
        rows = self.rows
        places = np.full(int(rows.max()) + 1 if len(rows) else 0, -1, dtype=np.int64)
        places[rows] = np.arange(len(rows))
        return places

    def segment_of_rows(self, n: int) -> np.ndarray:
        """The segment number of each of the ``n`` leaf-index rows (all in the timeline)."""
        out = np.zeros(n, dtype=np.int64)
        out[self.rows] = self.segment
        return out

    def neighbours(self, row: int, places: np.ndarray, radius: int) -> list[tuple[int, int]]:
        """The leaf-index rows within ``radius`` of leaf ``row`` in time and in its segment, with
        their distance: the leaves :meth:`propagate` with that radius lends score to it.
        ``places`` is :meth:`positions`, computed once for many calls."""
        rows, segment = self.rows, self.segment
        at = int(places[row]) if row < len(places) else -1
        if at < 0:
            return []
        found: list[tuple[int, int]] = []
        for distance in range(1, radius + 1):
            for other in (at - distance, at + distance):
                if 0 <= other < len(rows) and segment[other] == segment[at]:
                    found.append((int(rows[other]), distance))
        return found

    def remove(self, row: int, boundary: Callable[[int, int], bool]) -> None:
        """Take out the leaf in index ``row``; the leaves before and after it become neighbours.

        ``boundary(a, b)`` says whether the leaves in index rows ``a`` and ``b`` fall in different
        segments. Segment numbers after the gap move so that they count boundaries from the first
        leaf, as :meth:`build` numbers them: a few numpy passes, where a rebuild after each forget
        took 80 ms at 10k leaves (on a loaded machine), most of a follower's time after a forget.
        """
        size = self.size
        (found,) = np.flatnonzero(self._rows[:size] == row)[:1]
        p = int(found)
        if p + 1 < size:
            crossed = int(self._segment[p + 1] - self._segment[max(p - 1, 0)])
            joined = int(boundary(int(self._rows[p - 1]), int(self._rows[p + 1]))) if p > 0 else 0
            self._segment[p + 1 : size] += joined - crossed
        self._rows[p : size - 1] = self._rows[p + 1 : size]
        self._segment[p : size - 1] = self._segment[p + 1 : size]
        self.size -= 1

    def renumber(self, old_row: int, new_row: int) -> None:
        """The leaf in index row ``old_row`` moved to ``new_row``."""
        rows = self._rows[: self.size]
        rows[rows == old_row] = new_row

    def propagate(self, scores: np.ndarray, decay: float, radius: int) -> np.ndarray:
        """Add to each leaf's score ``decay``^r times the score of each neighbour r places away in
        time (r ≤ ``radius``) within its segment."""
        rows = self.rows
        segment = self.segment
        timed = scores[rows]
        spread = timed.copy()
        for r in range(1, radius + 1):
            if r >= len(timed):
                break
            same = segment[r:] == segment[:-r]
            weight = decay**r
            spread[r:] += weight * np.where(same, timed[:-r], 0.0)
            spread[:-r] += weight * np.where(same, timed[r:], 0.0)
        out = np.empty_like(scores)
        out[rows] = spread
        return out


@dataclass(slots=True)
class TreeStructure:
    """A tree as arrays: leaves first (in leaf-index row order), then branches; each node's parent."""

    ids: list[str | None]
    leaf_rows: np.ndarray  # position of each leaf-index row among ids
    parent: np.ndarray  # position of each node's parent, -1 for the root
    fan_out: np.ndarray  # number of children of each node
    branch_positions: np.ndarray | None = None  # the tree arrays' position of each branch, in order

    @classmethod
    def build(cls, tree: TemporalTree, leaf_index: VectorIndex) -> TreeStructure:
        """The structure straight from the tree's nodes (the reference the arrays are checked against)."""
        leaf_ids = leaf_index.ids()
        ids: list[str | None] = [*leaf_ids, *tree.branches]
        position = {node_id: i for i, node_id in enumerate(ids)}
        parent = np.full(len(ids), -1, dtype=np.int64)
        fan_out = np.zeros(len(ids), dtype=np.float64)
        for branch in tree.branches.values():
            fan_out[position[branch.id]] = len(branch.children)
            for child in branch.children:
                parent[position[child]] = position[branch.id]
        return cls(ids=ids, leaf_rows=np.arange(len(leaf_ids)), parent=parent, fan_out=fan_out)

    def propagate(self, initial: np.ndarray, top_down: bool, decay: float, horizon: int) -> np.ndarray:
        """s0 + Σ_{h=1..horizon} decay^h W^h s0 with W top-down or bottom-up, column-normalised."""
        has_parent = self.parent >= 0
        children = np.flatnonzero(has_parent)
        parents = self.parent[has_parent]
        total = initial.copy()
        step = initial
        for hop in range(1, horizon + 1):
            moved = np.zeros_like(initial)
            if top_down:
                moved[children] = step[parents] / self.fan_out[parents]
            else:
                np.add.at(moved, parents, step[children])
            total += decay**hop * moved
            step = moved
        return total


def grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` extended to ``size`` entries with -1."""
    grown = np.full(size, -1, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def headroom(size: int) -> int:
    """Capacity for an index loaded with ``size`` rows: room to grow before its first doubling.

    Doubling copies the whole matrix (150 MB at 100k leaves); without headroom the first
    ``remember`` after every start would pay it.
    """
    return size + size // 8 + 16


def day_numbers(stamps: np.ndarray, calendar: Calendar) -> np.ndarray:
    """The day of each Unix time in ``stamps`` as a number (equal numbers, same day of ``calendar``)."""
    if calendar.name == "UTC":
        return np.floor(stamps / DAY_SECONDS)
    return np.fromiter(
        (calendar.day_of(float(stamp)).toordinal() for stamp in stamps), dtype=np.float64, count=len(stamps)
    )

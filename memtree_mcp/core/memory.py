"""One namespace's memory in RAM: its leaves, the two trees over them, and the indexes that rank them.

:class:`Memory` holds the state and keeps it up to date: a load from the store, each leaf added or
removed, what other processes committed (:meth:`Memory.apply`), and every index following each
change. How its nodes are ranked for a query is ``core/ranking/recall.py``, which reads it; the
trees' arrays and the timeline are ``core/indexes/arrays.py``.

One module, not several: one object, Memory, whose every change (a load, a leaf added or removed,
what another process committed) is followed by both trees, every index and the links together;
split, each part would reach into the others' state.
"""

from __future__ import annotations

import collections
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from memtree_mcp.core.embedding import Matrix, Vector
from memtree_mcp.core.indexes.arrays import (
    Timeline,
    TreeArrays,
    TreeStructure,
    branch_index,
    grown,
    headroom,
    summary_hit,
)
from memtree_mcp.core.indexes.gathering import named_authors, without_names
from memtree_mcp.core.indexes.lexical import LexicalIndex
from memtree_mcp.core.indexes.vectors import VectorIndex
from memtree_mcp.core.names import TREES, as_given
from memtree_mcp.core.trees.calendar import SESSION_GAP_SECONDS, UTC_CALENDAR, Calendar
from memtree_mcp.core.trees.hierarchy import Linkage, Shape
from memtree_mcp.core.trees.links import Links
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.period_checks import agreeing, zones_to_try
from memtree_mcp.core.trees.representative import derive_vector, derive_vectors
from memtree_mcp.core.trees.segmenting import CompatibilityPolicy, CosinePolicy
from memtree_mcp.core.trees.semantic import SemanticTree, VectorMode
from memtree_mcp.core.trees.temporal import TemporalTree, time_key

# Branches whose vectors Memory.take_vectors compares at once.
COMPARE_BLOCK = 4096


class Memory:
    """The in-memory state of one namespace; the store persists it and rebuilds it on load.

    Every index follows each change in time proportional to the change, never to the memory's
    size: the leaf and branch vector matrices (``core/indexes/vectors.py``), BM25
    (``core/indexes/lexical.py``), the timeline and each tree's arrays (:class:`TreeArrays`). With
    average linkage (the default) a branch's similarity to a query is the mean of its leaves'
    (``core/trees/hierarchy.py``), so recall averages the leaves' scores up each tree instead of
    multiplying the query with every branch vector: one matrix-vector product over the leaves is
    the only pass over 384-dimensional data.
    """

    def __init__(
        self,
        dimension: int,
        *,
        vector_mode: VectorMode = "centroid",
        linkage: Linkage = "average",
        embed: Callable[[Sequence[str]], Matrix] | None = None,
        temporal_policy: CompatibilityPolicy | None = None,
        session_gap: float = SESSION_GAP_SECONDS,
        aggregate: bool | None = None,
        calendar: Calendar = UTC_CALENDAR,
    ) -> None:
        """``aggregate``: score branches by averaging leaf scores (None: whenever that is exact).
        ``session_gap``: the silence (seconds) that ends a session whose memories carry no id.
        ``calendar``: the days of the zone set for this process (MEMTREE_TIMEZONE), which a
        namespace takes when it has none stored yet; one that has keeps its own (:meth:`load`).

        Raises ValueError for ``aggregate=True`` with a semantic tree whose branches are not
        compared by the mean of their leaves (summary vectors or centroid linkage).
        """
        self.dimension = dimension
        self.leaves: dict[str, Leaf] = {}
        self.semantic = SemanticTree(
            self.leaves, dimension, vector_mode=vector_mode, linkage=linkage, embed=embed
        )
        self.temporal = TemporalTree(
            self.leaves,
            dimension,
            policy=temporal_policy or CosinePolicy(),
            gap_seconds=session_gap,
            calendar=calendar,
        )
        self.zone_setting = calendar
        # Whether load built the temporal tree from the leaves, the store having kept none of it or
        # one out of time order (whose branches, in ``temporal_replaced``, the next write deletes).
        self.temporal_rebuilt = False
        self.temporal_replaced: set[str] = set()
        # Whether the store records the zone used (else the next write does), and whether an older
        # memtree-mcp wrote a root without one since: read again and checked (``Spaces.follow``).
        self.zone_recorded = True
        self.zone_unknown = False
        averaged = all(
            tree.linkage == "average" and getattr(tree, "vector_mode", "centroid") == "centroid"
            for tree in (self.semantic, self.temporal)
        )
        if aggregate and not averaged:
            raise ValueError("aggregate=True needs average linkage and centroid vectors in both trees")
        self.aggregate = averaged if aggregate is None else aggregate
        self.leaf_index = VectorIndex(dimension)
        # Built when first asked for after a load, when recall does not need it (aggregate).
        self._branch_index: VectorIndex | None = VectorIndex(dimension)
        self.lexical = LexicalIndex()
        # By lexical slot, what recall reads with BM25 scores (core/ranking/recall.py), kept by each change.
        self.slot_row = np.zeros(0, dtype=np.int64)  # lexical slot -> leaf-index row
        self.slot_author = np.zeros(0, dtype=np.int64)  # lexical slot -> code of its author
        self.slot_stamp = np.zeros(0, dtype=np.float64)  # lexical slot -> the leaf's timestamp
        self.author_code: dict[str, int] = {}  # casefolded role -> code
        self.arrays: dict[str, TreeArrays] = {tree: TreeArrays() for tree in TREES}
        self._by_hash: dict[str, str] = {}
        # Explicit update links (``Leaf.supersedes``): who updates whom, told of each leaf taken in or let go.
        self.links = Links(self.leaves)
        self._authors: Counter[str] = Counter()  # memories by role, for names in a query
        self._last_named: tuple[str, tuple[str, ...], tuple[str, ...]] | None = None
        self._timeline: Timeline | None = None
        self._structure: TreeStructure | None = None
        # The last query's scores in time order (best_between): (query, leaves, next seq), seqs, scores.
        self._time_scores: tuple[tuple[bytes, int, int], np.ndarray, np.ndarray] | None = None
        self.next_seq = 0

    # -- loading ---------------------------------------------------------------------------------

    def load(
        self,
        leaves: Iterable[Leaf],
        branches: Iterable[Branch],
        lexical: LexicalIndex | None = None,
        vectors: Matrix | None = None,
        shapes: Mapping[str, Shape] | None = None,
        *,
        room: Matrix | None = None,
        as_stored: bool = False,
        calendar: Calendar | None = None,
    ) -> None:
        """Replace the whole state with stored nodes.

        ``lexical``: the BM25 index of exactly these leaves' texts, kept from an earlier load
        (``store/snapshot.py``), instead of tokenizing every text again. Branches that come with
        their vectors keep them (derived earlier from the same leaves). ``vectors``: the leaves'
        vectors as one matrix, row i being the i-th leaf's, the leaves given in seq order (what
        a store's ``Snapshot`` holds), taken in one copy instead of gathering each leaf's.
        ``shapes``: each tree's :class:`Shape` as the store's columns give it, for its branches in
        the order given, instead of working it out node by node. ``room``: a writable matrix
        whose first rows hold ``vectors``' values and whose others are free, for the leaf index to
        keep instead of a copy (a snapshot's mapping: ``Saved.leaf_room``). A temporal tree out of time
        order (as an earlier memtree-mcp built it from memories that came out of order) is built
        again in time order, unless ``as_stored`` (what ``doctor`` checks).

        Days are counted in the zone the temporal root recorded, trusted; a tree that recorded none
        keeps the zone it agrees with (``period_checks.zones_to_try``), or is built again.
        ``calendar``: count in this zone whatever was recorded (``doctor --repair --timezone``).

        Raises ValueError when ``lexical`` or ``vectors`` does not fit the leaves.
        """
        given = list(leaves)
        ordered = sorted(given, key=lambda leaf: leaf.seq)
        if vectors is not None and (
            len(vectors) != len(ordered) or any(a is not b for a, b in zip(ordered, given, strict=True))
        ):
            raise ValueError("the vectors given are not one per leaf, the leaves in seq order")
        self.leaves.clear()
        self._by_hash.clear()
        self.links.clear()
        self._authors = Counter(leaf.role for leaf in ordered)
        ids = [leaf.id for leaf in ordered]
        if room is not None and vectors is not None and len(room) > len(ordered):
            self.leaf_index = VectorIndex.holding(ids, room)
        else:
            self.leaf_index = VectorIndex(self.dimension, capacity=headroom(len(ordered)))
        if ordered and not len(self.leaf_index):
            if vectors is None:
                vectors = np.stack([leaf.vector for leaf in ordered])
            self.leaf_index.extend(ids, vectors)
            self._view_leaf_vectors(ordered)
        if lexical is not None and (len(lexical) != len(ordered) or not all(i in lexical for i in ids)):
            raise ValueError("the lexical index given does not index exactly these leaves")
        if lexical is None:
            lexical = LexicalIndex()
            lexical.add_many((leaf.id, leaf.text) for leaf in ordered)
        self.lexical = lexical
        slots = max(len(ordered), lexical.capacity) + 16
        self.slot_row = np.full(slots, -1, dtype=np.int64)
        self.slot_author = np.full(slots, -1, dtype=np.int64)
        self.slot_stamp = np.full(slots, -1, dtype=np.float64)
        # What _map_slot does leaf by leaf, one numpy assignment per array.
        n = len(ordered)
        slot_of = self.lexical.slot
        at = np.fromiter((slot_of(leaf_id) for leaf_id in ids), np.int64, n)
        code = {role: self._code_of(role) for role in self._authors}  # in first-seen order
        self.slot_row[at] = np.arange(n, dtype=np.int64)
        self.slot_author[at] = np.fromiter((code[leaf.role] for leaf in ordered), np.int64, n)
        self.slot_stamp[at] = np.fromiter((leaf.timestamp for leaf in ordered), np.float64, n)
        self.leaves.update(zip(ids, ordered, strict=True))
        self._by_hash.update((leaf.content_hash, leaf.id) for leaf in ordered if leaf.content_hash)
        for leaf in ordered:
            if leaf.supersedes:
                self.links.add(leaf)
        self.next_seq = (ordered[-1].seq + 1) if ordered else 0
        stored = list(branches)
        fitting: dict[str, Shape | None] = {}
        for tree in (self.semantic, self.temporal):
            mine = [b for b in stored if b.tree == tree.tree_name]
            if any(b.vector is None and b.children for b in mine):
                # Stores keep no branch vector: each is the mean of its leaves'.
                derive_vectors(mine, self.leaf_index.row_of, self.leaf_index.vectors())
            shape = (shapes or {}).get(tree.tree_name)
            fitting[tree.tree_name] = shape if shape is not None and shape.fits(mine) else None
            tree.adopt(mine, fitting[tree.tree_name])
        self.temporal_rebuilt = bool(ordered) and self.temporal.last_leaf is None
        self.temporal_replaced = set()
        self.zone_unknown = False
        recorded = self.temporal.root.zone
        trusted, candidates = zones_to_try(recorded, self.zone_setting, calendar)
        self.temporal.use(trusted or candidates[0])
        if self.temporal_rebuilt:
            # A store written before sessions and periods (schema 4) keeps no temporal branches
            # once read (store/migrations.py): the tree is built again from the leaves, in time
            # order, and the next write stores it (Spaces.writing).
            self.temporal.rebuild(ordered)
        elif ordered and trusted is None:
            # A tree an older memtree-mcp built: in the zone of whoever wrote last, and perhaps in
            # arrival order, with memories that came out of time order. Kept in the first zone it
            # agrees with; otherwise built again, and the next write replaces its branches.
            sound = agreeing(self.temporal, candidates)
            self.temporal.use(sound or candidates[0])
            if sound is None and not as_stored:
                self.temporal_replaced = set(self.temporal.branches) - {self.temporal.root.id}
                self.temporal.rebuild(ordered)
                self.temporal_rebuilt = True
        self.zone_recorded = not ordered or recorded == self.calendar.name
        self._branch_index = None if self.aggregate else self._build_branch_index()
        self.arrays = {
            tree.tree_name: TreeArrays.build(tree, self.leaf_index, fitting[tree.tree_name])
            for tree in (self.semantic, self.temporal)
        }
        # Built now rather than by the first recall: a server loads in the background, before it.
        # The leaf index was filled in seq order: leaf i is in row i.
        stamps = self.slot_stamp[at] if n else np.zeros(0)
        in_time = np.lexsort((np.arange(n), stamps))  # by time, then seq (the rows are in seq order)
        self._timeline = Timeline.of(
            [ordered[i] for i in in_time.tolist()],
            self.temporal.gap_seconds,
            self.leaf_index,
            self.calendar,
            in_time.astype(np.int64),
        )
        self._structure = None

    def own_vectors(self) -> None:
        """Hold every vector in this process's own memory: the leaf index's matrix and the
        branches' vectors copied where they are views of something else, such as a snapshot's
        file mapping (``Saved.leaf_room``). A purge deletes the snapshot, and a process that still
        mapped it would keep the deleted file, forgotten text included, on disk until it exits.
        The values do not change, so a recall running meanwhile reads the same numbers. A memory
        a write left half-changed (being let go of, to be read again) is copied as it stands.
        """
        self.leaf_index.own()
        self._view_leaf_vectors(self.leaves.values())
        for tree in (self.semantic, self.temporal):
            viewing = [
                b for b in tree.branches.values() if b.vector is not None and b.vector.base is not None
            ]
            if viewing:
                for branch, vector in zip(viewing, np.stack([b.vector for b in viewing]), strict=True):  # type: ignore[misc]
                    branch.vector = vector

    def take_vectors(
        self, ids: Sequence[str], room: Matrix, branches: Mapping[str, tuple[Vector, float]]
    ) -> bool:
        """Read the vectors from a snapshot of this memory just saved instead of holding copies:
        ``room`` holds the leaves' (``ids``, in the leaf index's order, then room to grow),
        ``branches`` each branch's vector and cohesion. Every value is compared first; False, and
        nothing changed, unless all are this memory's own."""
        held = [
            b
            for tree in (self.semantic, self.temporal)
            for b in tree.branches.values()
            if b.vector is not None
        ]
        if any(branch.id not in branches for branch in held):
            return False
        saved = [branches[branch.id] for branch in held]
        if [cohesion for _, cohesion in saved] != [branch.cohesion for branch in held]:
            return False
        # Compared a block at a time: one comparison per branch took ~0.5 s at 100k memories, and
        # the whole of them stacked at once would be two more copies of every vector.
        for start in range(0, len(held), COMPARE_BLOCK):
            mine = np.stack([branch.vector for branch in held[start : start + COMPARE_BLOCK]])  # type: ignore[misc]
            theirs = np.stack([vector for vector, _ in saved[start : start + COMPARE_BLOCK]])
            if not np.array_equal(mine, theirs):
                return False
        if list(ids) != self.leaf_index.ids() or not self.leaf_index.adopt(room):
            return False
        self._view_leaf_vectors(self.leaves.values())
        for branch, (vector, _) in zip(held, saved, strict=True):
            branch.vector = vector
        return True

    def _view_leaf_vectors(self, leaves: Iterable[Leaf]) -> None:
        """Have each of ``leaves`` read its vector from its row of the leaf index's matrix rather
        than keep a copy (1.5 KB a memory: 150 MB at 100k). The index writes a row only for a
        new leaf (past every held row) or when a removal fills a hole, and _unindex_leaf then gives
        the leaves involved their own copies; after the matrix grows, the views keep the old one.
        A leaf the index does not hold (a write cut short left it half-changed) gets a copy of
        its own in place of a view."""
        held, row_of = self.leaf_index.vectors(), self.leaf_index.row_of
        for leaf in leaves:
            row = row_of.get(leaf.id)
            if row is not None:
                leaf.vector = held[row]
            elif leaf.vector is not None and leaf.vector.base is not None:
                leaf.vector = np.array(leaf.vector)

    # -- writing ---------------------------------------------------------------------------------

    def duplicate_of(self, content_hash: str) -> str | None:
        """The id of a stored leaf with exactly this content, if there is one."""
        return self._by_hash.get(content_hash)

    def add_leaf(self, leaf: Leaf, removed: set[str] | None = None) -> set[str]:
        """Store ``leaf`` and insert it into both trees; return the ids of all nodes that changed.

        ``removed``, when given, receives the ids of branches the insertion deleted (a memory that
        falls between two sessions of the same conversation joins them into one node); the caller
        deletes their rows. Raises ValueError for a leaf id already stored or a sequence number not
        after the last one.
        """
        if leaf.id in self.leaves:
            raise ValueError(f"leaf {leaf.id} is already stored")
        if leaf.seq < self.next_seq:
            raise ValueError(f"leaf {leaf.id} has seq {leaf.seq}; the next is {self.next_seq}")
        last = self.temporal.last_leaf
        previous = self.leaves[last] if last is not None else None
        self.leaves[leaf.id] = leaf
        if leaf.content_hash:
            self._by_hash[leaf.content_hash] = leaf.id
        self._authors[leaf.role] += 1
        self.links.add(leaf)
        self.next_seq = leaf.seq + 1
        latest = previous is None or time_key(leaf) >= time_key(previous)
        changed = self.semantic.insert(leaf) | self.temporal.insert(leaf)
        dropped = set(self.temporal.dropped)
        self.temporal.dropped.clear()
        if dropped:
            self._drop_branches(dropped)
            changed -= dropped
            if removed is not None:
                removed |= dropped
        self.leaf_index.upsert(leaf.id, leaf.vector)
        self.lexical.add(leaf.id, leaf.text)
        self._map_slot(leaf.id)
        self._follow(changed)
        if self._timeline is not None:
            row = self.leaf_index.row(leaf.id)
            if latest:
                # Most leaves are the latest: the timeline grows at its end.
                self._timeline.append(
                    row, self.calendar.session_break(previous, leaf, self.temporal.gap_seconds)
                )
            else:
                self._timeline.insert(self.temporal.position_of(leaf.id), row, self._boundary_between_rows)
        self._structure = None
        return changed

    def remove_leaf(self, leaf_id: str) -> tuple[set[str], set[str]]:
        """Forget a leaf everywhere: both trees, the indexes, the duplicate check.

        Returns ``(changed, removed)``: ids of nodes whose stored rows must be rewritten, and ids of
        nodes that no longer exist (the leaf and every branch dissolved). Raises KeyError for an
        unknown leaf.
        """
        if leaf_id not in self.leaves:
            raise KeyError(leaf_id)
        changed: set[str] = set()
        removed: set[str] = {leaf_id}
        for tree in (self.semantic, self.temporal):
            tree_changed, tree_removed = tree.remove(leaf_id)
            changed |= tree_changed
            removed |= tree_removed
        self._unindex_leaf(leaf_id)
        self._drop_branches(removed)
        changed -= removed
        self._follow(changed)
        self._structure = None
        return changed, removed

    def apply(self, leaves: Sequence[Leaf], branches: Sequence[Branch], removed: Collection[str]) -> None:
        """Take in what other processes committed since this memory was loaded or last brought up to
        date: ``leaves`` and ``branches`` are the latest stored revisions of the nodes written since
        (new or changed; a leaf already held only changed its parents), ``removed`` the ids deleted.

        Afterwards the memory equals a fresh :meth:`load` of the same store (the same leaves, both
        trees node for node, the same recall), in time proportional to the change: each index,
        the tree arrays and the timeline follow node by node, as they do for :meth:`add_leaf`. The
        timeline is rebuilt on next use only when leaves came before the last one in time (a
        restore, a backdated memory).
        """
        gone = [leaf_id for leaf_id in removed if leaf_id in self.leaves]
        for leaf_id in gone:
            self._unindex_leaf(leaf_id)
        fresh = sorted((leaf for leaf in leaves if leaf.id not in self.leaves), key=lambda leaf: leaf.seq)
        for leaf in leaves:
            held = self.leaves.get(leaf.id)
            if held is not None:
                held.judging, held.may_update = leaf.judging, leaf.may_update
            if held is not None and (held.supersedes, held.supersedes_by) != (
                leaf.supersedes,
                leaf.supersedes_by,
            ):
                self.links.remove(held)  # its record was written again with other links
                held.supersedes, held.supersedes_by = leaf.supersedes, leaf.supersedes_by
                self.links.add(held)
        timeline = self._timeline
        previous = None  # the latest leaf still held, which the fresh ones must all follow
        if timeline is not None and timeline.size:
            previous = self.leaves[self.leaf_index.id_at(int(timeline.rows[-1]))]
        fresh.sort(key=time_key)
        in_order = previous is None or all(time_key(leaf) >= time_key(previous) for leaf in fresh)
        for leaf in fresh:
            self.leaves[leaf.id] = leaf
            if leaf.content_hash:
                self._by_hash[leaf.content_hash] = leaf.id
            self._authors[leaf.role] += 1
            self.links.add(leaf)
            self.leaf_index.upsert(leaf.id, leaf.vector)
            self.lexical.add(leaf.id, leaf.text)
            self._map_slot(leaf.id)
        self._drop_branches(removed)
        root = self.temporal.root
        for tree in (self.semantic, self.temporal):
            mine = [branch for branch in branches if branch.tree == tree.tree_name]
            _derive_missing_vectors(mine, self.leaves, tree.branches)
            tree.apply(mine, removed)
            arrays = self.arrays[tree.tree_name]
            for branch in mine:
                arrays.set_branch(branch)
                for child in branch.children:
                    if child in self.leaves:
                        arrays.set_leaf(self.leaf_index.row(child), branch.id)
                self._index_branch(branch)
        if self.temporal.root is not root:
            # Each write stores the root with its zone: another one was moved to (its tree with it);
            # a root without one was written by an older memtree-mcp, in its own zone.
            zone = self.temporal.root.zone
            if zone and zone != self.calendar.name:
                self.temporal.use(Calendar.named(zone))
                in_order = False  # the timeline's days were the other zone's
            self.zone_unknown, self.zone_recorded = not zone, bool(zone)
            self.temporal.root.zone = self.calendar.name
        if gone:
            self.next_seq = max((leaf.seq for leaf in self.leaves.values()), default=-1) + 1
        else:
            self.next_seq = max([self.next_seq, *(leaf.seq + 1 for leaf in fresh)])
        if timeline is not None and in_order:
            for leaf in fresh:
                timeline.append(
                    self.leaf_index.row(leaf.id),
                    self.calendar.session_break(previous, leaf, self.temporal.gap_seconds),
                )
                previous = leaf
        else:
            self._timeline = None
        self._structure = None

    def _unindex_leaf(self, leaf_id: str) -> None:
        """Take a leaf out of ``leaves``, the duplicate check, both indexes, the tree arrays' rows and
        the timeline."""
        row = self.leaf_index.row(leaf_id)
        if self._timeline is not None:
            self._timeline.remove(row, self._boundary_between_rows)
        leaf = self.leaves.pop(leaf_id)
        if self._by_hash.get(leaf.content_hash) == leaf_id:
            del self._by_hash[leaf.content_hash]
        self.links.remove(leaf)
        self._authors[leaf.role] -= 1
        if self._authors[leaf.role] <= 0:
            del self._authors[leaf.role]
        self.slot_row[self.lexical.slot(leaf_id)] = -1
        last_id = self.leaf_index.id_at(len(self.leaf_index) - 1)
        for node_id in {leaf_id, last_id}:
            # Their vectors may be views of the rows the removal rewrites (see load).
            kept = self.leaves.get(node_id, leaf)
            if kept.vector.base is not None:
                kept.vector = np.array(kept.vector, dtype=np.float32)
        moved = self.leaf_index.remove(leaf_id)
        self.lexical.remove(leaf_id)
        last = len(self.leaf_index)
        for arrays in self.arrays.values():
            # The last row moved into the freed one (or the freed row was the last).
            arrays.move_leaf(last, row)
        if moved is not None:
            self.slot_row[self.lexical.slot(moved)] = row
            if self._timeline is not None:
                self._timeline.renumber(last, row)

    def _boundary_between_rows(self, before: int, after: int) -> bool:
        """Whether the leaves in leaf-index rows ``before`` and ``after``, in time order, are in
        different segments of the conversation (see
        :func:`~memtree_mcp.core.trees.calendar.session_break`)."""
        earlier = self.leaves[self.leaf_index.id_at(before)]
        later = self.leaves[self.leaf_index.id_at(after)]
        return self.calendar.session_break(earlier, later, self.temporal.gap_seconds)

    def _drop_branches(self, removed: Iterable[str]) -> None:
        """Forget deleted branches in the branch index and the tree arrays; other ids are ignored."""
        for node_id in removed:
            if self._branch_index is not None:
                self._branch_index.remove(node_id)
            for arrays in self.arrays.values():
                arrays.drop_branch(node_id)

    def _follow(self, changed: Iterable[str]) -> None:
        """Bring the branch index and the tree arrays up to date with the changed nodes."""
        for node_id in changed:
            if node_id in self.leaves:
                row = self.leaf_index.row(node_id)
                for tree in (self.semantic, self.temporal):
                    self.arrays[tree.tree_name].set_leaf(row, tree.parent_of[node_id])
                continue
            for tree in (self.semantic, self.temporal):
                branch = tree.branches.get(node_id)
                if branch is not None:
                    self.arrays[tree.tree_name].set_branch(branch)
            branch = self.branch(node_id)
            if branch is not None:
                self._index_branch(branch)

    def _map_slot(self, leaf_id: str) -> None:
        slot = self.lexical.slot(leaf_id)
        if slot >= len(self.slot_row):
            size = max(2 * len(self.slot_row), slot + 1, 16)
            self.slot_row = grown(self.slot_row, size)
            self.slot_author = grown(self.slot_author, size)
            self.slot_stamp = grown(self.slot_stamp, size)
        leaf = self.leaves[leaf_id]
        self.slot_row[slot] = self.leaf_index.row(leaf_id)
        self.slot_author[slot] = self._code_of(leaf.role)
        self.slot_stamp[slot] = leaf.timestamp

    def _code_of(self, role: str) -> int:
        return self.author_code.setdefault(role.casefold(), len(self.author_code))

    def _index_branch(self, branch: Branch) -> None:
        index = self._branch_index
        if index is None:
            return  # not built since the load; it will be built from the trees as they are then
        if summary_hit(branch):
            index.upsert(branch.id, self.tree(branch.tree).match_vector_of(branch.id))
        else:
            index.remove(branch.id)

    @property
    def branch_index(self) -> VectorIndex:
        """The match vector of every internal branch (what collapsed recall ranks without averaging).

        Kept up to date with each change once built; after a load with ``aggregate`` it is built
        on first use, as recall averages leaf scores instead (it costs 1.5 KB a branch).
        """
        if self._branch_index is None:
            self._branch_index = self._build_branch_index()
        return self._branch_index

    def _build_branch_index(self) -> VectorIndex:
        return branch_index(self.dimension, (self.semantic, self.temporal))

    # -- reading ---------------------------------------------------------------------------------

    def branch(self, node_id: str) -> Branch | None:
        """The branch of either tree with this id, or None."""
        return self.semantic.branches.get(node_id) or self.temporal.branches.get(node_id)

    def node(self, node_id: str) -> Leaf | Branch:
        """The leaf or branch with this id; raises KeyError."""
        found = self.leaves.get(node_id) or self.branch(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def tree(self, name: str) -> SemanticTree | TemporalTree:
        """The tree called ``name`` ('semantic' or 'temporal'); raises ValueError for another name."""
        if name == "semantic":
            return self.semantic
        if name == "temporal":
            return self.temporal
        raise ValueError(
            f"unknown tree {as_given(name)}; use 'semantic' (by subject) or 'temporal' (by time)"
        )

    def breadcrumb(self, node_id: str, tree: str = "semantic") -> list[str]:
        """Short labels of the ancestors of ``node_id`` in ``tree``, top down, the root left out;
        a label shared by several ancestors (a deep chain of similar branches) is given once."""
        labels = [b.label for b in self.tree(tree).ancestors(node_id) if b.kind != "root" and b.label]
        return list(dict.fromkeys(labels))

    def authors_named(self, query_text: str) -> list[str]:
        """The authors (roles) of stored memories that ``query_text`` names, longest first."""
        # A copy taken in one step (no lock needed): the service asks before it embeds, outside
        # the namespace's lock, while a writer may be adding memories. The service asks, then
        # recall asks again for the same query: the last answer is kept while the authors stay.
        authors = tuple(self._authors)
        last = self._last_named
        if last is not None and last[0] == query_text and last[1] == authors:
            return list(last[2])
        names = named_authors(query_text, authors)
        self._last_named = (query_text, authors, tuple(names))
        return names

    def content_text(self, query_text: str) -> str | None:
        """``query_text`` with the authors it names replaced by a pronoun (what ``gather`` embeds
        as ``content_query``), or None when it names none."""
        names = self.authors_named(query_text)
        return without_names(query_text, names) if names else None

    def timeline(self) -> Timeline:
        """The leaves in time order with their segments; rebuilt after a removal, on first use."""
        if self._timeline is None:
            self._timeline = Timeline.build(
                self.leaves, self.temporal.gap_seconds, self.leaf_index, self.calendar
            )
        return self._timeline

    @property
    def calendar(self) -> Calendar:
        """The days this namespace's memories are counted and shown in: its stored zone's."""
        return self.temporal.calendar

    def best_between(self, first: str, last: str, query: Vector) -> float | None:
        """The highest cosine to ``query`` among the memories from leaf ``first`` to leaf ``last``
        in time order (None when there is none): how a period of the temporal tree, a run of the
        timeline, matches a query. The scores in time order are one matrix product, kept for the
        last query (the memory agent weighs many periods for one; any change of the memory changes
        its count or its next seq, and so the key)."""
        key = (query.tobytes(), len(self.leaves), self.next_seq)
        if self._time_scores is None or self._time_scores[0] != key:
            timeline = self.timeline()
            scores = self.leaf_index.score_array(query)[timeline.rows]
            self._time_scores = (key, timeline.positions(), scores)
        _, places, scores = self._time_scores
        row_of = self.leaf_index.row_of
        if first not in row_of or last not in row_of:
            return None
        low, high = int(places[row_of[first]]), int(places[row_of[last]])
        return float(scores[low : high + 1].max()) if 0 <= low <= high else None

    def temporal_structure(self) -> TreeStructure:
        """The temporal tree as parent arrays, for propagation: from the tree's arrays, after a change."""
        if self._structure is None:
            self._structure = self.arrays["temporal"].structure(self.leaf_index)
        return self._structure


def _derive_missing_vectors(
    branches: Sequence[Branch], leaves: Mapping[str, Leaf], held: Mapping[str, Branch]
) -> None:
    """Give the stored ``branches`` of one tree that come without a vector theirs, from their
    children (deepest first, so a changed child's comes before its parent reads it): the changed
    ones among ``branches``, the others as ``held`` (the tree before the change)."""
    missing = sorted((b for b in branches if b.vector is None and b.children), key=lambda b: -b.depth)
    if not missing:
        return
    incoming = {b.id: b for b in branches}
    lookup = collections.ChainMap(incoming, held)  # type: ignore[arg-type]
    for branch in missing:
        derive_vector(branch, leaves, lookup)

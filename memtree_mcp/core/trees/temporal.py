"""The temporal tree (SegTreeMem, seed 001 §4.1–4.2; HAT, seed 003 §3.1): sessions and periods.

Leaves hang in time order (:func:`time_key`: their timestamp, then their arrival for memories of the
same moment), whatever order they arrive in, and every branch covers a contiguous run of them. The
levels are time scales (``core/trees/calendar.py``), from the leaves up: topical **segments** of a session,
**sessions**, then **days**, **weeks**, **months** and **years**, each present only once the memory
spans more than one period of the level below. So a depth means a time scale, and ``navigate
left/right`` at a session walks the sessions in order, at a day the days, and so on.

Where a new leaf goes. A leaf later than every other (the usual case) joins a node of the *rightmost
frontier*, the path from the root down to the last leaf (seed 001 eq. 2):

- It continues the current session (:meth:`~memtree_mcp.core.trees.calendar.Calendar.session_break`
  says no break, and the session node holds fewer than ``MAX_SESSION`` memories; past that the
  session goes on in a new node, as if it were a new session of the same day): it joins the current
  segment while that segment holds fewer than ``min_segment`` memories (a short session stays one
  segment, however its subjects change) or while the compatibility policy (SegTreeMem's model C,
  judging content alone) says it continues it; otherwise it opens a new segment in the session.
- It starts a new session: the new session hangs under the current period that still holds it, the
  current day when it starts on the same day, else the current week, month or year, or the root.
  When it falls outside every period the tree has (the first session of a second day, week, month
  or year), the tree grows the missing levels first.

A leaf that comes earlier in time than the last (a backdated memory, an import of old notes, a
client whose clock is behind) goes where its time puts it (:meth:`TemporalTree.insert`): the
sessions it falls between (at most two) are grouped again with it by the same rule (it may join
one, join two into one, or cut one where its session id differs), keep their segments (the leaf
joins the segment of the memory before it) and their nodes by membership (each group the node of
the old session it holds most memories of, a new node when it holds none; a node that lost
memories loses its LLM summary, which may speak of them), and are hung under the periods their
start names, made where missing and placed among their siblings in time order. It costs the memories of those
sessions and one path of periods, never a rebuild; and any arrival order of the same memories gives
the same periods and sessions with the same members (segments inside a session may differ, as they
were decided while its memories came; and a session past ``MAX_SESSION`` is cut where its memories
stood when each arrived).

Uniform depth. Every leaf sits at depth ``height`` (SegTreeMem's levelled-tree invariant, one
frontier node per level), so a new leaf under a node ℓ levels up comes with a fresh right chain of
single-child branches (a new day, its first session, that session's first segment).

A new level. The root keeps its fixed id ``TEMPORAL_ROOT_ID`` so that stored references (rows,
cursors, breadcrumbs) stay valid: a new period level is a new branch *beneath* the root that takes
over all of the root's children (they all lie in one period of the new level, or it would have been
made earlier); every other branch moves one level down, so ``insert`` reports them all as changed.
Forgetting undoes it: a root left with one child period loses that level again.

Labels. A branch's label starts with its period ("2026-03-11 · SAML, onboarding", "week of
2026-03-09 · …"), read from its first memory's time; the words after it are the extractive label.

One module, not several: one tree, TemporalTree, whose ways in (a memory at the end, a memory placed
inside its time, a removal, a new level) share its levels, frontier, calendar and time-order index;
split, each would reach into the others' state.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Mapping, Sequence

from memtree_mcp.core.trees.calendar import (
    DAY,
    SEGMENT,
    SESSION,
    SESSION_GAP_SECONDS,
    UTC_CALENDAR,
    Calendar,
    period_name,
)
from memtree_mcp.core.trees.hierarchy import Hierarchy, Shape
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.representative import PERIOD_SEPARATOR, refresh_branch
from memtree_mcp.core.trees.segmenting import Candidate, CompatibilityPolicy
from memtree_mcp.core.trees.semantic import new_branch_id

TEMPORAL_ROOT_ID = "temporal-root"
Entry = tuple[float, int, str]
"""A leaf's place in time order: its :func:`time_key` and its id."""
# A session's first memories stay one segment, whatever their subjects: a short session is one
# stretch of work, and a segment of one or two turns tells a reader nothing the memory does not.
MIN_SEGMENT = 6
# A session node holds at most this many memories; the next one continues the session in a new node
# of the same day. A conversation rarely runs this long; an import without times or sessions (one
# session, by the silence rule) would otherwise make one node of everything, recomputed from all
# its segments at every insertion (48 ms a memory at 10k, against 1.5 ms).
MAX_SESSION = 100
# The height of a tree holding one session: the root, the session, its segment, the leaves.
SESSION_HEIGHT = 3


def time_key(leaf: Leaf) -> tuple[float, int]:
    """Where a memory stands in time: its timestamp, then its arrival (``seq``) among memories of the
    same moment."""
    return (leaf.timestamp, leaf.seq)


class TemporalTree(Hierarchy):
    """The temporal hierarchy over a shared mapping of leaves; mirrors ``SemanticTree``'s shape.

    ``leaves`` is owned by the caller (the memory), which adds a leaf there before inserting it here.
    Leaves may arrive in any order; they hang in time order. ``dropped`` collects the ids of the
    branches an insertion deleted (two sessions a memory joined become one), for the caller to
    delete. ``gap_seconds``: the silence that
    ends a session without an id; ``min_segment``: the memories a segment holds before the policy
    may end it (raises ``ValueError`` below 1); ``calendar``: the days its sessions and periods are
    counted in (the namespace's zone, recorded on the root: :meth:`use`).
    """

    tree_name = "temporal"

    def __init__(
        self,
        leaves: Mapping[str, Leaf],
        dimension: int,
        *,
        policy: CompatibilityPolicy,
        gap_seconds: float = SESSION_GAP_SECONDS,
        min_segment: int = MIN_SEGMENT,
        new_id: Callable[[], str] = new_branch_id,
        calendar: Calendar = UTC_CALENDAR,
    ) -> None:
        if min_segment < 1:
            raise ValueError(f"a segment holds at least one memory, got min_segment={min_segment}")
        self.leaves = leaves
        self.dimension = dimension
        self.policy = policy
        self.gap_seconds = gap_seconds
        self.min_segment = min_segment
        self.new_id = new_id
        self.calendar = calendar
        self.root = _new_root(calendar)
        self.branches: dict[str, Branch] = {TEMPORAL_ROOT_ID: self.root}
        self.parent_of: dict[str, str] = {}
        self.height = 0
        self.last_leaf: str | None = None
        self.dropped: set[str] = set()
        # Every leaf's Entry, in time order: made when a leaf first arrives out of order, then kept.
        self._order: list[Entry] | None = None
        self._entry_of: dict[str, Entry] = {}

    # -- reading ---------------------------------------------------------------------------------

    def frontier(self) -> list[Branch]:
        """The branches on the path from the root to the last leaf, lowest first, root last: the
        i-th is the current node of level i (segment, session, day, …)."""
        path = [self.root]
        node = self.root
        while node.children and node.children[-1] in self.branches:
            node = self.branches[node.children[-1]]
            path.append(node)
        path.reverse()
        return path

    def level_of(self, node_id: str) -> int:
        """How many levels above the leaves a branch is (0: a segment, 1: a session, …); -1 for a
        leaf. Raises ``KeyError`` for an id that is neither."""
        if node_id in self.parent_of:
            return -1
        return self.height - 1 - self.branches[node_id].depth

    def period_of(self, node_id: str) -> str | None:
        """The time scale of a branch below the root ("segment", "session", "day", "week", "month",
        "year"); None for the root, a leaf or an unknown id."""
        branch = self.branches.get(node_id)
        if branch is None or branch.parent is None:
            return None
        return period_name(self.level_of(node_id))

    def position_of(self, leaf_id: str) -> int:
        """Where a leaf of the tree stands in time order (0 for the earliest). KeyError for another id."""
        order = self._ensure_order()
        return bisect.bisect_left(order, self._entry_of[leaf_id])

    def ends(self, node_id: str) -> tuple[str, str]:
        """The first and the last leaf under a node in time order (a leaf's are itself). KeyError for
        an unknown id; a branch without leaves gives its own id twice."""
        if node_id in self.parent_of:
            return node_id, node_id
        first = last = self.branches[node_id]
        while first.children and first.children[0] in self.branches:
            first = self.branches[first.children[0]]
        while last.children and last.children[-1] in self.branches:
            last = self.branches[last.children[-1]]
        if not first.children or not last.children:
            return node_id, node_id
        return first.children[0], last.children[-1]

    def candidates(self, leaf: Leaf) -> list[Candidate]:
        """The segments ``leaf`` may continue, as its policy will see them: the current segment when
        the leaf continues its session, else none."""
        if self.last_leaf is None or self.calendar.session_break(
            self.leaves[self.last_leaf], leaf, self.gap_seconds
        ):
            return []
        return [self._candidate(self.frontier()[SEGMENT])]

    # -- writing ---------------------------------------------------------------------------------

    def insert(self, leaf: Leaf) -> set[str]:
        """Place ``leaf`` (already in ``leaves``) where its time puts it; return every changed node id.

        The changed set holds the leaf, the new chain of branches above it, the branch it joined and
        that branch's ancestors; after a new level, every branch (their depths moved) and the
        children of the root that moved under the new level. A leaf earlier than the last one is
        placed by :meth:`_place_inside`; the branches it deletes are added to ``dropped``.

        Raises ``KeyError`` when the leaf is not in ``leaves``, ``ValueError`` when it is already in
        the tree or when the policy picks a node that is not an admissible candidate.
        """
        if leaf.id not in self.leaves:
            raise KeyError(f"leaf {leaf.id} must be added to the leaves before it is inserted")
        if leaf.id in self.parent_of:
            raise ValueError(f"leaf {leaf.id} is already in the temporal tree")
        changed = {leaf.id}
        if self.last_leaf is None:
            self.height = SESSION_HEIGHT  # the first session: root, session, segment, leaf
            target = self.root
        elif time_key(leaf) < time_key(self.leaves[self.last_leaf]):
            return self._place_inside(leaf)
        else:
            target = self._target(leaf, changed)
        # A right chain of single-child branches keeps the new leaf at depth ``height``.
        node = target
        chain: list[Branch] = []
        for depth in range(target.depth + 1, self.height):
            link = Branch(id=self.new_id(), tree="temporal", kind="internal", parent=node.id, depth=depth)
            self.branches[link.id] = link
            node.children.append(link.id)
            chain.append(link)
            node = link
        node.children.append(leaf.id)
        self.parent_of[leaf.id] = node.id
        self.last_leaf = leaf.id
        entry = self._entry_of[leaf.id] = (leaf.timestamp, leaf.seq, leaf.id)
        if self._order is not None:
            self._order.append(entry)
        path = [*self.ancestors(target.id), target, *chain]
        for branch in reversed(path):
            self.refresh(branch)
        changed.update(b.id for b in path)
        if chain and len(target.children) > 1 and target.children[-2] in self.branches:
            # The period this one follows is closed, and a label tells a branch from its siblings:
            # its label is read again now that it has a right neighbour.
            closed = self.branches[target.children[-2]]
            self.refresh(closed)
            changed.add(closed.id)
        return changed

    def _target(self, leaf: Leaf, changed: set[str]) -> Branch:
        """The frontier node the new leaf's chain hangs from, levels grown first when it needs them."""
        frontier = self.frontier()
        segment, session = frontier[SEGMENT], frontier[SESSION]
        if session.leaf_count < MAX_SESSION and not self.calendar.session_break(
            self.leaves[self.last_leaf or ""], leaf, self.gap_seconds
        ):
            if len(segment.children) < self.min_segment:
                return segment
            candidates = [self._candidate(segment)]
            chosen = self.policy.choose(leaf, candidates)
            if chosen is None:
                return session  # a new segment of the same session
            if chosen not in {c.node_id for c in candidates}:
                raise ValueError(f"the policy chose {chosen!r}, which is not an admissible frontier node")
            return self.branches[chosen]
        change = self.calendar.coarsest_change(session.first_ts, leaf.timestamp)
        if change is None:
            return frontier[min(DAY, len(frontier) - 1)]  # the same day: its day node, or the root
        while self.height - 1 <= change:  # the root's children must be periods of that level at least
            changed |= self._grow()
        return self.frontier()[change + 1]

    def remove(self, leaf_id: str) -> tuple[set[str], set[str]]:
        """Take ``leaf_id`` out of the tree (DESIGN §1's forget); return ``(changed, removed)``.

        The rule differs from the semantic tree's, because every leaf must stay at depth ``height``:

        - A branch left with no child is deleted, and its parent checked in turn (a segment that
          loses its only leaf goes, and so does a session, a day … that held only it).
        - A branch left with one child is *kept*: dissolving it would lift its subtree one level
          and break uniform depth (and a day with one session is still a day).
        - The root is the exception: while it has a single child that is a period (a day or
          above), that level is collapsed: the child's children become the root's, every other
          branch moves one level up and ``height`` drops by one (the inverse of a new level,
          ``_grow``), so the levels stay those the memory's span asks for. An empty tree is the
          bare root at height 0.

        Spans stay contiguous and in order (a leaf is only ever taken out of a run), the frontier
        is again the path to the last remaining leaf, so later inserts continue from it, and
        ``last_leaf`` is that leaf (``None`` when the tree is empty). Every surviving ancestor is
        recomputed from its children, bottom-up, so no branch depends on the leaf any more.

        ``changed`` holds every branch recomputed or moved (depth or parent) and every leaf whose
        parent changed; ``removed`` the deleted branches. Neither holds ``leaf_id``; writing the rows
        in ``changed`` and deleting those in ``removed`` (and the leaf's own row) reproduces the tree.

        Contract with the caller, who owns ``leaves``: the leaf's record is not read here (it is
        found through ``parent_of``), so it may be dropped from ``leaves`` before or after this call;
        the memory drops it after removing it from both trees. Raises ``KeyError`` when the leaf is
        not in the tree (the tree is then unchanged).
        """
        changed, removed, _, _ = self._prune(leaf_id, dissolve=False)
        entry = self._entry_of.pop(leaf_id, None)
        if self._order is not None and entry is not None:
            del self._order[bisect.bisect_left(self._order, entry)]
        changed |= self._collapse_root(removed)
        if not self.root.children:
            self.height = 0
        lowest = self.frontier()[0]
        self.last_leaf = lowest.children[-1] if lowest.children else None
        return changed, removed

    def _collapse_root(self, removed: set[str]) -> set[str]:
        """While the root has a single child that is a period (a day or above), take that level
        away: its children become the root's and every branch moves one level up (the inverse of
        :meth:`_grow`). Returns the ids moved or recomputed; adds the deleted ones to ``removed``."""
        changed: set[str] = set()
        root = self.root
        while self.height > SESSION_HEIGHT and len(root.children) == 1 and root.children[0] in self.branches:
            only = self.branches.pop(root.children[0])
            removed.add(only.id)
            changed.discard(only.id)
            root.children = only.children
            for child in root.children:
                self.branches[child].parent = root.id
                changed.add(child)
            for branch in self.branches.values():
                if branch is not root:
                    branch.depth -= 1
                    changed.add(branch.id)
            self.height -= 1
            # Same leaves, regrouped: recompute so the root's figures come from its new children.
            self.refresh(root)
        return changed

    def adopt(self, branches: Sequence[Branch], shape: Shape | None = None) -> None:
        """Replace the whole tree with stored ``branches`` (the root among them); used when loading.
        ``shape``: the leaves' parents and the height, as the store's columns give them.

        Raises ``ValueError`` when a branch belongs to another tree.
        """
        foreign = [b.id for b in branches if b.tree != "temporal"]
        if foreign:
            raise ValueError(f"not temporal branches: {', '.join(foreign[:5])}")
        self._adopt({b.id: b for b in branches}, _new_root(self.calendar), shape)
        self._applied()

    def use(self, calendar: Calendar) -> None:
        """Count days by ``calendar`` from now on, and record its zone on the root (stored with the
        root's row at the next write). The branches are left as they are: a caller that changes
        the zone of a tree built in another builds it again (:meth:`rebuild`)."""
        self.calendar = calendar
        self.root.zone = calendar.name

    def rebuild(self, ordered: Sequence[Leaf]) -> None:
        """Build the tree anew from ``ordered`` (every leaf of ``leaves``, in ``seq`` order), as
        inserting them one by one does: for a store whose temporal tree was not kept."""
        self.root = _new_root(self.calendar)
        self.branches = {TEMPORAL_ROOT_ID: self.root}
        self.parent_of = {}
        self.height = 0
        self.last_leaf = None
        self._order, self._entry_of = None, {}
        for leaf in sorted(ordered, key=time_key):
            self.insert(leaf)
        self.dropped.clear()

    def _applied(self) -> None:
        # The last leaf is at the end of the frontier; the time order is made again when needed.
        lowest = self.frontier()[0]
        self.last_leaf = lowest.children[-1] if lowest.children else None
        self._order, self._entry_of = None, {}

    def in_time_order(self) -> bool:
        """Whether the leaves hang in time order, left to right (a tree that an older memtree-mcp
        built in arrival order may not), and each session under the period its start names."""
        keys = [time_key(self.leaves[node_id]) for node_id in self.walk() if node_id in self.parent_of]
        if any(later < earlier for earlier, later in itertools.pairwise(keys)):
            return False
        for branch in self.branches.values():
            level = self.level_of(branch.id)
            parent = self.branches.get(branch.parent or "")
            if level == SESSION and parent is not None and parent.parent is not None:
                above = self.level_of(parent.id)
                if self.calendar.period_key(above, branch.first_ts) != self.calendar.period_key(
                    above, parent.first_ts
                ):
                    return False
        return True

    # -- placing a memory that comes before the last one in time -----------------------------------

    def _place_inside(self, leaf: Leaf) -> set[str]:
        """Insert ``leaf``, earlier in time than the last leaf, where its time puts it (see the
        module); returns the changed ids and adds the deleted branches to ``dropped``."""
        order = self._ensure_order()
        entry = self._entry_of[leaf.id] = (leaf.timestamp, leaf.seq, leaf.id)
        at = bisect.bisect_left(order, entry)
        around = [order[i][2] for i in (at - 1, at) if 0 <= i < len(order)]
        order.insert(at, entry)
        # The levels its time may need, grown while the tree is whole; too many (it joined sessions
        # instead of starting one) are taken away again at the end.
        first_session = self.root
        while first_session.children and self.level_of(first_session.id) > SESSION:
            first_session = self.branches[first_session.children[0]]
        starts = (first_session.first_ts, self.frontier()[SESSION].first_ts)
        changes = [
            c
            for c in (self.calendar.coarsest_change(start, leaf.timestamp) for start in starts)
            if c is not None
        ]
        changed = {leaf.id}
        while changes and self.height - 1 <= max(changes):
            changed |= self._grow()
        olds = [self.branches[s] for s in dict.fromkeys(self._session_of(n) for n in around)]
        held = {s.id: set(self.leaves_under(s.id)) for s in olds}  # each old session's memories
        segment_of = {i: self.parent_of[i] for s in olds for i in held[s.id]}
        held |= {segment_id: set() for segment_id in segment_of.values()}
        for member_id, old_segment in segment_of.items():
            held[old_segment].add(member_id)
        run = sorted([leaf, *(self.leaves[i] for i in segment_of)], key=time_key)
        vacated = {s.parent for s in olds if s.parent is not None}
        spare = {c: self.branches[c] for s in olds for c in s.children}
        for session in olds:
            self.branches[session.parent or ""].children.remove(session.id)
        groups = self._sessions_in(run)
        reused = _by_membership(groups, olds, held)
        sessions_left = [s for s in olds if s not in reused]
        for group, kept in zip(groups, reused, strict=True):
            session = kept or self._new_branch(None, 0)
            _forget_summary_if_cut(session, held, group)
            session.children = []
            for segment_id, members in self._segments_in(group, segment_of, leaf.id):
                segment = (spare.pop(segment_id, None) if segment_id else None) or self._new_branch(None, 0)
                _forget_summary_if_cut(segment, held, members)
                segment.parent, segment.children = session.id, [member.id for member in members]
                for member in members:
                    if self.parent_of.get(member.id) != segment.id:
                        self.parent_of[member.id] = segment.id
                        changed.add(member.id)
                session.children.append(segment.id)
                self.refresh(segment)
            self.refresh(session)
            changed |= self._hang(session)
        for branch in [*sessions_left, *spare.values()]:
            del self.branches[branch.id]
            self.dropped.add(branch.id)
        changed |= self._prune_empty(vacated)
        changed |= self._collapse_root(self.dropped)
        changed -= self.dropped
        for branch in sorted((self.branches[c] for c in changed if c in self.branches), key=_deepest_first):
            self.refresh(branch)
        return changed

    def _ensure_order(self) -> list[Entry]:
        if self._order is None:
            held = (self.leaves[node_id] for node_id in self.parent_of)
            self._order = sorted((leaf.timestamp, leaf.seq, leaf.id) for leaf in held)
            self._entry_of = {entry[2]: entry for entry in self._order}
        return self._order

    def _session_of(self, leaf_id: str) -> str:
        return self.branches[self.parent_of[leaf_id]].parent or ""

    def _sessions_in(self, run: Sequence[Leaf]) -> list[list[Leaf]]:
        """``run`` (in time order) cut into sessions as arriving one by one would cut it."""
        groups = [[run[0]]]
        for previous, leaf in itertools.pairwise(run):
            if (
                self.calendar.session_break(previous, leaf, self.gap_seconds)
                or len(groups[-1]) >= MAX_SESSION
            ):
                groups.append([leaf])
            else:
                groups[-1].append(leaf)
        return groups

    @staticmethod
    def _segments_in(
        session: Sequence[Leaf], segment_of: Mapping[str, str], newcomer: str
    ) -> list[tuple[str | None, list[Leaf]]]:
        """A session's memories (in time order) in segments: the runs of memories that shared a
        segment keep it, and ``newcomer`` joins the segment of the memory before it in the session
        (of the one after it when it comes first). Each run comes with the id of the segment it
        reuses (None for a new one; a segment cut in two keeps its id for the first part). No policy
        is asked again: a session's segments were decided as its memories came, and a backdated
        memory is one more turn of the stretch it falls in."""
        ids = [segment_of.get(leaf.id) for leaf in session]
        at = next((i for i, leaf in enumerate(session) if leaf.id == newcomer), None)
        if at is not None and len(session) > 1:
            ids[at] = ids[at - 1] if at > 0 else ids[at + 1]
        runs: list[tuple[str | None, list[Leaf]]] = []
        used: set[str] = set()
        for segment_id, members in itertools.groupby(zip(ids, session, strict=True), key=lambda p: p[0]):
            reuse = segment_id if segment_id is not None and segment_id not in used else None
            if reuse is not None:
                used.add(reuse)
            runs.append((reuse, [member for _, member in members]))
        return runs

    def _hang(self, session: Branch) -> set[str]:
        """Hang a session (its segments and leaves in place) under the periods its start names,
        growing the levels it needs and making the periods it lacks, each among its siblings in
        time order; returns the ids of the branches on its path."""
        start = session.first_ts
        changed: set[str] = set()
        node = self.root
        for level in range(self.height - 2, SESSION, -1):
            key = self.calendar.period_key(level, start)
            found = next(
                (
                    c
                    for c in node.children
                    if self.calendar.period_key(level, self.branches[c].first_ts) == key
                ),
                None,
            )
            if found is None:
                period = self._new_branch(node, start)
                found = period.id
            node = self.branches[found]
            changed.add(node.id)
        session.parent, session.depth = node.id, node.depth + 1
        self._insert_child(node, session)
        for segment_id in session.children:
            self.branches[segment_id].depth = session.depth + 1
            changed.add(segment_id)
        changed |= {session.id, node.id}
        changed.update(b.id for b in self.ancestors(node.id))
        return changed

    def _new_branch(self, parent: Branch | None, first_ts: float) -> Branch:
        """A new empty branch, under ``parent`` among its children in time order (by ``first_ts``)
        when one is given."""
        branch = Branch(
            id=self.new_id(),
            tree="temporal",
            kind="internal",
            parent=parent.id if parent is not None else None,
            depth=parent.depth + 1 if parent is not None else 0,
            first_ts=first_ts,
            last_ts=first_ts,
        )
        self.branches[branch.id] = branch
        if parent is not None:
            self._insert_child(parent, branch)
        return branch

    def _insert_child(self, parent: Branch, child: Branch) -> None:
        """Put ``child`` among ``parent``'s children in time order: by its first memory's time key
        (time, then arrival), as the leaves are ordered. Two sessions can start at the same moment:
        a session past MAX_SESSION goes on in a new node, and the chunks of one long memory share
        their time (only their arrival tells them apart)."""
        keys = [self._start_key(c) for c in parent.children]
        parent.children.insert(bisect.bisect_right(keys, self._start_key(child.id)), child.id)

    def _start_key(self, node_id: str) -> tuple[float, int]:
        """The time key of the first memory under a node in time order (``first_seq`` is the
        earliest arrival under it, which need not be its first memory); an empty branch, which is
        being made for a session that starts at its ``first_ts``, comes before that session's
        memories."""
        first = self.ends(node_id)[0]
        leaf = self.leaves.get(first)
        return time_key(leaf) if leaf is not None else (self.branches[node_id].first_ts, -1)

    def _prune_empty(self, vacated: set[str]) -> set[str]:
        """Delete the branches among ``vacated`` (and above them) that lost every child, up to the
        root; returns the ids of the survivors on the way (to be recomputed)."""
        changed: set[str] = set()
        for node_id in vacated:
            node = self.branches.get(node_id)
            while node is not None and node.parent is not None:
                parent = self.branches[node.parent]
                if not node.children:
                    parent.children.remove(node.id)
                    del self.branches[node.id]
                    self.dropped.add(node.id)
                else:
                    changed.add(node.id)
                node = parent
            changed.add(self.root.id)
        return changed

    def refresh(self, branch: Branch) -> None:
        """Recompute a branch from its children, its label led by its period (the root's is not)."""
        refresh_branch(branch, self.leaves, self.branches, keep_vector=False)
        if branch.parent is not None and branch.leaf_count:
            level = self.height - 1 - branch.depth
            session = self.leaves[self.ends(branch.id)[0]].session if level == SESSION else None
            title = self.calendar.period_title(level, branch.first_ts, session)
            branch.label = f"{title}{PERIOD_SEPARATOR}{branch.label}" if branch.label else title

    def _deepest_leaf_depth(self) -> int:
        # Every leaf is at the same depth: the last one's, under the lowest frontier branch.
        lowest = self.frontier()[0]
        return lowest.depth + 1 if lowest.children else 0

    def _candidate(self, branch: Branch) -> Candidate:
        return Candidate(
            node_id=branch.id,
            depth=branch.depth,
            level=self.height - 1 - branch.depth,
            fan_out=len(branch.children),
            text=branch.text,
            label=branch.label,
            match_vector=self.match_vector_of(branch.id),
            leaf_count=branch.leaf_count,
            first_seq=branch.first_seq,
            last_seq=branch.last_seq,
            first_ts=branch.first_ts,
            last_ts=branch.last_ts,
        )

    def _grow(self) -> set[str]:
        """Add a period level: a new branch beneath the root takes all its children.

        Returns the ids whose rows changed: every branch (one level deeper, or new) and the root's
        former children, which moved under the new branch.
        """
        changed: set[str] = set()
        for branch in self.branches.values():
            if branch is not self.root:
                branch.depth += 1
                changed.add(branch.id)
        self.height += 1
        period = Branch(
            id=self.new_id(),
            tree="temporal",
            kind="internal",
            parent=TEMPORAL_ROOT_ID,
            depth=1,
            children=self.root.children,
        )
        self.branches[period.id] = period
        for child in period.children:
            self.branches[child].parent = period.id
            changed.add(child)
        self.root.children = [period.id]
        self.refresh(period)
        changed.add(period.id)
        return changed


def _by_membership(
    groups: Sequence[Sequence[Leaf]], olds: Sequence[Branch], held: Mapping[str, set[str]]
) -> list[Branch | None]:
    """For each session ``groups`` holds (in time order), the old session node it keeps, None for
    a new node: each old node goes to the group holding most of its memories (the earlier group on
    a tie), and a group holding none of an old node's gets a new one. By membership, not
    position: a memory backdated before a session is a session of its own, and must not take that
    session's node, its id and its summary."""
    ids = [{leaf.id for leaf in group} for group in groups]
    pairs = sorted(
        ((len(held[old.id] & ids[g]), g, k) for g in range(len(groups)) for k, old in enumerate(olds)),
        key=lambda pair: (-pair[0], pair[1], pair[2]),
    )
    kept: list[Branch | None] = [None] * len(groups)
    taken: set[int] = set()
    for shared, g, k in pairs:
        if shared and kept[g] is None and k not in taken:
            kept[g] = olds[k]
            taken.add(k)
    return kept


def _forget_summary_if_cut(branch: Branch, held: Mapping[str, set[str]], members: Sequence[Leaf]) -> None:
    """Clear the LLM summary of a node that keeps its id but lost some of the memories it held
    (a session or segment cut by a backdated memory): it may speak of them. A node that only
    gained memories keeps showing its summary until the next is written, as after any insert."""
    before = held.get(branch.id)
    if before and not before <= {leaf.id for leaf in members}:
        branch.summary, branch.summary_seq = "", -1


def _deepest_first(branch: Branch) -> int:
    return -branch.depth


def _new_root(calendar: Calendar) -> Branch:
    return Branch(id=TEMPORAL_ROOT_ID, tree="temporal", kind="root", parent=None, depth=0, zone=calendar.name)

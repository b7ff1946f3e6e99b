"""The temporal tree (SegTreeMem, seed 001 §4.1–4.2; HAT, seed 003 §3.1): sessions and periods.

Leaves hang in arrival order (by ``seq``) and every branch covers a contiguous run of them. The levels
are time scales (``core/calendar.py``), from the leaves up: topical **segments** of a session,
**sessions**, then **days**, **weeks**, **months** and **years**, each present only once the memory
spans more than one period of the level below. So a depth means a time scale, and ``navigate
left/right`` at a session walks the sessions in order, at a day the days, and so on.

Where a new leaf goes. Only the *rightmost frontier*, the path from the root down to the last leaf,
ends at the last leaf (seed 001 eq. 2), so a new leaf joins a node on it:

- It continues the current session (:func:`~memtree_mcp.core.calendar.session_break` says no break,
  and the session node holds fewer than ``MAX_SESSION`` memories; past that the session goes on in
  a new node, as if it were a new session of the same day):
  it joins the current segment while that segment holds fewer than ``min_segment`` memories (a
  short session stays one segment, however its subjects change) or while the compatibility policy
  (SegTreeMem's model C, judging content alone) says it continues it; otherwise it opens a new
  segment in the session.
- It starts a new session: the new session hangs under the current period that still holds it, the
  current day when it starts on the same day, else the current week, month or year, or the root.
  When it falls outside every period the tree has (the first session of a second day, week, month
  or year), the tree grows the missing levels first.

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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from memtree_mcp.core.calendar import (
    DAY,
    SEGMENT,
    SESSION,
    SESSION_GAP_SECONDS,
    coarsest_change,
    period_name,
    period_title,
    session_break,
)
from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.hierarchy import Hierarchy, Shape
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.representative import PERIOD_SEPARATOR, refresh_branch
from memtree_mcp.core.semantic import new_branch_id

TEMPORAL_ROOT_ID = "temporal-root"
# Measured on the LoCoMo dev split (docs/findings/recall-quality.md): 0.2 to 0.6 move propagation's R@10 by
# under two points; 0.4 is the best for it.
COSINE_THRESHOLD = 0.4
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


@dataclass(frozen=True, slots=True)
class Candidate:
    """The current segment, as a compatibility policy sees it when a leaf of the same session comes.

    ``level`` counts levels above the leaves (0: a segment, whose children are leaves).
    ``match_vector`` is the branch's centroid × cohesion, the mean of its leaves' vectors: its dot
    product with a unit vector is that vector's average cosine to the branch's leaves.
    """

    node_id: str
    depth: int
    level: int
    fan_out: int
    text: str
    label: str
    match_vector: Vector
    leaf_count: int
    first_seq: int
    last_seq: int
    first_ts: float
    last_ts: float


class CompatibilityPolicy(Protocol):
    """Whether a new leaf continues the current segment of its session (SegTreeMem's model C).

    ``candidates`` holds the segments the leaf may join, lowest first (today the current segment
    alone; a batch-LLM policy puts them in one prompt as MERGE_1 … MERGE_m). Return the chosen
    candidate's ``node_id``, or ``None`` for SPLIT (a new segment in the session). A policy only
    judges content: sessions, periods and the shortest segment are the tree's.
    """

    def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None: ...


class CosinePolicy:
    """Continue the lowest candidate whose average cosine to the leaf reaches ``threshold``.

    SegTreeMem's cosine model; with average linkage a segment drifting across subjects has a low
    mean cosine to anything new, so a change of subject in a long session starts a new segment.
    """

    def __init__(self, threshold: float = COSINE_THRESHOLD) -> None:
        self.threshold = threshold

    def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
        for candidate in candidates:
            if float(candidate.match_vector @ leaf.vector) >= self.threshold:
                return candidate.node_id
        return None


class FanOutPolicy:
    """HAT (seed 003 §3.1): a segment holds at most ``m`` memories; the next one opens another.

    Raises ``ValueError`` when ``m < 2`` (a fan-out of one would never hold two leaves together).
    """

    def __init__(self, m: int) -> None:
        if m < 2:
            raise ValueError(f"a fan-out must be at least 2, got {m}")
        self.m = m

    def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
        for candidate in candidates:
            if candidate.fan_out < self.m:
                return candidate.node_id
        return None


class TemporalTree(Hierarchy):
    """The temporal hierarchy over a shared mapping of leaves; mirrors ``SemanticTree``'s shape.

    ``leaves`` is owned by the caller (the memory), which adds a leaf there before inserting it here.
    Leaves must be inserted in increasing ``seq`` (arrival order). ``gap_seconds``: the silence that
    ends a session without an id; ``min_segment``: the memories a segment holds before the policy
    may end it (raises ``ValueError`` below 1).
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
    ) -> None:
        if min_segment < 1:
            raise ValueError(f"a segment holds at least one memory, got min_segment={min_segment}")
        self.leaves = leaves
        self.dimension = dimension
        self.policy = policy
        self.gap_seconds = gap_seconds
        self.min_segment = min_segment
        self.new_id = new_id
        self.root = _new_root()
        self.branches: dict[str, Branch] = {TEMPORAL_ROOT_ID: self.root}
        self.parent_of: dict[str, str] = {}
        self.height = 0
        self.last_leaf: str | None = None

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

    def candidates(self, leaf: Leaf) -> list[Candidate]:
        """The segments ``leaf`` may continue, as its policy will see them: the current segment when
        the leaf continues its session, else none."""
        if self.last_leaf is None or session_break(self.leaves[self.last_leaf], leaf, self.gap_seconds):
            return []
        return [self._candidate(self.frontier()[SEGMENT])]

    # -- writing ---------------------------------------------------------------------------------

    def insert(self, leaf: Leaf) -> set[str]:
        """Place ``leaf`` (already in ``leaves``) as the new last leaf; return every changed node id.

        The changed set holds the leaf, the new chain of branches above it, the branch it joined and
        that branch's ancestors; after a new level, every branch (their depths moved) and the
        children of the root that moved under the new level.

        Raises ``KeyError`` when the leaf is not in ``leaves``, ``ValueError`` when it is already in
        the tree, when its ``seq`` does not follow the last leaf's, or when the policy picks a node
        that is not an admissible candidate.
        """
        if leaf.id not in self.leaves:
            raise KeyError(f"leaf {leaf.id} must be added to the leaves before it is inserted")
        if leaf.id in self.parent_of:
            raise ValueError(f"leaf {leaf.id} is already in the temporal tree")
        if self.last_leaf is not None and leaf.seq <= self.leaves[self.last_leaf].seq:
            raise ValueError(
                f"leaf {leaf.id} has seq {leaf.seq}, not after the last leaf's "
                f"{self.leaves[self.last_leaf].seq}: the temporal tree takes leaves in arrival order"
            )
        changed = {leaf.id}
        if self.last_leaf is None:
            self.height = SESSION_HEIGHT  # the first session: root, session, segment, leaf
            target = self.root
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
        if session.leaf_count < MAX_SESSION and not session_break(
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
        change = coarsest_change(session.first_ts, leaf.timestamp)
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
        if not root.children:
            self.height = 0
        lowest = self.frontier()[0]
        self.last_leaf = lowest.children[-1] if lowest.children else None
        return changed, removed

    def adopt(self, branches: Sequence[Branch], shape: Shape | None = None) -> None:
        """Replace the whole tree with stored ``branches`` (the root among them); used when loading.
        ``shape``: the leaves' parents and the height, as the store's columns give them.

        Raises ``ValueError`` when a branch belongs to another tree.
        """
        foreign = [b.id for b in branches if b.tree != "temporal"]
        if foreign:
            raise ValueError(f"not temporal branches: {', '.join(foreign[:5])}")
        self._adopt({b.id: b for b in branches}, _new_root(), shape)
        self._applied()

    def rebuild(self, ordered: Sequence[Leaf]) -> None:
        """Build the tree anew from ``ordered`` (every leaf of ``leaves``, in ``seq`` order), as
        inserting them one by one does: for a store whose temporal tree was not kept."""
        self.root = _new_root()
        self.branches = {TEMPORAL_ROOT_ID: self.root}
        self.parent_of = {}
        self.height = 0
        self.last_leaf = None
        for leaf in ordered:
            self.insert(leaf)

    def _applied(self) -> None:
        # The last leaf is at the end of the frontier.
        lowest = self.frontier()[0]
        self.last_leaf = lowest.children[-1] if lowest.children else None

    def refresh(self, branch: Branch) -> None:
        """Recompute a branch from its children, its label led by its period (the root's is not)."""
        refresh_branch(branch, self.leaves, self.branches, keep_vector=False)
        if branch.parent is not None and branch.leaf_count:
            title = period_title(self.height - 1 - branch.depth, branch.first_ts)
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


def _new_root() -> Branch:
    return Branch(id=TEMPORAL_ROOT_ID, tree="temporal", kind="root", parent=None, depth=0)

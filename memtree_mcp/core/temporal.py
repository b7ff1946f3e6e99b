"""The temporal tree (SegTreeMem, seed 001 §4.1–4.2, App. A; HAT, seed 003 §3.1): segments of time.

Leaves hang in arrival order (by ``seq``) and every branch covers a contiguous run of them. A new
leaf may only join the *rightmost frontier*, the path from the root down to the last leaf, because
only the nodes on it end at the last leaf (seed 001 eq. 2). A compatibility policy looks at the
frontier's branches, lowest (the current segment) to highest (the root), and picks the one the leaf
continues, or none.

Uniform depth. Every leaf sits at depth ``height``. SegTreeMem states this "levelled-tree
invariant" (one frontier node per level) and keeps it in Algorithm 1: attaching to a frontier node
ℓ levels above the leaves grows a fresh right chain of single-child branches down to the leaf level;
HAT's M-ary layers need it too (a layer is a depth). It also makes a depth mean a time scale, which
``navigate left/right`` and period summaries rely on. The price is chains of single-child branches
when a leaf starts a segment high up; later leaves of the same segment fill them.

A new root. When the policy finds no compatible node, Algorithm 1 makes a new root whose children
are the old root and a new right chain down to the leaf. Here the root keeps its fixed id
``TEMPORAL_ROOT_ID`` so that stored references (rows, cursors, breadcrumbs) stay valid: a new
internal node is made *beneath* the root, takes over all of the root's children (it is the old root
under a new id), and the root's children become that node and the new chain. The two trees are the
same up to renaming the old root. Every other branch moves one level down (its ``depth`` changes),
so ``insert`` reports them all as changed; this happens when the whole frontier refuses a leaf,
rarely for a good policy (for HAT with fan-out M only when the tree holds a power of M leaves;
``CosinePolicy`` falls back on a fan-out for the same reason, see there).
While the root holds at most one leaf the policy is not consulted: the paper's one-leaf tree has no
admissible candidate, and its new root over the two leaves is this root holding both.

Session hints. A change of ``session`` from the previous leaf (both set) or a time gap above
``gap_seconds`` marks a boundary: the lowest frontier node (the current segment) is taken out of the
candidates, so the leaf starts a new segment higher up, or under a new root when nothing higher is
compatible. The tree applies this for every policy, so a policy only ever judges content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.hierarchy import Hierarchy, Shape
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.representative import refresh_branch
from memtree_mcp.core.semantic import new_branch_id

TEMPORAL_ROOT_ID = "temporal-root"
GAP_SECONDS = 6 * 3600.0
# Measured on the LoCoMo dev split (docs/benchmarks.md): 0.2 to 0.6 move propagation's R@10 by
# under two points; 0.4 is the best for it and makes segments of four to ten turns.
COSINE_THRESHOLD = 0.4
COSINE_FAN_OUT = 8


@dataclass(frozen=True, slots=True)
class Candidate:
    """One admissible frontier branch, as a compatibility policy sees it.

    ``level`` counts levels above the leaves: 0 is the current segment (its children are leaves).
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
    """Chooses where a new leaf continues the conversation (SegTreeMem's compatibility model C).

    ``candidates`` are all admissible frontier branches at once, lowest (the current segment) to
    highest (the root), so a batch-LLM policy can put them in one prompt as MERGE_1 … MERGE_m.
    Return the chosen candidate's ``node_id``, or ``None`` for SPLIT (a new root). A policy only
    judges content: session and time-gap boundaries are applied by the tree before it is asked.
    """

    def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None: ...


class CosinePolicy:
    """Attach to the lowest frontier branch whose average cosine to the leaf reaches ``threshold``.

    SegTreeMem's cosine model picks the most similar frontier node; taking the *lowest* compatible
    one instead keeps segments fine-grained and the update local: a leaf that still fits the current
    segment stays in it even when a broader ancestor happens to score higher.

    When nothing is compatible the literal rule (``fan_out=None``) makes a new root. With average
    linkage that is the common case, not the exception: a branch spanning several topics has a low
    mean cosine to anything, so every change of topic adds a level, and uniform depth then adds a
    chain as long as the tree is high (seed 001 App. C's cascade). Measured on 2,000 synthetic turns
    (8 topics, a change every ~20 turns): height 180–870 and 16k–380k branches for thresholds
    0.2–0.5. So by default an incompatible leaf opens a new segment under the lowest branch above
    the current segment with fewer than ``fan_out`` children (HAT's rule, applied to segments), and
    only a full frontier makes a new root: content decides where a segment ends, the fan-out bounds
    how segments are grouped. Compatible branches may exceed ``fan_out`` (a long topic stays one
    segment).

    Raises ``ValueError`` when ``fan_out`` is below 2.
    """

    def __init__(self, threshold: float = COSINE_THRESHOLD, *, fan_out: int | None = COSINE_FAN_OUT) -> None:
        if fan_out is not None and fan_out < 2:
            raise ValueError(f"a fan-out must be at least 2, got {fan_out}")
        self.threshold = threshold
        self.fan_out = fan_out

    def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
        for candidate in candidates:
            if float(candidate.match_vector @ leaf.vector) >= self.threshold:
                return candidate.node_id
        if self.fan_out is not None:
            for candidate in candidates:
                if candidate.level >= 1 and candidate.fan_out < self.fan_out:
                    return candidate.node_id
        return None


class FanOutPolicy:
    """HAT (seed 003 §3.1): attach to the lowest frontier branch with fewer than ``m`` children.

    With no session boundaries every branch off the frontier then holds exactly ``m`` children.
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


def is_boundary(previous: Leaf | None, leaf: Leaf, gap_seconds: float = GAP_SECONDS) -> bool:
    """Whether ``leaf`` should not join the current segment: a new session or a long silence."""
    if previous is None:
        return False
    if previous.session is not None and leaf.session is not None and previous.session != leaf.session:
        return True
    return leaf.timestamp - previous.timestamp > gap_seconds


class TemporalTree(Hierarchy):
    """The temporal hierarchy over a shared mapping of leaves; mirrors ``SemanticTree``'s shape.

    ``leaves`` is owned by the caller (the memory), which adds a leaf there before inserting it here.
    Leaves must be inserted in increasing ``seq`` (arrival order).
    """

    tree_name = "temporal"

    def __init__(
        self,
        leaves: Mapping[str, Leaf],
        dimension: int,
        *,
        policy: CompatibilityPolicy,
        gap_seconds: float = GAP_SECONDS,
        new_id: Callable[[], str] = new_branch_id,
    ) -> None:
        self.leaves = leaves
        self.dimension = dimension
        self.policy = policy
        self.gap_seconds = gap_seconds
        self._new_id = new_id
        self.root = _new_root()
        self.branches: dict[str, Branch] = {TEMPORAL_ROOT_ID: self.root}
        self.parent_of: dict[str, str] = {}
        self.height = 0
        self.last_leaf: str | None = None

    # -- reading ---------------------------------------------------------------------------------

    def frontier(self) -> list[Branch]:
        """The branches on the path from the root to the last leaf, lowest first, root last."""
        path = [self.root]
        node = self.root
        while node.children and node.children[-1] in self.branches:
            node = self.branches[node.children[-1]]
            path.append(node)
        path.reverse()
        return path

    def candidates(self, leaf: Leaf) -> list[Candidate]:
        """The frontier branches ``leaf`` may join, lowest first, as its policy will see them.

        On a session or time-gap boundary the lowest one (the current segment) is left out.
        """
        frontier = self.frontier()
        previous = self.leaves.get(self.last_leaf) if self.last_leaf is not None else None
        if is_boundary(previous, leaf, self.gap_seconds):
            frontier = frontier[1:]
        return [self._candidate(branch) for branch in frontier]

    # -- writing ---------------------------------------------------------------------------------

    def insert(self, leaf: Leaf) -> set[str]:
        """Place ``leaf`` (already in ``leaves``) as the new last leaf; return every changed node id.

        The changed set holds the leaf, the new chain of branches above it, the branch it joined and
        that branch's ancestors; after a new level, every branch (their depths moved) and any leaf
        that moved under the new node beneath the root.

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
        if len(self.root.children) <= 1:
            # No admissible candidate yet (seed 001 Alg. 1 with T_t a single leaf): both outcomes
            # give the root holding the two leaves.
            target = self.root
            self.height = 1
        else:
            candidates = self.candidates(leaf)
            chosen = self.policy.choose(leaf, candidates) if candidates else None
            if chosen is None:
                changed |= self._grow()
                target = self.root
            elif chosen in {c.node_id for c in candidates}:
                target = self.branches[chosen]
            else:
                raise ValueError(f"the policy chose {chosen!r}, which is not an admissible frontier node")
        # A right chain of single-child branches keeps the new leaf at depth ``height``.
        node = target
        chain: list[Branch] = []
        for depth in range(target.depth + 1, self.height):
            link = Branch(id=self._new_id(), tree="temporal", kind="internal", parent=node.id, depth=depth)
            self.branches[link.id] = link
            node.children.append(link.id)
            chain.append(link)
            node = link
        node.children.append(leaf.id)
        self.parent_of[leaf.id] = node.id
        self.last_leaf = leaf.id
        path = [*self.ancestors(target.id), target, *chain]
        for branch in reversed(path):
            refresh_branch(branch, self.leaves, self.branches, keep_vector=False)
        changed.update(b.id for b in path)
        if chain and len(target.children) > 1 and target.children[-2] in self.branches:
            # The segment this one follows is closed, and a label tells a branch from its siblings:
            # its label is read again now that it has a right neighbour (one branch a new segment).
            closed = self.branches[target.children[-2]]
            refresh_branch(closed, self.leaves, self.branches, keep_vector=False)
            changed.add(closed.id)
        return changed

    def remove(self, leaf_id: str) -> tuple[set[str], set[str]]:
        """Take ``leaf_id`` out of the tree (DESIGN §1's forget); return ``(changed, removed)``.

        The rule differs from the semantic tree's, because every leaf must stay at depth ``height``:

        - A branch left with no child is deleted, and its parent checked in turn (a segment that
          loses its only leaf goes, and so does a chain that held only it).
        - A branch left with one child is *kept*. Dissolving it would lift its subtree one level
          and break uniform depth; single-child branches are already what insertion makes (the
          right chain of a new segment), so they are a legal shape, and later leaves may fill them.
        - The root is the exception: while it has a single child that is a branch, that level is
          collapsed: the child's children become the root's, every other branch moves one level up
          and ``height`` drops by one (the inverse of a new level, ``_grow``). This keeps what
          insertion relies on: a root over two or more leaves splits them, and a root over one leaf
          holds it directly at height 1 (insertion treats a root with at most one child as the
          one-leaf tree). An empty tree is the bare root at height 0.

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
        while len(root.children) == 1 and root.children[0] in self.branches:
            only = self.branches.pop(root.children[0])
            removed.add(only.id)
            changed.discard(only.id)
            root.children = only.children
            for child in root.children:
                if child in self.branches:
                    self.branches[child].parent = root.id
                else:
                    self.parent_of[child] = root.id
                changed.add(child)
            for branch in self.branches.values():
                if branch is not root:
                    branch.depth -= 1
                    changed.add(branch.id)
            self.height -= 1
            # Same leaves, regrouped: recompute so the root's figures come from its new children.
            self._refresh(root)
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
        lowest = self.frontier()[0]
        self.last_leaf = lowest.children[-1] if lowest.children else None

    def _applied(self) -> None:
        # The last leaf is at the end of the frontier.
        lowest = self.frontier()[0]
        self.last_leaf = lowest.children[-1] if lowest.children else None

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
        """Add a level: a new branch beneath the root takes all its children (the old root, renamed).

        Returns the ids whose rows changed: every branch (one level deeper, or new) and the leaves
        that moved under the new branch.
        """
        changed: set[str] = set()
        for branch in self.branches.values():
            if branch is not self.root:
                branch.depth += 1
                changed.add(branch.id)
        old_root = Branch(
            id=self._new_id(),
            tree="temporal",
            kind="internal",
            parent=TEMPORAL_ROOT_ID,
            depth=1,
            children=self.root.children,
        )
        self.branches[old_root.id] = old_root
        for child in old_root.children:
            if child in self.branches:
                self.branches[child].parent = old_root.id
            else:
                self.parent_of[child] = old_root.id
            changed.add(child)
        self.root.children = [old_root.id]
        refresh_branch(old_root, self.leaves, self.branches, keep_vector=False)
        self.height += 1
        changed.add(old_root.id)
        return changed


def _new_root() -> Branch:
    return Branch(id=TEMPORAL_ROOT_ID, tree="temporal", kind="root", parent=None, depth=0)

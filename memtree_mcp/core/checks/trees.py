"""Invariant checks of the two trees, for ``memtree-mcp doctor`` and the tests (the whole memory's,
its leaves and indexes too, are :mod:`memtree_mcp.core.checks.memory`): what is wrong, never a raise.

Each function returns a list of :class:`Problem` (empty when all is well). The checks never trust
the structure they read: an unknown child, a missing parent, a node reached twice or a cycle is
reported and the walk carries on, so a corrupted memory yields a list of problems, not a traceback.

The rules:

- both trees: every leaf is reachable from the root exactly once and every branch is reachable;
  parents and children agree (``parent_of`` for leaves, ``Branch.parent`` for branches); depths
  follow the parents; counts, sequence spans and (centroid mode) representatives are those of the
  leaves below (``vector × cohesion`` is their mean); a branch with children has a text; the
  tracked ``height`` is the depth of the deepest leaf;
- semantic: internal nodes have at least two children, and (when asked) at most ``max_fan_out``;
- temporal: leaves in time order left to right (timestamp, then seq), all at depth ``height``,
  every branch covering a contiguous run of them, time spans, ``last_leaf``, the root's shape and an
  optional fan-out limit; each period holds sessions of its own period only, and no two siblings
  name the same period;
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from memtree_mcp.core.trees.hierarchy import Hierarchy
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.period_checks import period_faults
from memtree_mcp.core.trees.semantic import ROOT_ID, SemanticTree
from memtree_mcp.core.trees.temporal import SESSION_HEIGHT, TEMPORAL_ROOT_ID, TemporalTree, time_key

ProblemArea = Literal["semantic", "temporal", "index", "leaves"]

# A representative must match the mean of its leaves this closely (float32 sums over many leaves).
VECTOR_TOLERANCE = 1e-5


@dataclass(slots=True)
class Problem:
    """One broken invariant: the part it concerns, the node at fault (if one) and a readable sentence."""

    tree: ProblemArea
    node_id: str | None
    message: str

    def __str__(self) -> str:
        where = f" [{self.node_id}]" if self.node_id is not None else ""
        return f"{self.tree}{where}: {self.message}"


# -- shared shape of a tree ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Shape:
    """What the checks learn from one careful pass over a tree."""

    order: list[str]  # nodes reachable from the root, each once, depth first, children in order
    leaves: list[str]  # reachable leaves, left to right
    under: dict[str, list[str]]  # every branch's leaves, left to right (cycles cut)


def _shape(tree: Hierarchy, area: ProblemArea, problems: list[Problem]) -> _Shape:
    """Walk the tree without trusting it; report unknown children, cycles and nodes reached twice."""
    leaves, branches = tree.leaves, tree.branches
    if branches.get(tree.root.id) is not tree.root:
        problems.append(
            Problem(area, tree.root.id, f"the root {tree.root.id} is not among the tree's branches")
        )
    # Leaves under each branch, by an iterative post-order over all branches; an edge back to a
    # branch still on the stack is a cycle, cut (and reported) so every walk ends.
    under: dict[str, list[str]] = {}
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    cycle_edges: set[tuple[str, str]] = set()
    for start in [tree.root.id, *branches]:
        if start not in branches or start in state:
            continue
        state[start] = 1
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, i = stack[-1]
            children = branches[node].children
            if i < len(children):
                stack[-1] = (node, i + 1)
                child = children[i]
                if child in leaves:
                    continue
                if child not in branches:
                    problems.append(
                        Problem(
                            area,
                            node,
                            f"branch {node} has a child {child} that is neither a leaf nor a branch",
                        )
                    )
                    continue
                seen = state.get(child)
                if seen is None:
                    state[child] = 1
                    stack.append((child, 0))
                elif seen == 1:
                    cycle_edges.add((node, child))
                    problems.append(
                        Problem(area, node, f"cycle: branch {node} has its own ancestor {child} as a child")
                    )
            else:
                stack.pop()
                state[node] = 2
                collected: list[str] = []
                for child in children:
                    if child in leaves:
                        collected.append(child)
                    elif (node, child) not in cycle_edges:
                        collected.extend(under.get(child, ()))
                under[node] = collected
    # Reachability from the root, in preorder, each node expanded once.
    order: list[str] = []
    visited: set[str] = set()
    walk: list[tuple[str, str | None]] = [(tree.root.id, None)]
    while walk:
        node, parent = walk.pop()
        if node in visited:
            if parent is None or (parent, node) not in cycle_edges:
                problems.append(
                    Problem(area, node, f"node {node} is reached more than once (again from {parent})")
                )
            continue
        visited.add(node)
        order.append(node)
        branch = branches.get(node)
        if branch is not None:
            walk.extend(
                (child, node) for child in reversed(branch.children) if child in leaves or child in branches
            )
    reachable_leaves = [n for n in order if n in leaves]
    for leaf_id in leaves:
        if leaf_id not in visited:
            problems.append(Problem(area, leaf_id, f"leaf {leaf_id} is not reachable from the root"))
    for branch_id in branches:
        if branch_id not in visited:
            problems.append(Problem(area, branch_id, f"branch {branch_id} is not reachable from the root"))
    for leaf_id, parent_id in tree.parent_of.items():
        if leaf_id not in leaves:
            problems.append(Problem(area, leaf_id, f"parent_of names {leaf_id}, which is not a leaf"))
        elif parent_id not in branches:
            problems.append(Problem(area, leaf_id, f"leaf {leaf_id}'s parent {parent_id} does not exist"))
        elif leaf_id not in branches[parent_id].children:
            problems.append(
                Problem(area, leaf_id, f"leaf {leaf_id}'s parent {parent_id} does not list it as a child")
            )
    for leaf_id in leaves:
        if leaf_id not in tree.parent_of:
            problems.append(Problem(area, leaf_id, f"leaf {leaf_id} has no parent in parent_of"))
    return _Shape(order=order, leaves=reachable_leaves, under=under)


def _check_parent(tree: Hierarchy, branch: Branch, area: ProblemArea, problems: list[Problem]) -> None:
    """A non-root branch: its parent exists, lists it, and sits one level above it."""
    parent = tree.branches.get(branch.parent) if branch.parent is not None else None
    if parent is None:
        problems.append(
            Problem(area, branch.id, f"branch {branch.id}'s parent {branch.parent} does not exist")
        )
        return
    if branch.id not in parent.children:
        problems.append(
            Problem(area, branch.id, f"branch {branch.id}'s parent {parent.id} does not list it as a child")
        )
    if branch.depth != parent.depth + 1:
        problems.append(
            Problem(
                area,
                branch.id,
                f"branch {branch.id} has depth {branch.depth}, its parent {parent.id} {parent.depth}",
            )
        )


def _check_child_links(tree: Hierarchy, branch: Branch, area: ProblemArea, problems: list[Problem]) -> None:
    """Every child names this branch as its parent."""
    for child in branch.children:
        if child in tree.leaves:
            if tree.parent_of.get(child) != branch.id:
                problems.append(
                    Problem(
                        area,
                        child,
                        f"leaf {child} is a child of {branch.id} but has parent {tree.parent_of.get(child)}",
                    )
                )
        elif child in tree.branches and tree.branches[child].parent != branch.id:
            problems.append(
                Problem(
                    area,
                    child,
                    f"branch {child} is a child of {branch.id} but has parent {tree.branches[child].parent}",
                )
            )


def _mean(leaves: Mapping[str, Leaf], ids: Sequence[str]) -> np.ndarray | None:
    """The mean vector of these leaves, or None when there are none or their shapes differ."""
    vectors = [np.asarray(leaves[n].vector, dtype=np.float64) for n in ids]
    if not vectors or len({v.shape for v in vectors}) != 1 or vectors[0].ndim != 1:
        return None
    mean: np.ndarray = np.mean(vectors, axis=0)
    return mean


def _check_representative(
    tree: Hierarchy,
    branch: Branch,
    under: Sequence[str],
    area: ProblemArea,
    problems: list[Problem],
    tolerance: float,
) -> None:
    """``vector × cohesion`` is the mean of the branch's leaves and ``cohesion`` its norm."""
    if branch.vector is None:
        problems.append(Problem(area, branch.id, f"branch {branch.id} has children but no vector"))
        return
    mean = _mean(tree.leaves, under)
    if mean is None:
        if under:
            problems.append(
                Problem(area, branch.id, f"the leaves of branch {branch.id} have vectors of different shapes")
            )
        return
    vector = np.asarray(branch.vector, dtype=np.float64)
    if vector.shape != mean.shape:
        problems.append(
            Problem(
                area, branch.id, f"branch {branch.id}'s vector has shape {vector.shape}, not {mean.shape}"
            )
        )
        return
    norm = float(np.linalg.norm(mean))
    if not abs(branch.cohesion - norm) <= tolerance:
        problems.append(
            Problem(
                area,
                branch.id,
                f"branch {branch.id} has cohesion {branch.cohesion:.6g}, its leaves' mean norm {norm:.6g}",
            )
        )
    if not np.allclose(vector * branch.cohesion, mean, rtol=1e-7, atol=tolerance):
        error = float(np.max(np.abs(vector * branch.cohesion - mean)))
        problems.append(
            Problem(
                area,
                branch.id,
                f"branch {branch.id}'s vector × cohesion is off its leaves' mean by up to {error:.3g}",
            )
        )


def _leaf_depth(tree: Hierarchy, leaf_id: str) -> int | None:
    parent = tree.branches.get(tree.parent_of.get(leaf_id, ""))
    return None if parent is None else parent.depth + 1


# -- the trees ---------------------------------------------------------------------------------------


def _role_problems(branch: Branch, tree: str, is_root: bool, area: ProblemArea) -> list[Problem]:
    """A branch in the wrong tree, a root that is not shaped as one, an inner branch not marked internal."""
    found: list[Problem] = []
    if branch.tree != tree:
        found.append(Problem(area, branch.id, f"branch {branch.id} belongs to the {branch.tree} tree"))
    if is_root:
        if branch.parent is not None or branch.depth != 0 or branch.kind != "root":
            message = f"the root {branch.id} must have no parent, depth 0 and kind root"
            found.append(Problem(area, branch.id, message))
    elif branch.kind != "internal":
        found.append(Problem(area, branch.id, f"branch {branch.id} is a {branch.kind}, not internal"))
    return found


def semantic_problems(
    tree: SemanticTree, *, max_fan_out: int | None = None, tolerance: float = VECTOR_TOLERANCE
) -> list[Problem]:
    """Everything wrong with a semantic tree (empty when it is sound); ``max_fan_out`` bounds children.

    The bound is the tests' to ask for: a store written before fan-out was bounded has a root with
    hundreds of children and is sound (new leaves no longer widen it).
    """
    area: ProblemArea = "semantic"
    problems: list[Problem] = []
    shape = _shape(tree, area, problems)
    height = 0
    for branch in tree.branches.values():
        is_root = branch.id == ROOT_ID or branch is tree.root
        problems += _role_problems(branch, "semantic", is_root, area)
        if not is_root:
            if len(branch.children) < 2:
                problems.append(
                    Problem(
                        area,
                        branch.id,
                        f"internal node {branch.id} has {len(branch.children)} child(ren), not ≥ 2",
                    )
                )
            _check_parent(tree, branch, area, problems)
        _check_child_links(tree, branch, area, problems)
        if max_fan_out is not None and len(branch.children) > max_fan_out:
            problems.append(
                Problem(
                    area,
                    branch.id,
                    f"branch {branch.id} has {len(branch.children)} children, over {max_fan_out}",
                )
            )
        counts, firsts, lasts = [], [], []
        for child in branch.children:
            if child in tree.leaves:
                leaf = tree.leaves[child]
                height = max(height, branch.depth + 1)
                counts.append(1)
                firsts.append(leaf.seq)
                lasts.append(leaf.seq)
            elif child in tree.branches:
                sub = tree.branches[child]
                counts.append(sub.leaf_count)
                firsts.append(sub.first_seq)
                lasts.append(sub.last_seq)
        if not counts:
            continue
        if branch.leaf_count != sum(counts):
            problems.append(
                Problem(
                    area,
                    branch.id,
                    f"branch {branch.id} counts {branch.leaf_count} leaves, its children {sum(counts)}",
                )
            )
        if branch.first_seq != min(firsts) or branch.last_seq != max(lasts):
            problems.append(
                Problem(
                    area,
                    branch.id,
                    f"branch {branch.id} spans seqs {branch.first_seq}..{branch.last_seq}, "
                    f"its children {min(firsts)}..{max(lasts)}",
                )
            )
        if tree.vector_mode == "centroid":
            _check_representative(tree, branch, shape.under.get(branch.id, []), area, problems, tolerance)
        if not branch.text:
            problems.append(Problem(area, branch.id, f"branch {branch.id} has no representative text"))
    if tree.height != height:
        problems.append(
            Problem(area, None, f"the tracked height is {tree.height}, the deepest leaf is at depth {height}")
        )
    return problems


def temporal_problems(
    tree: TemporalTree, *, max_fan_out: int | None = None, tolerance: float = VECTOR_TOLERANCE
) -> list[Problem]:
    """Everything wrong with a temporal tree (empty when it is sound); ``max_fan_out`` bounds children.

    Contiguity is checked against the leaves' order left to right, which must be time order.
    """
    area: ProblemArea = "temporal"
    problems: list[Problem] = []
    shape = _shape(tree, area, problems)
    leaves = shape.leaves
    keys = [time_key(tree.leaves[n]) for n in leaves]
    for (a, ka), (b, kb) in itertools.pairwise(zip(leaves, keys, strict=True)):
        if kb <= ka:
            problems.append(
                Problem(
                    area,
                    b,
                    f"memory {b} ({tree.calendar.shown_time(kb[0])}) comes after memory {a} "
                    f"({tree.calendar.shown_time(ka[0])}), out of time order",
                )
            )
    rank = {n: i for i, n in enumerate(leaves)}
    expected_last = leaves[-1] if leaves else None
    if tree.last_leaf != expected_last:
        problems.append(
            Problem(
                area, tree.last_leaf, f"last_leaf is {tree.last_leaf}, the rightmost leaf is {expected_last}"
            )
        )
    root = tree.root
    if leaves and tree.height < SESSION_HEIGHT:
        problems.append(
            Problem(
                area, root.id, f"the height is {tree.height}: a memory needs a session and a segment above it"
            )
        )
    if tree.height > SESSION_HEIGHT and len(root.children) < 2:
        problems.append(
            Problem(
                area,
                root.id,
                f"the root has one child period at height {tree.height}: that level is not needed",
            )
        )
    if not leaves and (
        tree.height != 0 or tree.last_leaf is not None or set(tree.branches) != {TEMPORAL_ROOT_ID}
    ):
        problems.append(Problem(area, root.id, "an empty tree must be the bare root at height 0"))
    depths: list[int] = []
    for leaf_id in leaves:
        depth = _leaf_depth(tree, leaf_id)
        if depth is None:
            continue
        depths.append(depth)
        if depth != tree.height:
            problems.append(
                Problem(area, leaf_id, f"leaf {leaf_id} is at depth {depth}, not at the height {tree.height}")
            )
    frontier = {b.id for b in _safe_frontier(tree)}
    last = leaves[-1] if leaves else None
    for branch in tree.branches.values():
        is_root = branch.id == TEMPORAL_ROOT_ID or branch is root
        problems += _role_problems(branch, "temporal", is_root, area)
        if not is_root:
            if not branch.children:
                problems.append(Problem(area, branch.id, f"internal node {branch.id} has no child"))
            _check_parent(tree, branch, area, problems)
        if max_fan_out is not None and len(branch.children) > max_fan_out:
            problems.append(
                Problem(
                    area,
                    branch.id,
                    f"branch {branch.id} has {len(branch.children)} children, over {max_fan_out}",
                )
            )
        _check_child_links(tree, branch, area, problems)
        if not branch.children:
            if leaves and branch.id == root.id:
                problems.append(Problem(area, branch.id, "only the root of an empty tree has no child"))
            continue
        _check_temporal_branch(tree, branch, shape, rank, area, problems, tolerance)
        if branch.id not in frontier and last is not None and shape.under.get(branch.id, [None])[-1] == last:
            problems.append(
                Problem(area, branch.id, f"branch {branch.id} is off the frontier yet ends at the last leaf")
            )
    height = max(depths, default=0)
    if tree.height != height:
        problems.append(
            Problem(area, None, f"the tracked height is {tree.height}, the deepest leaf is at depth {height}")
        )
    if not problems:
        problems += [Problem("temporal", node, message) for node, message in period_faults(tree)]
    return problems


def _check_temporal_branch(
    tree: TemporalTree,
    branch: Branch,
    shape: _Shape,
    rank: Mapping[str, int],
    area: ProblemArea,
    problems: list[Problem],
    tolerance: float,
) -> None:
    counts: list[int] = []
    firsts: list[int] = []
    lasts: list[int] = []
    first_ts: list[float] = []
    last_ts: list[float] = []
    spans: list[tuple[int, int] | None] = []
    for child in branch.children:
        if child in tree.leaves:
            if branch.depth != tree.height - 1:
                problems.append(
                    Problem(area, branch.id, f"branch {branch.id} holds leaf {child} above the lowest level")
                )
            leaf = tree.leaves[child]
            counts.append(1)
            firsts.append(leaf.seq)
            lasts.append(leaf.seq)
            first_ts.append(leaf.timestamp)
            last_ts.append(leaf.timestamp)
            spans.append((rank[child], rank[child]) if child in rank else None)
        elif child in tree.branches:
            if branch.depth >= tree.height - 1:
                problems.append(
                    Problem(area, branch.id, f"branch {branch.id} holds branch {child} at the lowest level")
                )
            sub = tree.branches[child]
            counts.append(sub.leaf_count)
            firsts.append(sub.first_seq)
            lasts.append(sub.last_seq)
            first_ts.append(sub.first_ts)
            last_ts.append(sub.last_ts)
            below = shape.under.get(child, [])
            ranked = [rank[n] for n in below if n in rank]
            spans.append((ranked[0], ranked[-1]) if ranked and len(ranked) == len(below) else None)
    if not counts:
        return
    under = shape.under.get(branch.id, [])
    if all(s is not None for s in spans) and spans:
        known = [s for s in spans if s is not None]
        for (_, end), (start, _) in itertools.pairwise(known):
            if start != end + 1:
                problems.append(
                    Problem(
                        area,
                        branch.id,
                        f"the children of {branch.id} do not cover consecutive spans in order",
                    )
                )
                break
        if [rank.get(n) for n in under] != list(range(known[0][0], known[-1][1] + 1)):
            problems.append(
                Problem(area, branch.id, f"branch {branch.id} does not cover a contiguous run of leaves")
            )
    if not (branch.leaf_count == sum(counts) == len(under)):
        problems.append(
            Problem(
                area,
                branch.id,
                f"branch {branch.id} counts {branch.leaf_count} leaves, its children {sum(counts)}, "
                f"and {len(under)} are below it",
            )
        )
    if under:
        seqs = [tree.leaves[n].seq for n in under]
        if not (branch.first_seq == min(firsts) == min(seqs) and branch.last_seq == max(lasts) == max(seqs)):
            problems.append(
                Problem(
                    area,
                    branch.id,
                    f"branch {branch.id} spans seqs {branch.first_seq}..{branch.last_seq}, "
                    f"its leaves {min(seqs)}..{max(seqs)}",
                )
            )
    if branch.first_ts != min(first_ts) or branch.last_ts != max(last_ts):
        problems.append(
            Problem(
                area,
                branch.id,
                f"branch {branch.id} spans times {branch.first_ts}..{branch.last_ts}, "
                f"its children {min(first_ts)}..{max(last_ts)}",
            )
        )
    _check_representative(tree, branch, under, area, problems, tolerance)
    if not branch.text:
        problems.append(Problem(area, branch.id, f"branch {branch.id} has no representative text"))


def _safe_frontier(tree: TemporalTree) -> list[Branch]:
    """The rightmost path from the root, stopping at a missing branch or a cycle."""
    path = [tree.root]
    seen = {tree.root.id}
    node = tree.root
    while node.children and node.children[-1] in tree.branches and node.children[-1] not in seen:
        node = tree.branches[node.children[-1]]
        seen.add(node.id)
        path.append(node)
    return path

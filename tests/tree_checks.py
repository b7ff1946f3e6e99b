"""Invariants of the semantic and temporal trees, shared by the property tests and the store tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from memtree_mcp.core.checks.memory import semantic_problems, temporal_problems
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.representative import refresh_branch
from memtree_mcp.core.trees.semantic import SemanticTree
from memtree_mcp.core.trees.temporal import TEMPORAL_ROOT_ID, TemporalTree


def assert_semantic_invariants(tree: SemanticTree) -> None:
    """Every leaf once, depths and parents consistent, ≥ 2 and ≤ ``tree.max_fan_out`` children,
    counts/spans/vectors from children.

    The rules live in ``memtree_mcp.core.checks.memory.semantic_problems``.
    """
    problems = semantic_problems(tree, max_fan_out=tree.max_fan_out)
    assert not problems, problems


def subtree_leaves(tree: SemanticTree, node_id: str) -> list[str]:
    if node_id in tree.leaves:
        return [node_id]
    return [leaf for child in tree.branches[node_id].children for leaf in subtree_leaves(tree, child)]


def unit(values: Sequence[float], dim: int = 8) -> np.ndarray:
    """``values`` as a unit float32 vector; a zero vector becomes the first axis."""
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    if norm < 1e-6:
        return np.eye(dim, dtype=np.float32)[0]
    return (vector / norm).astype(np.float32)


class Close:
    """A branch's vector or cohesion, equal to another within float32 rounding: stores keep no
    branch vector, and one derived on load sums the leaves in another order than the insertions did."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = np.asarray(value, dtype=np.float64)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Close)
            and self.value.shape == other.value.shape
            and bool(np.allclose(self.value, other.value, rtol=0.0, atol=1e-5))
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Close({self.value.round(6).tolist()!r})"


def memory_state(memory: Memory, *, temporal_ids: bool = True) -> dict[str, object]:
    """A comparable picture of a memory: every node of both trees, vectors as lists.

    Without ``temporal_ids`` the temporal tree is pictured by its shape alone (:func:`temporal_shape`),
    for a memory whose temporal tree was built anew from its leaves (a store read from an older
    schema), which gives its branches new ids.
    """
    if not temporal_ids:
        state = {
            key: value[:9] + value[10:] if isinstance(value, tuple) and key in memory.leaves else value
            for key, value in memory_state(memory).items()
            if key not in memory.temporal.branches
        }
        state["__temporal__"] = temporal_shape(memory)
        return state
    state: dict[str, object] = {}
    for leaf in memory.leaves.values():
        state[leaf.id] = (
            leaf.text,
            leaf.vector.tolist(),
            leaf.seq,
            leaf.timestamp,
            leaf.role,
            leaf.tags,
            leaf.session,
            leaf.content_hash,
            memory.semantic.parent_of[leaf.id],
            memory.temporal.parent_of[leaf.id],
            leaf.supersedes,
            memory.links.superseded_by(leaf.id),
        )
    for branch in [*memory.semantic.branches.values(), *memory.temporal.branches.values()]:
        state[branch.id] = (
            branch.tree,
            branch.kind,
            branch.parent,
            branch.depth,
            list(branch.children),
            branch.text,
            branch.label,
            None if branch.vector is None else Close(branch.vector),
            Close(branch.cohesion),
            branch.leaf_count,
            branch.first_seq,
            branch.last_seq,
            branch.first_ts,
            branch.last_ts,
        )
    state["__heights__"] = (memory.semantic.height, memory.temporal.height)
    return state


def temporal_shape(memory: Memory) -> object:
    """The temporal tree as nested (label, leaf count, children) tuples, memories as their ids."""
    tree = memory.temporal

    def picture(node_id: str) -> object:
        branch = tree.branches.get(node_id)
        if branch is None:
            return node_id
        return (branch.label, branch.leaf_count, tuple(picture(c) for c in branch.children))

    return picture(tree.root.id), tree.height


def assert_temporal_invariants(tree: TemporalTree, *, max_fan_out: int | None = None) -> None:
    """Every leaf once and in time order, uniform leaf depth, contiguous spans, exact representatives,
    sessions under their own periods. The rules live in
    ``memtree_mcp.core.checks.trees.temporal_problems``.
    """
    problems = temporal_problems(tree, max_fan_out=max_fan_out)
    assert not problems, problems


def temporal_subtree_leaves(tree: TemporalTree, node_id: str) -> list[str]:
    """The leaves under ``node_id``, left to right."""
    if node_id in tree.leaves:
        return [node_id]
    return [
        leaf for child in tree.branches[node_id].children for leaf in temporal_subtree_leaves(tree, child)
    ]


def branch_state(b: Branch) -> tuple[object, ...]:
    """Everything a branch records, comparable with ``==`` (vectors as lists)."""
    return (
        b.tree,
        b.kind,
        b.parent,
        b.depth,
        list(b.children),
        b.text,
        b.label,
        None if b.vector is None else b.vector.tolist(),
        b.cohesion,
        b.leaf_count,
        b.first_seq,
        b.last_seq,
        b.first_ts,
        b.last_ts,
    )


def grown_memory(
    seed: int,
    inserts: int,
    removals: int,
    make_leaf: Callable[[np.random.Generator, int, np.ndarray], Leaf],
    *,
    centres: int,
    dimension: int,
    after_each: Callable[[Memory], None] | None = None,
) -> Memory:
    """A memory after ``inserts`` leaves from ``make_leaf(rng, i, centres)`` and ``removals``
    random removals, interleaved at random; ``after_each`` is called after every step."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(centres, dimension))
    memory = Memory(dimension)
    plan = ["add"] * inserts + ["remove"] * removals
    rng.shuffle(plan)
    i = 0
    for op in plan:
        if op == "add" or not memory.leaves:
            memory.add_leaf(make_leaf(rng, i, points))
            i += 1
        else:
            memory.remove_leaf(str(rng.choice(sorted(memory.leaves))))
        if after_each is not None:
            after_each(memory)
    return memory


def binary_temporal_memory(texts: Sequence[str] | None = None, dim: int = 8) -> Memory:
    """Eight memories t0…t7 under a binary temporal tree (HAT with M = 2): root > 2 > 4 > 8.

    Built by hand: these tests walk an agent through a tree of known shape, and the calendar's tree
    of one short session is a single segment.
    """
    source = Memory(dim)
    for i in range(8):
        text = texts[i] if texts is not None else f"turn {i} about topic {i}"
        vector = unit(list(np.eye(dim, dtype=np.float32)[i]))
        source.add_leaf(Leaf(id=f"t{i}", text=text, vector=vector, seq=i, timestamp=1000.0 + i, session="s"))
    leaves = {leaf.id: leaf for leaf in source.leaves.values()}
    branches: dict[str, Branch] = {}

    def grow(node_id: str, kind: str, parent: str | None, depth: int, children: list[str]) -> None:
        branch = Branch(id=node_id, tree="temporal", kind=kind, parent=parent, depth=depth, children=children)  # type: ignore[arg-type]
        branches[node_id] = branch

    grow(TEMPORAL_ROOT_ID, "root", None, 0, ["h0", "h1"])
    for h in range(2):
        grow(f"h{h}", "internal", TEMPORAL_ROOT_ID, 1, [f"q{2 * h}", f"q{2 * h + 1}"])
        for q in (2 * h, 2 * h + 1):
            grow(f"q{q}", "internal", f"h{h}", 2, [f"t{2 * q}", f"t{2 * q + 1}"])
    for branch in sorted(branches.values(), key=lambda b: -b.depth):
        refresh_branch(branch, leaves, branches, keep_vector=False)
    memory = Memory(dim)
    memory.load(list(leaves.values()), [*source.semantic.branches.values(), *branches.values()])
    return memory

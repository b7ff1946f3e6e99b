"""The invariant checker finds what is wrong with a memory, names the node at fault and never raises."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memtree_mcp.core.checks.memory import Problem, memory_problems, semantic_problems, temporal_problems
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.segmenting import FanOutPolicy
from memtree_mcp.core.trees.semantic import ROOT_ID

DIM = 8
TOPICS = ["coffee beans and espresso", "hiking trails in the alps", "python type checking", "jazz records"]


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def healthy_memory(n: int = 40, seed: int = 7) -> Memory:
    """Both trees over clustered leaves, three sessions, one long silence; content hashes set."""
    rng = np.random.default_rng(seed)
    centres = np.eye(DIM, dtype=np.float32)[: len(TOPICS)]
    memory = Memory(DIM)
    for i in range(n):
        topic = (i // 5) % len(TOPICS)
        vector = unit(centres[topic] + rng.normal(0, 0.25, size=DIM).astype(np.float32))
        memory.add_leaf(
            Leaf(
                id=f"m{i:04d}",
                text=f"{TOPICS[topic]} note {i}",
                vector=vector,
                seq=i,
                timestamp=1000.0 + 60 * i + (30_000 if i >= 30 else 0),
                session=f"s{i // 12}",
                content_hash=f"h{i}",
            )
        )
    return memory


def internal(memory: Memory, tree: str) -> list[Branch]:
    chosen = memory.semantic if tree == "semantic" else memory.temporal
    return sorted((b for b in chosen.branches.values() if b.kind == "internal"), key=lambda b: b.id)


def named(problems: list[Problem], node_id: str, tree: str | None = None) -> list[Problem]:
    """The problems that name ``node_id`` (as their node and in their message)."""
    return [
        p
        for p in problems
        if p.node_id == node_id and node_id in p.message and (tree is None or p.tree == tree)
    ]


def test_a_healthy_memory_has_no_problem() -> None:
    memory = healthy_memory()
    assert len(internal(memory, "semantic")) >= 3 and len(internal(memory, "temporal")) >= 3
    assert memory_problems(memory, DIM) == []
    assert memory_problems(memory) == []


def test_an_empty_memory_and_one_after_removals_have_no_problem() -> None:
    assert memory_problems(Memory(DIM), DIM) == []
    memory = healthy_memory(25)
    for leaf_id in ["m0003", "m0010", "m0011", "m0024", "m0000"]:
        memory.remove_leaf(leaf_id)
        assert memory_problems(memory, DIM) == []


def test_the_fan_out_limit_is_optional() -> None:
    memory = Memory(DIM, temporal_policy=FanOutPolicy(3))
    memory.temporal.min_segment = 1  # HAT's rule alone: three memories a segment
    for i in range(10):
        memory.add_leaf(
            Leaf(id=f"m{i}", text=f"note {i}", vector=unit(np.ones(DIM)), seq=i, timestamp=float(i))
        )
    assert temporal_problems(memory.temporal, max_fan_out=4) == []
    problems = temporal_problems(memory.temporal, max_fan_out=2)
    assert problems and all("over 2" in p.message for p in problems)


def test_a_wrong_dimension_is_reported() -> None:
    memory = healthy_memory(10)
    problems = memory_problems(memory, DIM + 1)
    assert named(problems, "m0000", "leaves")


def test_a_child_taken_out_of_its_branch_is_reported() -> None:
    memory = healthy_memory()
    branch = internal(memory, "semantic")[0]
    child = branch.children.pop()
    problems = memory_problems(memory, DIM)
    assert named(problems, child, "semantic"), problems  # unreachable, its parent does not list it
    assert named(problems, branch.id, "semantic"), problems  # count and mean no longer match


def test_a_wrong_leaf_count_is_reported() -> None:
    memory = healthy_memory()
    for tree in ("semantic", "temporal"):
        branch = internal(memory, tree)[1]
        branch.leaf_count += 1
        problems = memory_problems(memory, DIM)
        found = named(problems, branch.id, tree)
        assert found and any("counts" in p.message for p in found), problems


def test_a_broken_branch_vector_is_reported_in_the_tree_and_the_index() -> None:
    memory = healthy_memory()
    for tree in ("semantic", "temporal"):
        branch = internal(memory, tree)[0]
        assert branch.vector is not None
        branch.vector = unit(branch.vector + np.float32(0.5))
        problems = memory_problems(memory, DIM)
        assert any("mean" in p.message for p in named(problems, branch.id, tree)), problems
        if tree == "semantic":  # temporal branches are not recall's hits: not in the branch index
            assert any("branch index" in p.message for p in named(problems, branch.id, "index")), problems


def test_a_leaf_missing_from_the_leaf_index_is_reported() -> None:
    memory = healthy_memory()
    memory.leaf_index.remove("m0007")
    problems = memory_problems(memory, DIM)
    assert [p.message for p in problems] == ["leaf m0007 is missing from the leaf index"]
    assert problems[0].tree == "index" and problems[0].node_id == "m0007"


def test_foreign_ids_in_the_indexes_are_reported() -> None:
    memory = healthy_memory()
    memory.lexical.add("ghost", "a document nobody stored")
    memory.branch_index.upsert(ROOT_ID, np.ones(DIM, dtype=np.float32))
    memory.leaf_index.upsert("phantom", np.ones(DIM, dtype=np.float32))
    problems = memory_problems(memory, DIM)
    assert named(problems, "ghost", "index") and "lexical" in named(problems, "ghost")[0].message
    assert named(problems, ROOT_ID, "index") and named(problems, "phantom", "index")
    assert len(problems) == 3, problems


def test_a_missing_branch_in_the_branch_index_is_reported() -> None:
    memory = healthy_memory()
    branch = internal(memory, "semantic")[0]
    memory.branch_index.remove(branch.id)
    problems = memory_problems(memory, DIM)
    assert [(p.tree, p.node_id) for p in problems] == [("index", branch.id)]


def test_bad_leaves_are_reported() -> None:
    memory = healthy_memory()
    memory.leaves["m0001"].vector = memory.leaves["m0001"].vector * np.float32(2)
    memory.leaves["m0002"].content_hash = "h3"
    memory.leaves["m0004"].seq = 5
    problems = memory_problems(memory, DIM)
    assert any("norm" in p.message for p in named(problems, "m0001", "leaves")), problems
    assert any("content hash" in p.message for p in problems if p.tree == "leaves"), problems
    assert any("seq 5" in p.message for p in problems if p.tree == "leaves"), problems


@pytest.mark.parametrize("tree_name", ["semantic", "temporal"])
def test_a_cycle_is_reported_without_raising(tree_name: str) -> None:
    memory = healthy_memory()
    tree = memory.semantic if tree_name == "semantic" else memory.temporal
    # A deepest branch points back at one of its ancestors.
    deepest = max(internal(memory, tree_name), key=lambda b: b.depth)
    ancestor = tree.ancestors(deepest.id)[1] if deepest.depth >= 2 else tree.root
    deepest.children.append(ancestor.id)
    problems = memory_problems(memory, DIM)
    assert any("cycle" in p.message for p in named(problems, deepest.id, tree_name)), problems
    checker: Callable[..., list[Problem]] = (
        semantic_problems if tree_name == "semantic" else temporal_problems
    )
    assert checker(tree)


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda m: m.semantic.root.children.append("nowhere"), id="unknown child"),
        pytest.param(lambda m: setattr(internal(m, "semantic")[0], "parent", "gone"), id="missing parent"),
        pytest.param(lambda m: m.temporal.parent_of.pop("m0003"), id="leaf without parent"),
        pytest.param(lambda m: m.temporal.branches.pop(internal(m, "temporal")[0].id), id="lost branch"),
        pytest.param(lambda m: m.semantic.branches.pop(ROOT_ID), id="root out of its branches"),
        pytest.param(lambda m: m.temporal.root.children.clear(), id="bare temporal root"),
        pytest.param(lambda m: m.leaves.pop("m0005"), id="leaf gone from the leaves only"),
        pytest.param(lambda m: setattr(m.leaves["m0006"], "vector", np.ones(3)), id="short vector"),
        pytest.param(lambda m: setattr(m.leaves["m0006"], "vector", np.full(DIM, np.nan)), id="nan vector"),
        pytest.param(lambda m: setattr(internal(m, "semantic")[0], "vector", None), id="no vector"),
        pytest.param(lambda m: setattr(m.temporal, "last_leaf", "m0000"), id="last leaf"),
        pytest.param(lambda m: setattr(m.semantic, "height", 99), id="height"),
    ],
)
def test_corruptions_are_reported_without_raising(corrupt: Callable[[Memory], object]) -> None:
    memory = healthy_memory()
    corrupt(memory)
    problems = memory_problems(memory, DIM)
    assert problems
    assert all(
        isinstance(p, Problem) and p.message and p.tree in {"semantic", "temporal", "index", "leaves"}
        for p in problems
    )
    assert all(str(p) for p in problems)


def test_the_temporal_root_rules() -> None:
    memory = healthy_memory(2)
    segment = memory.temporal.frontier()[0]
    segment.children.reverse()  # leaves no longer in time order
    problems = temporal_problems(memory.temporal)
    assert any("out of time order" in p.message for p in problems), problems
    memory = healthy_memory(40)  # three sessions on one day: the root's children are sessions
    tree = memory.temporal
    assert tree.height == 3 and temporal_problems(tree) == []
    tree.height = 2
    assert any("needs a session" in p.message for p in temporal_problems(tree))


def test_a_root_missing_from_its_branches_is_named() -> None:
    memory = healthy_memory()
    memory.semantic.branches.pop(ROOT_ID)
    problems = semantic_problems(memory.semantic)
    assert any("not among" in p.message for p in named(problems, ROOT_ID)), problems

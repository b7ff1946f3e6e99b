"""The cursor over both trees and the memory agent that walks it (HAT seed 003 §3.2)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.core.trees.segmenting import FanOutPolicy
from memtree_mcp.core.walking.agent import EmbeddingPolicy, ScoredNode, parse_action, run_agent
from memtree_mcp.core.walking.navigation import CursorView, NavigationError, move, view
from tests.tree_checks import binary_temporal_memory

DIM = 16
E = np.eye(DIM, dtype=np.float32)
TOPICS = {0: "garden", 8: "travel"}
SUBTOPICS = {1: "roses", 2: "tomatoes"}
DETAILS = {3: "watering", 4: "pruning", 5: "harvest"}


def unit(vector: np.ndarray) -> Vector:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def clustered_memory() -> Memory:
    """12 memories in 2 topics × 2 subtopics × 3 details; the temporal tree is binary (HAT, M = 2)."""
    memory = Memory(DIM, temporal_policy=FanOutPolicy(2))
    i = 0
    for top, topic in TOPICS.items():
        for sub, subtopic in SUBTOPICS.items():
            for detail, word in DETAILS.items():
                vector = unit(3 * E[top] + 1.5 * E[top + sub] + 0.6 * E[top + detail])
                text = f"Memory {i} about {topic} {subtopic} {word}. " + "More words follow here. " * 8
                memory.add_leaf(
                    Leaf(id=f"m{i:02d}", text=text, vector=vector, seq=i, timestamp=1000.0 + 60 * i)
                )
                i += 1
    return memory


def leaves_of(memory: Memory, node: CursorView) -> set[str]:
    tree = memory.semantic if node.tree == "semantic" else memory.temporal
    return set(tree.leaves_under(node.id))


def deepest_leaf(memory: Memory) -> str:
    return max(sorted(memory.leaves), key=memory.semantic.depth_of)


# -- views -------------------------------------------------------------------------------------


def test_the_root_view_previews_its_children_and_only_allows_going_down() -> None:
    memory = clustered_memory()
    root = view(memory, memory.semantic.root.id, "semantic")
    assert root.kind == "root" and root.depth == 0 and root.breadcrumb == []
    assert (root.has_up, root.has_left, root.has_right, root.has_down) == (False, False, False, True)
    assert root.leaf_count == 12 and (root.first_seq, root.last_seq) == (0, 11)
    assert [c.id for c in root.children] == memory.semantic.root.children
    assert sum(c.leaf_count for c in root.children) == 12
    assert all(0 < len(c.line) <= 100 and "\n" not in c.line for c in root.children)


def test_node_id_none_means_the_root_of_the_chosen_tree() -> None:
    memory = clustered_memory()
    assert move(memory, None, "stay", "semantic").id == memory.semantic.root.id
    assert move(memory, None, "stay", "temporal").id == memory.temporal.root.id


def test_a_leaf_view_has_its_gist_span_breadcrumb_and_no_children() -> None:
    memory = clustered_memory()
    leaf_id = deepest_leaf(memory)
    node = view(memory, leaf_id, "semantic")
    leaf = memory.leaves[leaf_id]
    assert node.kind == "leaf" and node.children == [] and not node.has_down and node.has_up
    assert node.label and len(node.label) <= 61 and leaf.text.startswith(node.label.rstrip("…"))
    assert (node.first_seq, node.last_seq, node.first_ts) == (leaf.seq, leaf.seq, leaf.timestamp)
    # Each ancestor's label once, top down: a deep chain of alike branches does not repeat it.
    expected = list(dict.fromkeys(b.label for b in memory.semantic.ancestors(leaf_id)[1:]))
    assert node.breadcrumb == expected and len(set(node.breadcrumb)) == len(node.breadcrumb)


def test_a_leaf_id_is_valid_in_both_trees_but_a_branch_only_in_its_own() -> None:
    memory = clustered_memory()
    assert view(memory, "m03", "temporal").tree == "temporal"
    assert view(memory, "m03", "semantic").tree == "semantic"
    semantic_branch = memory.semantic.root.children[0]
    with pytest.raises(NavigationError, match=r"branch of the semantic tree.*tree='semantic'"):
        view(memory, semantic_branch, "temporal")
    with pytest.raises(NavigationError, match="no node 'nope'"):
        view(memory, "nope", "semantic")
    with pytest.raises(NavigationError, match="unknown tree 'spatial'"):
        view(memory, "m03", "spatial")
    with pytest.raises(NavigationError, match=r"unknown move 'sideways'.*stay"):
        move(memory, None, "sideways", "semantic")


def test_a_view_is_plain_data_ready_for_json() -> None:
    memory = clustered_memory()
    data = move(memory, None, "down", "temporal", query_vector=E[0]).as_dict()
    encoded = json.loads(json.dumps(data))
    assert encoded["children"][0]["id"] and encoded["parent"]["kind"] == "root"
    assert isinstance(encoded["score"], float)


# -- moves -------------------------------------------------------------------------------------


def test_going_up_from_the_root_is_refused_and_up_returns_to_the_parent() -> None:
    memory = clustered_memory()
    with pytest.raises(NavigationError, match="already at the root of the semantic tree"):
        move(memory, None, "up", "semantic")
    with pytest.raises(NavigationError, match="already at the root of the temporal tree"):
        move(memory, None, "up", "temporal")
    leaf_id = deepest_leaf(memory)
    parent = move(memory, leaf_id, "up", "semantic")
    assert parent.id == memory.semantic.parent_of[leaf_id]
    assert leaf_id in [c.id for c in parent.children]
    assert move(memory, leaf_id, "reset", "semantic").id == memory.semantic.root.id


def test_down_takes_the_indexed_child_else_the_best_for_the_query_and_refuses_to_guess() -> None:
    memory = clustered_memory()
    children = memory.semantic.root.children
    assert move(memory, None, "down", "semantic", index=1).id == children[1]
    with pytest.raises(NavigationError, match=r"has 2 children: give index \(0 to 1\) or a query"):
        move(memory, None, "down", "semantic")
    travel = move(memory, None, "down", "semantic", query_vector=unit(E[8] + E[9]))
    assert all(leaf.startswith("m") and int(leaf[1:]) >= 6 for leaf in leaves_of(memory, travel))
    assert travel.score is not None and travel.score > 0.5
    with pytest.raises(NavigationError, match=r"no child 7: .* has 2 children, numbered 0 to 1"):
        move(memory, None, "down", "semantic", index=7)


def test_down_from_a_leaf_is_refused() -> None:
    memory = clustered_memory()
    with pytest.raises(NavigationError, match=r"is a leaf .* has no children"):
        move(memory, "m00", "down", "semantic")
    with pytest.raises(NavigationError, match="is a leaf"):
        move(memory, "m00", "down", "temporal")


def test_semantic_left_and_right_stay_among_siblings() -> None:
    memory = clustered_memory()
    first, second = memory.semantic.root.children
    right = move(memory, first, "right", "semantic")
    assert right.id == second and right.has_left and not right.has_right
    assert move(memory, second, "left", "semantic").id == first
    with pytest.raises(NavigationError, match="first node among its siblings in the semantic tree"):
        move(memory, first, "left", "semantic")
    with pytest.raises(NavigationError, match="last node among its siblings"):
        move(memory, second, "right", "semantic")
    # The last child of the first topic has no right sibling even though the other topic follows.
    last_of_first = memory.semantic.branches[first].children[-1]
    assert not view(memory, last_of_first, "semantic").has_right


def test_temporal_left_and_right_cross_parents_at_the_same_depth() -> None:
    memory = binary_temporal_memory(dim=DIM)
    tree = memory.temporal
    assert tree.height == 3 and all(tree.depth_of(f"t{i}") == 3 for i in range(8))
    # A leaf: the next memory in time, though it hangs under another grandparent.
    assert tree.ancestors("t3")[1].id != tree.ancestors("t4")[1].id
    nxt = move(memory, "t3", "right", "temporal")
    assert nxt.id == "t4" and nxt.depth == 3
    assert move(memory, "t4", "left", "temporal").id == "t3"
    # A segment: the next segment of the same depth, under another parent.
    segment = move(memory, "t3", "up", "temporal")
    assert (segment.first_seq, segment.last_seq, segment.depth) == (2, 3, 2)
    following = move(memory, segment.id, "right", "temporal")
    assert (following.first_seq, following.last_seq, following.depth) == (4, 5, 2)
    assert memory.temporal.branches[following.id].parent != memory.temporal.branches[segment.id].parent
    assert following.left is not None and following.left.id == segment.id
    with pytest.raises(NavigationError, match="t0 is the first node at its depth in the temporal tree"):
        move(memory, "t0", "left", "temporal")
    with pytest.raises(NavigationError, match="last node at its depth"):
        move(memory, "t7", "right", "temporal")
    with pytest.raises(NavigationError, match="root has no left neighbour"):
        move(memory, None, "left", "temporal")


def test_switch_keeps_a_leaf_and_takes_a_branch_to_the_smallest_branch_holding_its_leaves() -> None:
    memory = clustered_memory()
    leaf = move(memory, "m04", "switch", "semantic")
    assert (leaf.id, leaf.tree, leaf.kind) == ("m04", "temporal", "leaf")
    assert move(memory, "m04", "switch", "temporal").tree == "semantic"
    assert move(memory, None, "switch", "semantic").id == memory.temporal.root.id
    for source, target in (("semantic", "temporal"), ("temporal", "semantic")):
        hierarchy = memory.semantic if source == "semantic" else memory.temporal
        other = memory.temporal if source == "semantic" else memory.semantic
        for branch in hierarchy.branches.values():
            if branch.kind == "root":
                continue
            landed = move(memory, branch.id, "switch", source)
            assert landed.tree == target and landed.kind != "leaf"
            wanted = set(hierarchy.leaves_under(branch.id))
            assert wanted <= leaves_of(memory, landed)
            # Smallest: no child of the landing branch holds them all.
            for child in other.branches[landed.id].children:
                assert not wanted <= set(other.leaves_under(child))


def test_switch_lands_on_the_matching_segment_in_the_temporal_tree() -> None:
    memory = clustered_memory()
    # The three "garden roses" memories m00–m02 were said one after another.
    parent = memory.semantic.ancestors("m00")
    holder = next(
        b for b in reversed(parent) if {"m00", "m01", "m02"} <= set(memory.semantic.leaves_under(b.id))
    )
    landed = move(memory, holder.id, "switch", "semantic")
    assert landed.first_seq == 0 and landed.leaf_count >= len(memory.semantic.leaves_under(holder.id))


def test_an_empty_memory_has_a_root_to_view_and_nowhere_to_go() -> None:
    memory = Memory(DIM)
    root = view(memory, memory.semantic.root.id, "semantic")
    assert root.children == [] and not (root.has_up or root.has_down or root.has_left or root.has_right)
    with pytest.raises(NavigationError, match="empty branch"):
        move(memory, None, "down", "temporal")
    run = run_agent(memory, E[0], "semantic", EmbeddingPolicy())
    assert run.outcome == "insufficient" and run.moves == [] and run.context[0].id == root.id


# -- the agent ---------------------------------------------------------------------------------


class Scripted:
    """Answers from a script, recording what it was shown."""

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.seen: list[tuple[str, list[ScoredNode], dict[str, ScoredNode], list[str]]] = []

    def decide(
        self,
        query_vector: Vector,
        current: CursorView,
        children_scores: Sequence[ScoredNode],
        neighbour_scores: Mapping[str, ScoredNode],
        history: Sequence[str],
    ) -> str:
        self.seen.append((current.id, list(children_scores), dict(neighbour_scores), list(history)))
        return self.answers.pop(0) if self.answers else "Sufficient"


def test_a_scripted_agent_makes_its_moves_and_sees_texts_and_scores() -> None:
    memory = binary_temporal_memory(dim=DIM)
    policy = Scripted(["Down 0", "down 1", "Right.", "up", "LEFT", "reset", "down 1", "sufficient"])
    run = run_agent(memory, E[5], "temporal", policy)
    assert run.moves == ["down 0", "down 1", "right", "up", "left", "reset", "down 1"]
    assert run.outcome == "sufficient" and run.sufficient and run.notes == []
    assert run.node.id == memory.temporal.root.children[1] and run.path[0] == memory.temporal.root.id
    assert len(run.path) == len(run.moves) + 1
    first_id, children, neighbours, history = policy.seen[0]
    assert first_id == memory.temporal.root.id and neighbours == {} and history == []
    assert [c.id for c in children] == memory.temporal.root.children and all(c.text for c in children)
    _, _, neighbours, history = policy.seen[3]
    assert set(neighbours) == {"up", "left", "right"} and history == ["down 0", "down 1", "right"]
    # The settled node's text comes first, then its best leaves for the query.
    assert run.context[0].id == run.node.id and run.context[1].id == "t5"
    assert run.context_texts[1] == "turn 5 about topic 5" and len(run.context) <= 6


def test_garbage_from_a_policy_falls_back_to_a_safe_action() -> None:
    memory = clustered_memory()
    target = deepest_leaf(memory)
    query = memory.leaves[target].vector
    policy = Scripted(["up", "¯\\_(ツ)_/¯", "down 99", "left" * 3, "jump", "", "explode", "no", "?", "??"])
    run = run_agent(memory, query, "semantic", policy, max_steps=20)
    assert len(run.notes) >= 3 and "impossible at the root" in run.notes[0]
    assert "is not an action" in run.notes[1]
    assert any("does not exist" in note for note in run.notes)
    # Each fallback descends to the best child, and at a leaf it declares the context sufficient.
    assert run.node.kind == "leaf" and run.outcome == "sufficient"
    assert all(m.startswith("down ") for m in run.moves)


def test_the_embedding_policy_finds_a_deep_leaf_and_declares_it_sufficient() -> None:
    memory = clustered_memory()
    target = deepest_leaf(memory)
    assert memory.semantic.depth_of(target) >= 3
    query = unit(memory.leaves[target].vector + 0.05 * E[15])
    run = run_agent(memory, query, "semantic", EmbeddingPolicy(threshold=0.3))
    assert run.node.id == target and run.sufficient and run.outcome == "sufficient"
    assert len(run.moves) == memory.semantic.depth_of(target)
    assert all(m.startswith("down ") for m in run.moves)
    assert run.context[0].id == target and run.context_texts[0] == memory.leaves[target].text
    assert 1 < len(run.context) <= 5
    scores = [item.score for item in run.context[1:]]
    assert scores == sorted(scores, reverse=True)


def test_the_embedding_policy_finds_the_leaf_in_the_temporal_tree_too() -> None:
    memory = binary_temporal_memory(dim=DIM)
    run = run_agent(memory, unit(E[6] + 0.1 * E[7]), "temporal", EmbeddingPolicy())
    assert run.node.id == "t6" and run.sufficient and run.moves[0] == "down 1"


def test_the_embedding_policy_tries_a_neighbour_once_when_no_child_improves() -> None:
    memory = binary_temporal_memory(dim=DIM)
    policy = EmbeddingPolicy()
    at_t2 = view(memory, "t2", "temporal", E[3])
    left = ScoredNode("t1", "leaf", 1, 0.0, "turn 1", "turn 1")
    right = ScoredNode("t3", "leaf", 1, 1.0, "turn 3", "turn 3")
    assert policy.decide(E[3], at_t2, [], {"left": left, "right": right}, ["down 0"]) == "right"
    assert policy.decide(E[3], at_t2, [], {"left": left, "right": right}, ["right"]) == "insufficient"


def test_the_embedding_policy_says_insufficient_when_nothing_matches() -> None:
    memory = clustered_memory()
    run = run_agent(memory, E[15], "semantic", EmbeddingPolicy(threshold=0.3))
    assert run.outcome == "insufficient" and not run.sufficient and run.context


def test_max_steps_bounds_the_run() -> None:
    memory = clustered_memory()
    policy = Scripted(["down 0", "reset"] * 20)
    run = run_agent(memory, E[0], "semantic", policy, max_steps=5)
    assert len(policy.seen) == 5 and len(run.moves) == 5
    assert run.outcome == "max_steps" and not run.sufficient and run.context
    idle = run_agent(memory, E[0], "semantic", Scripted([]), max_steps=0)
    assert idle.moves == [] and idle.outcome == "max_steps" and idle.node.kind == "root"
    with pytest.raises(ValueError, match="max_steps"):
        run_agent(memory, E[0], "semantic", policy, max_steps=-1)


@pytest.mark.parametrize(
    ("answer", "parsed"),
    [
        ("Down 2", ("down", 2)),
        ("down(3)", ("down", 3)),
        ("down: 0.", ("down", 0)),
        ("down", ("down", None)),
        ("  Sufficient. ", ("sufficient", None)),
        ("INSUFFICIENT", ("insufficient", None)),
        ("reset", ("reset", None)),
        ("left 2", None),
        ("go down", None),
        ("", None),
    ],
)
def test_actions_are_parsed_leniently_but_never_guessed(
    answer: str, parsed: tuple[str, int | None] | None
) -> None:
    assert parse_action(answer) == parsed

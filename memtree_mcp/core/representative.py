"""A branch's count, span and representative, recomputed from its children; shared by both trees.

Both hierarchies keep the same record on every branch (seed 001 §4.1 annotations, DESIGN §1): leaf
count, first/last sequence number and timestamp, and a representative ρ made of an extractive text,
a label and a vector. Recomputing all of it *from the children* (never incrementally from the old
value) is what lets a deletion leave no trace in any summary, so the two trees share one function
instead of two copies that could drift apart.

The vector is the centroid of the branch's leaves (the direction of their mean unit vector) and
``cohesion`` is that mean's norm, so ``vector · cohesion`` is the mean itself: a child branch counts
with its leaf count, which makes the mean exact however the leaves are grouped.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.extractive import Wording, label_for, summarize_children
from memtree_mcp.core.model import Branch, Leaf


def refresh_branch(
    branch: Branch,
    leaves: Mapping[str, Leaf],
    branches: Mapping[str, Branch],
    *,
    keep_vector: bool,
) -> None:
    """Recompute ``branch``'s leaf count, span, cohesion, text, label and vector from its children.

    Children must already be up to date (refresh bottom-up). With ``keep_vector`` the branch's
    current vector is left alone (the semantic tree's summary mode sets it from an embedding of the
    new text afterwards); everything else, cohesion included, is still recomputed. A branch without
    children gets a zero count, empty text and label and no vector.

    Raises ``KeyError`` when a child is neither a leaf nor a branch, or is a branch without a vector
    (a child refreshed out of order).
    """
    counts: list[int] = []
    vectors: list[Vector] = []
    means: list[Vector] = []
    firsts: list[tuple[int, float]] = []
    lasts: list[tuple[int, float]] = []
    texts: list[str] = []
    labelled: list[Wording] = []  # what the label reads of each child: a child branch's label too
    for child in branch.children:
        leaf = leaves.get(child)
        if leaf is not None:
            counts.append(1)
            vectors.append(leaf.vector)
            means.append(leaf.vector)
            firsts.append((leaf.seq, leaf.timestamp))
            lasts.append((leaf.seq, leaf.timestamp))
            texts.append(leaf.text)
            labelled.append(leaf.text)
        else:
            sub = branches[child]
            if sub.vector is None:
                raise KeyError(f"branch {child} has no vector yet")
            counts.append(sub.leaf_count)
            vectors.append(sub.vector)
            means.append(sub.vector * sub.cohesion)
            firsts.append((sub.first_seq, sub.first_ts))
            lasts.append((sub.last_seq, sub.last_ts))
            texts.append(sub.text)
            labelled.append((sub.label, sub.text))
    if not counts:
        branch.leaf_count, branch.text, branch.label, branch.vector = 0, "", "", None
        return
    branch.leaf_count = sum(counts)
    branch.first_seq = min(f[0] for f in firsts)
    branch.last_seq = max(last[0] for last in lasts)
    branch.first_ts = min(f[1] for f in firsts)
    branch.last_ts = max(last[1] for last in lasts)
    stacked = np.stack(vectors)
    mean = ((np.asarray(counts, dtype=np.float32) @ np.stack(means)) / branch.leaf_count).astype(np.float32)
    branch.cohesion = float(np.linalg.norm(mean))
    centroid = normalised(mean)
    # Children most central to the branch speak first in its text and label.
    order = np.argsort(-(stacked @ centroid), kind="stable")
    branch.text = summarize_children([texts[i] for i in order])
    branch.label = label_for([labelled[i] for i in order], siblings_words(branch, leaves, branches))
    if not keep_vector:
        branch.vector = centroid


def siblings_words(
    branch: Branch, leaves: Mapping[str, Leaf], branches: Mapping[str, Branch]
) -> list[Wording]:
    """What ``branch``'s label is told apart from: its siblings' texts (a branch's label and text)."""
    parent = branches.get(branch.parent) if branch.parent is not None else None
    if parent is None:
        return []
    found: list[Wording] = []
    for child in parent.children:
        if child == branch.id:
            continue
        leaf = leaves.get(child)
        if leaf is not None:
            found.append(leaf.text)
        else:
            sibling = branches.get(child)
            if sibling is not None:
                found.append((sibling.label, sibling.text))
    return found


def normalised(vector: Vector) -> Vector:
    """``vector`` scaled to unit length as float32; a zero vector is returned unchanged."""
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        return vector.astype(np.float32)
    return (vector / norm).astype(np.float32)

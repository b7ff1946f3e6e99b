"""A branch's count, span and representative, recomputed from its children; shared by both trees.

Both hierarchies keep the same record on every branch (seed 001 §4.1 annotations, DESIGN §1): leaf
count, first/last sequence number and timestamp, and a representative ρ made of an extractive text,
a label and a vector. Recomputing all of it *from the children* (never incrementally from the old
value) is what lets a deletion leave no trace in any summary, so the two trees share one function
instead of two copies that could drift apart.

The vector is the centroid of the branch's leaves (the direction of their mean unit vector) and
``cohesion`` is that mean's norm, so ``vector · cohesion`` is the mean itself: a child branch counts
with its leaf count, which makes the mean exact however the leaves are grouped.

Since it is a function of the leaves, a store keeps no branch vector: :func:`derive_vectors` gives
a loaded tree's branches theirs in a few vectorised passes (one per level), and
:func:`derive_vector` a changed branch its own from its children, as :func:`refresh_branch` does.
The two agree to float32 rounding (the sums are taken in another order), which no decision of
either tree depends on beyond ties that rounding already breaks at random.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.trees.extractive import Wording, label_for, summarize_children
from memtree_mcp.core.trees.model import Branch, Leaf

# Between a temporal branch's period and its subject words in its label.
PERIOD_SEPARATOR = " · "


def refresh_branch(
    branch: Branch,
    leaves: Mapping[str, Leaf],
    branches: Mapping[str, Branch],
    *,
    keep_vector: bool,
    stale: Collection[str] = (),
) -> None:
    """Recompute ``branch``'s leaf count, span, cohesion, text, label and vector from its children.

    Memories in ``stale`` (ids of memories a later one updates; the semantic tree passes them) are
    left out of the text and the label, as they are out of the siblings' words: a branch's text
    and label then name the current value ("5433"), not the one it replaced ("5432"). Its count,
    span and vector still hold every child (a leaf stays where it is filed); a branch whose
    children are all stale keeps them all, so no branch goes without a text.

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
            labelled.append((topic_of(sub), sub.text))
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
    if stale:
        current = [i for i in order if branch.children[i] not in stale]
        order = np.asarray(current) if current else order
    branch.text = summarize_children([texts[i] for i in order])
    branch.label = label_for([labelled[i] for i in order], siblings_words(branch, leaves, branches, stale))
    if not keep_vector:
        branch.vector = centroid


def siblings_words(
    branch: Branch, leaves: Mapping[str, Leaf], branches: Mapping[str, Branch], stale: Collection[str] = ()
) -> list[Wording]:
    """What ``branch``'s label is told apart from: its siblings' texts (a branch's label and text),
    memories in ``stale`` left out."""
    parent = branches.get(branch.parent) if branch.parent is not None else None
    if parent is None:
        return []
    found: list[Wording] = []
    for child in parent.children:
        if child == branch.id:
            continue
        leaf = leaves.get(child)
        if leaf is not None:
            if child not in stale:
                found.append(leaf.text)
        else:
            sibling = branches.get(child)
            if sibling is not None:
                found.append((topic_of(sibling), sibling.text))
    return found


def topic_of(branch: Branch) -> str:
    """What a branch's label says of its subject: a temporal branch's label without the period it
    starts with ("2026-03-11 · SAML, onboarding" reads "SAML, onboarding")."""
    if branch.tree == "temporal":
        return branch.label.split(PERIOD_SEPARATOR, 1)[-1]
    return branch.label


def normalised(vector: Vector) -> Vector:
    """``vector`` scaled to unit length as float32; a zero vector is returned unchanged."""
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        return vector.astype(np.float32)
    return (vector / norm).astype(np.float32)


def derive_vector(branch: Branch, leaves: Mapping[str, Leaf], branches: Mapping[str, Branch]) -> None:
    """Set ``branch``'s vector and cohesion from its children, as :func:`refresh_branch` does (the
    same arithmetic), leaving the rest of its record alone; no vector for a branch without children.

    Raises ``KeyError`` when a child is neither a leaf nor a branch, or is a branch without a vector.
    """
    counts: list[int] = []
    means: list[Vector] = []
    for child in branch.children:
        leaf = leaves.get(child)
        if leaf is not None:
            counts.append(1)
            means.append(leaf.vector)
        else:
            sub = branches[child]
            if sub.vector is None:
                raise KeyError(f"branch {child} has no vector yet")
            counts.append(sub.leaf_count)
            means.append(sub.vector * sub.cohesion)
    if not counts:
        branch.vector = None
        return
    total = sum(counts)
    mean = ((np.asarray(counts, dtype=np.float32) @ np.stack(means)) / total).astype(np.float32)
    branch.cohesion = float(np.linalg.norm(mean))
    branch.vector = normalised(mean)


def derive_vectors(branches: Sequence[Branch], leaf_row: Mapping[str, int], leaf_vectors: np.ndarray) -> None:
    """Set the vector and cohesion of every branch of one tree (``branches``, all of it) from its
    leaves, whose vectors are the rows ``leaf_row`` names of ``leaf_vectors``.

    Vectorised: each branch's sum of leaf vectors is gathered from its leaf children, then from
    its branch children one level at a time, deepest first (so a child's sum is complete before its
    parent reads it), with one numpy gather-and-add per child rank. The vectors are rows of one
    matrix (views), not one array per branch. A branch whose children name neither a leaf of
    ``leaf_row`` nor a branch of ``branches`` gets what the others give (``doctor`` tells).
    """
    if not branches:
        return
    dimension = leaf_vectors.shape[1]
    position = {b.id: i for i, b in enumerate(branches)}
    depth = np.fromiter((b.depth for b in branches), dtype=np.int64, count=len(branches))
    leaf_edges: list[tuple[int, int, int]] = []  # (parent, leaf row, rank among its leaf children)
    branch_edges: list[tuple[int, int, int]] = []  # (parent, child, rank among its branch children)
    for i, branch in enumerate(branches):
        leaf_rank = branch_rank = 0
        for child in branch.children:
            row = leaf_row.get(child)
            if row is not None:
                leaf_edges.append((i, row, leaf_rank))
                leaf_rank += 1
            elif (j := position.get(child)) is not None:
                branch_edges.append((i, j, branch_rank))
                branch_rank += 1
    sums = np.zeros((len(branches), dimension), dtype=np.float32)
    counts = np.zeros(len(branches), dtype=np.int64)
    if leaf_edges:
        edges = np.asarray(leaf_edges, dtype=np.int64)
        np.add.at(counts, edges[:, 0], 1)
        for rank in range(int(edges[:, 2].max()) + 1):
            part = edges[edges[:, 2] == rank]
            sums[part[:, 0]] += leaf_vectors[part[:, 1]]
    if branch_edges:
        edges = np.asarray(branch_edges, dtype=np.int64)
        parent_depth = depth[edges[:, 0]]
        for level in sorted(set(parent_depth.tolist()), reverse=True):
            at_level = edges[parent_depth == level]
            for rank in range(int(at_level[:, 2].max()) + 1):
                part = at_level[at_level[:, 2] == rank]
                sums[part[:, 0]] += sums[part[:, 1]]
                counts[part[:, 0]] += counts[part[:, 1]]
    means = sums
    means /= np.maximum(counts, 1)[:, None].astype(np.float32)
    norms = np.linalg.norm(means, axis=1)
    means /= np.where(norms > 0, norms, 1.0)[:, None].astype(np.float32)
    for i, branch in enumerate(branches):
        if counts[i]:
            branch.vector = means[i]
            branch.cohesion = float(norms[i])
        else:
            branch.vector = None

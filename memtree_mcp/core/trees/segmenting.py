"""Where a session splits into topical segments (SegTreeMem's compatibility model C, seed 001 §4.2):
the policies the temporal tree (``core/trees/temporal.py``) asks whether a new memory continues the
current segment of its session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.trees.model import Leaf

# Measured on the LoCoMo dev split (docs/findings/recall-quality.md): 0.2 to 0.6 move propagation's R@10 by
# under two points; 0.4 is the best for it.
COSINE_THRESHOLD = 0.4


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

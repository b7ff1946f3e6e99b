"""The nodes of a memory: leaves (one atomic memory each) and the branches trees build over them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.names import TreeName

BranchKind = Literal["root", "internal"]


@dataclass(slots=True)
class Leaf:
    """One atomic memory: a turn, a note or one chunk of a longer text. Stored once, shared by the trees."""

    id: str
    text: str
    vector: Vector
    seq: int
    timestamp: float
    role: str = "user"
    tags: tuple[str, ...] = ()
    session: str | None = None
    content_hash: str = ""
    created: float = 0.0
    # The ids of earlier memories this one updates, as whoever stored it said (``remember``'s
    # ``supersedes``): an explicit link, which wins over the rule of ``core/updates.py``.
    supersedes: tuple[str, ...] = ()
    # Awaiting an LLM's judgement of which older memories this one updates (``service/judging.py``): set
    # when it is remembered with an LLM configured, cleared by the commit of the verdicts.
    judging: bool = False


@dataclass(slots=True)
class Branch:
    """A root or internal node of one tree, with its representative (text, label, vector) and its span."""

    id: str
    tree: TreeName
    kind: BranchKind
    parent: str | None
    depth: int
    children: list[str] = field(default_factory=list)
    text: str = ""
    label: str = ""
    vector: Vector | None = None
    leaf_count: int = 0
    first_seq: int = -1
    last_seq: int = -1
    first_ts: float = 0.0
    last_ts: float = 0.0
    # Norm of the mean of the leaves' unit vectors: 1 when they all agree, near 0 when they scatter.
    # vector · cohesion is that mean, so its dot product with a unit query is the query's average
    # cosine to the branch's leaves.
    cohesion: float = 1.0
    # Refinement by an LLM (optional): ``summary`` is the model's text for this branch, written for
    # the leaves up to ``summary_seq``; ``pending`` says the branch changed since and awaits a new one.
    summary: str = ""
    summary_seq: int = -1
    pending: bool = False

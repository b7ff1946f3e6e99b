"""The nodes of a memory: leaves (one atomic memory each) and the branches trees build over them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, cast

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.names import TreeName

BranchKind = Literal["root", "internal"]
LinkMaker = Literal["agent", "llm", "user", "import"]
# Who may make an update link, the weakest word first: an import vouches only for itself (never for
# who made a link in the file it read), an LLM judge decides in the background on a quote, the agent
# in the conversation, and the user's word is final: a link the user made is undone only by the user.
LINK_MAKERS: tuple[LinkMaker, ...] = ("import", "llm", "agent", "user")


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
    # The ids of earlier memories this one updates, as someone who understands said: the agent
    # (``remember``'s ``supersedes``), the user (the CLI), an LLM judge or an import. The only way
    # a memory is marked superseded.
    supersedes: tuple[str, ...] = ()
    # Who made each link of ``supersedes``, in the same order: LINK_MAKERS. Links stored before
    # this was recorded have none, and count as the agent's.
    supersedes_by: tuple[str, ...] = ()
    # Older memories this one may update, found when it was remembered (``core/ranking/candidates.py``)
    # and offered to the agent: not a claim; they only put the newer of the two first.
    may_update: tuple[str, ...] = ()
    # Awaiting an LLM's judgement of which older memories this one updates (``service/judging.py``): set
    # when it is remembered with an LLM configured, cleared by the commit of the verdicts.
    judging: bool = False


def makers_of(leaf: Leaf) -> tuple[LinkMaker, ...]:
    """Who made each link of ``leaf``, one for each of its ``supersedes`` (a link stored before
    makers were recorded, or with a maker this version does not know, is the agent's)."""
    known: tuple[str, ...] = tuple(maker if maker in LINK_MAKERS else "agent" for maker in leaf.supersedes_by)
    known = known[: len(leaf.supersedes)] + ("agent",) * (len(leaf.supersedes) - len(known))
    return cast("tuple[LinkMaker, ...]", known)


def link_maker(leaf: Leaf, older_id: str) -> LinkMaker:
    """Who said that ``leaf`` updates ``older_id``: ``agent``, ``llm``, ``user`` or ``import``.
    Raises ValueError when ``leaf`` does not name ``older_id``."""
    return makers_of(leaf)[leaf.supersedes.index(older_id)]


def weaker(first: LinkMaker, second: LinkMaker) -> LinkMaker:
    """The weaker word of two makers (:data:`LINK_MAKERS`): who a link resting on both is made by."""
    return min(first, second, key=LINK_MAKERS.index)


def stronger(first: LinkMaker, second: LinkMaker) -> LinkMaker:
    """The stronger word of two makers: who a link two of them made is kept as made by."""
    return max(first, second, key=LINK_MAKERS.index)


def may_undo(by: LinkMaker, maker: LinkMaker) -> bool:
    """Whether ``by`` may undo a link ``maker`` made: only the user undoes the user's links."""
    return maker != "user" or by == "user"


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
    # The temporal root's alone: the time zone of the calendar its tree was built by
    # (``core/trees/calendar.py``), stored with the namespace; empty elsewhere, and in a root written
    # before zones were stored.
    zone: str = ""

"""What the operations return: pydantic models, so MCP tools send them as structured content."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memtree_mcp.core.names import HitKind, NodeKind, TreeName


class PathStep(BaseModel):
    """One branch on the way from the root to a memory."""

    id: str
    label: str = Field(description="A few words that recur under this branch.")


class Candidate(BaseModel):
    """An older memory the one remembered may update: offered, never marked."""

    id: str
    text: str = Field(description="The start of the memory's text.")
    timestamp: str = Field(description="When it happened (ISO 8601).")


class RememberResult(BaseModel):
    """What ``remember`` stored."""

    ids: list[str] = Field(description="Leaf ids, one per chunk, in order; existing ids for duplicates.")
    deduplicated: bool = Field(description="True when every chunk was already stored, so nothing was added.")
    path: list[PathStep] = Field(description="Branches above the first chunk in the semantic tree.")
    namespace: str
    supersedes: list[str] = Field(
        default_factory=list, description="Earlier memories the first chunk now says it updates."
    )
    unlinked: list[str] = Field(default_factory=list, description="Links this call undid.")
    candidates: list[Candidate] = Field(
        default_factory=list,
        description="Older memories it may update, no link naming them: confirm with supersedes.",
    )
    redacted: list[str] = Field(
        default_factory=list,
        description="The kind of each secret replaced by a marker before anything was stored.",
    )


class RecallHit(BaseModel):
    """One recalled memory (a leaf) or summary (a branch)."""

    id: str
    text: str
    kind: HitKind
    tree: str = Field(
        description="'semantic' for summaries of the semantic tree; leaves belong to every tree."
    )
    depth: int
    score: float = Field(
        description="The ranking score, higher first; its scale depends on the strategy and the store."
    )
    relevance: float = Field(
        description="How strongly it matches the query, from 0 (unrelated) to 1 (says what was asked, in "
        "its words); the same scale in every call."
    )
    time_from: str = Field(description="Earliest memory covered (ISO 8601).")
    time_to: str = Field(description="Latest memory covered (ISO 8601).")
    breadcrumb: list[str] = Field(description="Labels of the branches above, from the top down.")
    covers: int = Field(default=1, description="How many memories it stands for (1 for a memory).")
    superseded_by: str | None = Field(
        default=None,
        description="The id of the later memory that updates this one, if any: a hit of the same result.",
    )


class RecallResult(BaseModel):
    """The memories most related to a query, best first."""

    hits: list[RecallHit]
    namespace: str
    # When no hit fits in max_tokens: how many matched, and the max_tokens that holds the first.
    unfit: int = 0
    max_tokens: int | None = None
    first_needs: int | None = None


class SummaryResult(BaseModel):
    """A summary composed from the trees, and the nodes it cites."""

    summary: str
    node_ids: list[str] = Field(description="Ids of the nodes the summary was built from, in order.")
    namespace: str


class ForgetResult(BaseModel):
    """What ``forget`` deleted, or for a query the memories it matches (nothing deleted)."""

    deleted: list[str] = Field(description="Ids of the memories deleted.")
    candidates: list[RecallHit] = Field(
        description="For a query: the memories it matches, most relevant first (the relevance recall "
        "shows, none below its cut-off); none is deleted. Delete some by passing their ids back."
    )
    namespace: str
    gone: list[str] = Field(
        default=[], description="After the user's yes: ids shown to the user that were already deleted."
    )
    kept: list[str] = Field(
        default=[],
        description="After the user's yes: ids of memories stored since the user was asked that match "
        "the forget too; not shown to the user, so not deleted.",
    )


class NodePreview(BaseModel):
    """A child or neighbour of the node in view, in one line."""

    id: str
    line: str
    kind: NodeKind
    leaf_count: int


class NodeView(BaseModel):
    """Where the cursor is: a node of one tree, its text, its children and which moves are possible."""

    id: str
    tree: TreeName
    kind: NodeKind
    depth: int
    text: str
    label: str
    leaf_count: int
    time_from: str | None
    time_to: str | None
    breadcrumb: list[str]
    period: str | None = Field(
        description="A temporal branch's time scale: segment, session, day, week, month, year."
    )
    children: list[NodePreview] = Field(description="Move 'down' with index i to go to children[i].")
    parent: NodePreview | None
    left: NodePreview | None
    right: NodePreview | None
    has_up: bool
    has_down: bool
    has_left: bool
    has_right: bool
    score: float | None = Field(description="Similarity to the query, when one was given.")


class ContextLine(BaseModel):
    """A text the memory agent gathered for the query."""

    id: str
    text: str
    score: float


class NavigateResult(BaseModel):
    """The node in view after the move (or after the agent's walk), and for the agent its findings."""

    node: NodeView
    moves: list[str] = Field(description="Moves the agent made (empty for a single move).")
    sufficient: bool | None = Field(description="The agent's verdict on its context; None for a single move.")
    context: list[ContextLine] = Field(description="What the agent settled on and its best memories.")
    namespace: str

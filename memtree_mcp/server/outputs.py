"""What each tool hands a program besides the text the model reads: ids, numbers, dates.

Decision, from the MCP specification (tools: "Tool Result") and the SDK: a tool result carries
``content`` (what the model reads) and, with an output schema, ``structuredContent`` (a JSON value
for the application). The specification only asks that the text repeat the structured data "for
backwards compatibility" (a SHOULD), and clients differ in what they pass to the model: some show
both. Repeating the memories' words in both would double what the model pays for in those
clients, so the two halves have different jobs: the text content is written for the model
(``service/rendering.py``) and holds every word once; the structured content holds what a program needs
to act — the ids a follow-up call takes, kinds, relevance, dates, which memory supersedes which,
in the same order as the text's lines — and never the memories' text. A program that wants a
memory's words reads that hit's line, or the ``memtree://{namespace}/node/{id}`` resource.
"""

from __future__ import annotations

from pydantic import BaseModel

from memtree_mcp.core.names import HitKind, NodeKind, TreeName
from memtree_mcp.service.rendering import shown_children
from memtree_mcp.service.results import (
    ForgetResult,
    NavigateResult,
    RecallResult,
    RememberResult,
    SummaryResult,
)


class RememberOutput(BaseModel):
    """The ids of the stored memories (one per chunk), whether all were already known, and the ids
    of the older memories the first may update (offered, not linked)."""

    ids: list[str]
    deduplicated: bool
    namespace: str
    candidates: list[str] = []

    @classmethod
    def of(cls, result: RememberResult) -> RememberOutput:
        return cls(
            ids=result.ids,
            deduplicated=result.deduplicated,
            namespace=result.namespace,
            candidates=[c.id for c in result.candidates],
        )


class HitRef(BaseModel):
    """One line of recall's text: which node, what kind, how relevant (0-1), when."""

    id: str
    kind: HitKind
    relevance: float
    time_from: str
    time_to: str
    covers: int = 1
    superseded_by: str | None = None


class RecallOutput(BaseModel):
    """Recall's hits in the order of the text's lines."""

    hits: list[HitRef]
    namespace: str

    @classmethod
    def of(cls, result: RecallResult) -> RecallOutput:
        return cls(
            hits=[HitRef.model_validate(hit.model_dump()) for hit in result.hits], namespace=result.namespace
        )


class NavigateOutput(BaseModel):
    """Where the cursor is and where it can go: ids only."""

    node_id: str
    tree: TreeName
    kind: NodeKind
    children: list[str]
    parent: str | None = None
    left: str | None = None
    right: str | None = None
    moves: list[str]
    sufficient: bool | None = None
    found: list[str]
    namespace: str

    @classmethod
    def of(cls, result: NavigateResult) -> NavigateOutput:
        node = result.node
        return cls(
            node_id=node.id,
            tree=node.tree,
            kind=node.kind,
            # Those the text lists (rendering.shown_children), each at its index for 'down'.
            children=[child.id for child in node.children[: shown_children(node)]],
            parent=node.parent.id if node.parent else None,
            left=node.left.id if node.left else None,
            right=node.right.id if node.right else None,
            moves=result.moves,
            sufficient=result.sufficient,
            found=[line.id for line in result.context],
            namespace=result.namespace,
        )


class SummaryOutput(BaseModel):
    """The nodes the summary's lines come from, in order."""

    node_ids: list[str]
    namespace: str

    @classmethod
    def of(cls, result: SummaryResult) -> SummaryOutput:
        return cls(node_ids=result.node_ids, namespace=result.namespace)


class Candidate(BaseModel):
    """A memory forget found, and how relevant to the query it is (0-1)."""

    id: str
    relevance: float


class ForgetOutput(BaseModel):
    """What was deleted, or the candidates a deletion may take."""

    deleted: list[str]
    candidates: list[Candidate]
    namespace: str

    @classmethod
    def of(cls, result: ForgetResult) -> ForgetOutput:
        return cls(
            deleted=result.deleted,
            candidates=[Candidate(id=hit.id, relevance=hit.relevance) for hit in result.candidates],
            namespace=result.namespace,
        )

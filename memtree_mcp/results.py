"""What the operations return: pydantic models, so MCP tools send them as structured content."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class PathStep(BaseModel):
    """One branch on the way from the root to a memory."""

    id: str
    label: str = Field(description="A few words that recur under this branch.")


class RememberResult(BaseModel):
    """What ``remember`` stored."""

    ids: list[str] = Field(description="Leaf ids, one per chunk, in order; existing ids for duplicates.")
    deduplicated: bool = Field(description="True when every chunk was already stored, so nothing was added.")
    path: list[PathStep] = Field(description="Branches above the first chunk in the semantic tree.")
    namespace: str


class RecallHit(BaseModel):
    """One recalled memory (a leaf) or summary (a branch)."""

    id: str
    text: str
    kind: Literal["leaf", "summary"]
    tree: str = Field(
        description="'semantic' for summaries of the semantic tree; leaves belong to every tree."
    )
    depth: int
    score: float = Field(
        description="Relevance, higher is better. Strategy 'collapsed': cosine similarity to the query "
        "(for a summary, the mean over its memories). Strategy 'hybrid': a standardised score, 0 being "
        "an average memory."
    )
    time_from: str = Field(description="Timestamp of the earliest memory covered (ISO 8601, UTC).")
    time_to: str = Field(description="Timestamp of the latest memory covered (ISO 8601, UTC).")
    breadcrumb: list[str] = Field(description="Labels of the branches above, from the top down.")


class RecallResult(BaseModel):
    """The memories most related to a query, best first."""

    hits: list[RecallHit]
    namespace: str

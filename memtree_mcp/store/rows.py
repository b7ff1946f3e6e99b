"""The row format of a namespace table: its schema, the keys of its metadata, and a node as a row.

Every node is a row; a node's row is never updated in place, each change appends the node's next
revision (``store/table.py``). Only what cannot be derived is stored (:func:`node_schema`): a
leaf's vector once, as bytes, when the leaf is new; no vector on a branch's row (the mean of its
leaves', derived on load); no parents on a leaf's row (its parents' ``children`` say where it is).
A forget appends a deletion row (:func:`deletion_row`): an id's latest row says whether it lives.

The schema's metadata records the schema version this module writes (:data:`SCHEMA_VERSION`; the
older ones and how their rows are read are ``store/migrations.py``), the embedder and dimension
the vectors come from, the table's generation and the oldest commit its history holds. The
namespace's time zone is kept with its temporal tree, in the ``metadata`` of the temporal root's
row (``{"zone": "Asia/Tokyo"}``): written in the same commit as the tree built by it, followed,
snapshotted and restored with it; a root row without one was written before zones were stored.

This module builds rows from nodes and, one row at a time, nodes from rows
(:func:`leaf_from_row`, :func:`branch_from_row`); a load decodes whole columns at once
(``store/arrow.py``) and the tests check the two agree.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Container, Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Branch, Leaf

# The layout this code writes. A new version needs its step in store/migrations.py, which says how
# the rows of the one before are read and what changed.
SCHEMA_VERSION = "5"
# The kind of a row that records a node's deletion: its id's latest revision says it is gone.
DELETED = "deleted"
META_SCHEMA = b"memtree.schema_version"
META_EMBEDDER = b"memtree.embedder"
META_DIMENSION = b"memtree.dimension"
# Changes with every rewrite of the table: rows a reader saw before it may be gone.
META_GENERATION = b"memtree.generation"
# The oldest commit (``rev``) whose memory the rows still hold whole: history starts there.
META_FLOOR = b"memtree.history_from"
# A leaf row's ``metadata``: a JSON object of what a leaf holds beyond its columns, None when it
# holds only defaults: ``judging`` (awaiting an LLM's judgement of what it updates), ``by`` (who
# made each link of ``supersedes``) and ``may_update`` (the candidates offered when it was
# remembered). Older code reads only ``{"judging":true}`` of it, so no new schema.
LEAF_JUDGING = '{"judging":true}'


def node_schema(embedder: str, dimension: int) -> pa.Schema:
    """The row layout of a namespace table, with the embedder and a new generation in its metadata.

    Only what cannot be derived is stored. A leaf's vector (``embedding``: float32 bytes) is
    written once, when the leaf is new: moving in a tree never rewrites a leaf's row, since each
    leaf's parents are read off its parents' ``children``. A branch's row holds no vector (under
    average linkage it is the mean of its leaves', recomputed on load, ``core/trees/representative.py``):
    a remember rewrites every branch on its paths, and with a vector most of each of those rows
    would be a copy of a vector that can be derived.
    """
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("rev", pa.int64(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("tree", pa.string(), nullable=False),
            pa.field("parent", pa.string()),
            pa.field("children", pa.list_(pa.string())),
            pa.field("depth", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("label", pa.string()),
            pa.field("embedding", pa.binary()),
            pa.field("leaf_count", pa.int64()),
            pa.field("first_seq", pa.int64()),
            pa.field("last_seq", pa.int64()),
            pa.field("first_ts", pa.float64()),
            pa.field("last_ts", pa.float64()),
            pa.field("role", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("session", pa.string()),
            pa.field("metadata", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("created", pa.float64()),
            pa.field("updated", pa.float64()),
            pa.field("supersedes", pa.list_(pa.string())),
        ],
        metadata={
            META_SCHEMA: SCHEMA_VERSION.encode(),
            META_EMBEDDER: embedder.encode(),
            META_DIMENSION: str(dimension).encode(),
            META_GENERATION: new_generation(),
            META_FLOOR: b"0",
        },
    )


def new_generation() -> bytes:
    """A fresh generation marker for a table written anew."""
    return uuid.uuid4().hex.encode()


def generation_of(schema: pa.Schema) -> bytes:
    """The generation a table's schema records (empty for a table written before they existed)."""
    return (schema.metadata or {}).get(META_GENERATION, b"")


# -- nodes as rows ----------------------------------------------------------------------------


def node_rows(
    memory: Memory,
    changed: Iterable[str],
    removed: Iterable[str],
    now: float,
    stored: Container[str] = (),
    rewritten: Container[str] = (),
) -> list[dict[str, Any]]:
    """The rows of the nodes ``changed`` as ``memory`` holds them, then one deletion row per id of
    ``removed``, each in id order. A leaf in ``stored`` (already in the table) has no new row: its
    place in the trees is its parents' rows' business, and its record changes only when it is
    given more update links (``supersedes``), which the caller says by naming it in ``rewritten``."""
    gone = set(removed)
    rows: list[dict[str, Any]] = []
    for node_id in sorted(set(changed) - gone):
        leaf = memory.leaves.get(node_id)
        if leaf is not None:
            if node_id not in stored or node_id in rewritten:
                rows.append(leaf_row(leaf, now))
        else:
            branch = memory.branch(node_id)
            if branch is None:
                raise KeyError(node_id)
            rows.append(branch_row(branch, now))
    rows += [deletion_row(node_id, now) for node_id in sorted(gone)]
    return rows


def deletion_row(node_id: str, now: float) -> dict[str, Any]:
    """The revision that deletes a node; squashing the table drops it with the node's history."""
    return {
        "id": node_id,
        "kind": DELETED,
        "tree": "",
        "parent": None,
        "children": [],
        "depth": 0,
        "text": "",
        "label": "",
        "embedding": None,
        "leaf_count": 0,
        "first_seq": -1,
        "last_seq": -1,
        "first_ts": 0.0,
        "last_ts": 0.0,
        "role": None,
        "tags": [],
        "session": None,
        "metadata": None,
        "content_hash": None,
        "created": None,
        "updated": now,
        "supersedes": [],
    }


def leaf_row(leaf: Leaf, now: float) -> dict[str, Any]:
    """The table row of a leaf: its record and vector; its parents are its parents' business."""
    return {
        "id": leaf.id,
        "kind": "leaf",
        "tree": "shared",
        "parent": None,
        "children": [],
        "depth": 0,
        "text": leaf.text,
        "label": "",
        "embedding": np.asarray(leaf.vector, dtype=np.float32).tobytes(),
        "leaf_count": 1,
        "first_seq": leaf.seq,
        "last_seq": leaf.seq,
        "first_ts": leaf.timestamp,
        "last_ts": leaf.timestamp,
        "role": leaf.role,
        "tags": list(leaf.tags),
        "session": leaf.session,
        "metadata": leaf_metadata(leaf),
        "content_hash": leaf.content_hash,
        "created": leaf.created,
        "updated": now,
        "supersedes": list(leaf.supersedes),
    }


def branch_row(branch: Branch, now: float) -> dict[str, Any]:
    """The table row of a root or internal node, without its vector (derived from its leaves)."""
    refinement = _refinement(branch)
    return {
        "id": branch.id,
        "kind": branch.kind,
        "tree": branch.tree,
        "parent": branch.parent,
        "children": list(branch.children),
        "depth": branch.depth,
        "text": branch.text,
        "label": branch.label,
        "embedding": None,
        "leaf_count": branch.leaf_count,
        "first_seq": branch.first_seq,
        "last_seq": branch.last_seq,
        "first_ts": branch.first_ts,
        "last_ts": branch.last_ts,
        "role": None,
        "tags": [],
        "session": None,
        "metadata": json.dumps(refinement) if refinement else None,
        "content_hash": None,
        "created": None,
        "updated": now,
        "supersedes": [],
    }


def _refinement(branch: Branch) -> dict[str, Any]:
    """What a branch's row keeps beyond its columns: its LLM refinement (the summary, what it
    covers, whether it is due) and, on the temporal root, the zone of its calendar."""
    kept: dict[str, Any] = {"zone": branch.zone} if branch.zone else {}
    if branch.summary or branch.pending:
        kept.update(summary=branch.summary, summary_seq=branch.summary_seq, pending=branch.pending)
    return kept


# -- rows as nodes ----------------------------------------------------------------------------


def leaf_from_row(row: dict[str, Any]) -> Leaf:
    """A stored leaf, from its row as a dict with its vector decoded under ``vector``."""
    return Leaf(
        id=row["id"],
        text=row["text"],
        vector=row["vector"],
        seq=int(row["first_seq"]),
        timestamp=float(row["first_ts"]),
        role=row["role"] or "user",
        tags=tuple(row["tags"] or ()),
        session=row["session"],
        content_hash=row["content_hash"] or "",
        created=float(row["created"] or 0.0),
        supersedes=tuple(row.get("supersedes") or ()),
        **leaf_extras(row.get("metadata")),
    )


def leaf_metadata(leaf: Leaf) -> str | None:
    """A leaf row's ``metadata`` (see :data:`LEAF_JUDGING`), None when all of it is default."""
    extras: dict[str, Any] = {}
    if leaf.judging:
        extras["judging"] = True
    if leaf.supersedes_by:
        extras["by"] = list(leaf.supersedes_by)
    if leaf.may_update:
        extras["may_update"] = list(leaf.may_update)
    return json.dumps(extras, separators=(",", ":")) if extras else None


def leaf_extras(raw: str | None) -> dict[str, Any]:
    """The Leaf fields a leaf row's ``metadata`` holds (none when it holds none or is unreadable)."""
    if not raw:
        return {}
    try:
        extras = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(extras, dict):
        return {}
    makers = extras.get("by")
    candidates = extras.get("may_update")
    return {
        "judging": extras.get("judging") is True,
        "supersedes_by": tuple(str(m) for m in makers) if isinstance(makers, list) else (),
        "may_update": tuple(str(c) for c in candidates) if isinstance(candidates, list) else (),
    }


def refined(raw: str | None) -> dict[str, Any]:
    """A branch row's ``metadata`` (its refinement, the temporal root's zone) as Branch fields;
    none when unreadable. Code before zones were stored reads a zone alone as no refinement."""
    try:
        found = json.loads(raw) if raw and raw != "{}" else {}  # most rows: nothing refined
    except ValueError:
        found = {}
    if not isinstance(found, dict) or not found:
        return {}
    return {
        "summary": str(found.get("summary") or ""),
        "summary_seq": int(found.get("summary_seq", -1)),
        "pending": bool(found.get("pending", False)),
        "zone": str(found.get("zone") or ""),
    }


def branch_from_row(row: dict[str, Any]) -> Branch:
    """A stored branch; its vector is left to be derived from its leaves (``Memory.load``,
    ``Memory.apply``)."""
    return Branch(
        id=row["id"],
        tree=row["tree"],
        kind=row["kind"],
        parent=row["parent"],
        depth=int(row["depth"]),
        children=list(row["children"] or []),
        text=row["text"] or "",
        label=row["label"] or "",
        vector=None,
        leaf_count=int(row["leaf_count"]),
        first_seq=int(row["first_seq"]),
        last_seq=int(row["last_seq"]),
        first_ts=float(row["first_ts"]),
        last_ts=float(row["last_ts"]),
        **refined(row.get("metadata")),
    )

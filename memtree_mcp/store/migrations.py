"""Schema versions of a namespace table, as numbered migration steps.

Each version after the first has one step, registered with :func:`migration` under the version it
brings rows to, in order: a function that takes rows of the version before and returns them in
its own layout, every row kept, and whose docstring says what changed. A table of an older
version is read as it is, its rows converted by the steps since its version as they are read
(:func:`as_current`), and rewritten in the current version before its first write
(:func:`upgraded`, called by ``NamespaceTable.upgrade`` under the write lock).

A new version: raise ``SCHEMA_VERSION`` in ``store/rows.py``, where the current layout is written,
and register its step here; :func:`layout_version` must then tell its rows from the ones before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.core.embedding import embedder_setting
from memtree_mcp.errors import EmbedderMismatch, StoreError
from memtree_mcp.store.arrow import latest_positions
from memtree_mcp.store.rows import (
    DELETED,
    META_DIMENSION,
    META_EMBEDDER,
    META_FLOOR,
    META_SCHEMA,
    SCHEMA_VERSION,
    node_rows,
    node_schema,
)

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory

Step = Callable[[pa.Table], pa.Table]

# The steps by the version they bring rows to: 2, 3, ... up to SCHEMA_VERSION.
MIGRATIONS: dict[int, Step] = {}
# The columns version 4 added, at the end of the row.
ADDED_BY_4 = ("supersedes",)


def migration(version: int) -> Callable[[Step], Step]:
    """Register the decorated function as the step that brings rows to ``version``; steps are
    registered in order, one per version."""

    def register(step: Step) -> Step:
        if version != len(MIGRATIONS) + 2:
            raise ValueError(f"migration {step.__name__} is for version {version}, not {len(MIGRATIONS) + 2}")
        MIGRATIONS[version] = step
        return step

    return register


@migration(2)
def m002_only_what_cannot_be_derived(rows: pa.Table) -> pa.Table:
    """Version 2 stores only what cannot be derived.

    Version 1 stored a vector on every row (a fixed-size list ``vector``, zeros for deletions), a
    cohesion, and each node's parents in both trees (``semantic_parent``, ``temporal_parent``).
    Version 2 keeps a leaf's vector alone, as float32 bytes (``embedding``); a branch's vector and
    cohesion are derived on load, and a node's one ``parent`` is its parent in its own tree (none
    for a leaf: its parents' ``children`` say where it is). The rest is dropped.
    """
    is_leaf = pc.equal(rows.column("kind"), "leaf")
    vectors = rows.column("vector").combine_chunks()
    flat = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    dimension = vectors.type.list_size
    leaf_mask = is_leaf.to_numpy(zero_copy_only=False)
    blobs = [
        flat[i * dimension : (i + 1) * dimension].tobytes() if leaf else None
        for i, leaf in enumerate(leaf_mask.tolist())
    ]
    parent = pc.if_else(
        pc.equal(rows.column("tree"), "semantic"),
        rows.column("semantic_parent"),
        rows.column("temporal_parent"),
    )
    parent = pc.if_else(is_leaf, pa.scalar(None, pa.string()), parent)
    columns = {name: rows.column(name) for name in rows.column_names}
    columns["parent"] = parent
    columns["embedding"] = pa.array(blobs, pa.binary())
    # Version 2's columns (version 3 changed none; version 4 added ``supersedes``, after them).
    current = node_schema("", 0)
    schema = pa.schema([f for f in current if f.name not in ADDED_BY_4], metadata=rows.schema.metadata)
    return pa.table([columns[f.name] for f in schema], schema=schema)


@migration(3)
def m003_history_in_the_rows(rows: pa.Table) -> pa.Table:
    """Version 3 keeps the history in the rows; no column changed.

    Every commit has its own ``rev``, so the memory as it was at any commit is the latest row of
    each id among the rows up to it, and the oldest commit the rows still hold whole is recorded
    in the schema metadata (``META_FLOOR``). Until version 2 the history was in LanceDB's
    versions, which a rewrite does not carry over: a table upgraded from one keeps each id's latest
    row and its history starts at its latest commit (:func:`upgraded`).
    """
    return rows


@migration(4)
def m004_update_links(rows: pa.Table) -> pa.Table:
    """Version 4 stores the update links a memory was given (``remember``'s ``supersedes``).

    A leaf row's ``supersedes`` lists the ids of the earlier memories it updates; rows of the
    versions before have none, and read as an empty list.
    """
    offsets = pa.array(np.zeros(rows.num_rows + 1, dtype=np.int32))
    empty = pa.ListArray.from_arrays(offsets, pa.array([], pa.string()))
    return rows.append_column(pa.field("supersedes", pa.list_(pa.string())), empty)


@migration(5)
def m005_sessions_and_periods(rows: pa.Table) -> pa.Table:
    """Version 5's temporal tree groups time by session and period (``core/trees/calendar.py``).

    Version 4's temporal branches grouped neighbouring memories by subject alone. Each of their rows
    reads as the deletion of that branch (kind ``deleted``, no text, no time of forgetting), so a
    memory read from them builds its temporal tree anew from its leaves, in arrival order
    (``Memory.load``), and the upgrade stores that tree in its own commit
    (``NamespaceTable.upgrade``). Rows are converted, not dropped: a reader counts the table's rows
    to follow it. Leaves, the semantic tree and deletions are kept as they are.
    """
    old = _old_temporal_branches(rows)
    columns = {name: rows.column(name) for name in rows.column_names}
    columns["kind"] = pc.if_else(old, pa.scalar(DELETED), rows.column("kind"))
    for name in ("text", "label"):
        columns[name] = pc.if_else(old, pa.scalar(""), rows.column(name))
    columns["updated"] = pc.if_else(old, pa.scalar(None, pa.float64()), rows.column("updated"))
    return pa.table([columns[name] for name in rows.column_names], schema=rows.schema)


def _old_temporal_branches(rows: pa.Table) -> pa.Array:
    """Which rows are branches of the temporal tree (schema 4's, when read from such a table)."""
    temporal = pc.and_(pc.equal(rows.column("tree"), "temporal"), pc.not_equal(rows.column("kind"), "leaf"))
    return pc.fill_null(temporal, False)


READABLE_VERSIONS = ("1", *(str(version) for version in MIGRATIONS))
if READABLE_VERSIONS[-1] != SCHEMA_VERSION:
    raise RuntimeError(
        f"store/rows.py writes schema version {SCHEMA_VERSION}; "
        f"the last migration step is to version {READABLE_VERSIONS[-1]}"
    )


def layout_version(rows: pa.Table) -> int:
    """The schema version whose layout ``rows`` have: 1 without an ``embedding`` column, 3 (whose
    layout is version 2's) without ``supersedes``, 4 (whose columns are version 5's) when their
    metadata says so, else the current one."""
    if "embedding" not in rows.column_names:
        return 1
    if "supersedes" not in rows.column_names:
        return 3
    if (rows.schema.metadata or {}).get(META_SCHEMA) == b"4":
        return 4
    return int(SCHEMA_VERSION)


def outline_as_current(outline: pa.Table, schema: pa.Schema) -> pa.Table:
    """Some columns of a table's rows (``kind`` and ``tree`` among them), read from a table of
    ``schema``, with ``kind`` as the current schema reads it: the one column a step changes
    (:func:`m005_sessions_and_periods`) among those a snapshot is checked by."""
    if not outdated(schema):
        return outline
    old = _old_temporal_branches(outline)
    kinds = pc.if_else(old, pa.scalar(DELETED), outline.column("kind"))
    return outline.set_column(outline.schema.get_field_index("kind"), "kind", kinds)


def as_current(rows: pa.Table) -> pa.Table:
    """Rows read from a table of any readable schema version, in the current layout: rows already
    in it as they are, others through each step after their version in turn, with the table's
    own metadata (embedder, dimension, generation) as the current version's."""
    version = layout_version(rows)
    if version == int(SCHEMA_VERSION):
        return rows
    for step in range(version + 1, int(SCHEMA_VERSION) + 1):
        rows = MIGRATIONS[step](rows)
    return rows.replace_schema_metadata(
        {**(rows.schema.metadata or {}), META_SCHEMA: SCHEMA_VERSION.encode()}
    )


def outdated(schema: pa.Schema) -> bool:
    """Whether a table of this schema was written in an older schema version (readable, but it must
    be upgraded before anything is written to it)."""
    return (schema.metadata or {}).get(META_SCHEMA) != SCHEMA_VERSION.encode()


def upgraded(arrow: pa.Table, embedder: str, dimension: int) -> tuple[pa.Table, pa.Schema]:
    """The rows and the schema (to cast them to) that rewrite a table of an older version (its
    every row, ``arrow``) in the current one: each id's latest row (deletions too), converted, under
    a new generation. Its
    history was in LanceDB's versions (:func:`m003_history_in_the_rows`), which are not carried
    over: the history starts at its latest commit."""
    arrow = as_current(arrow)
    latest, _ = latest_positions(arrow)
    rows = arrow.take(pa.array(latest))
    floor = int(pc.max(rows.column("rev")).as_py()) if rows.num_rows else 0
    schema = node_schema(embedder, dimension)
    schema = schema.with_metadata({**(schema.metadata or {}), META_FLOOR: str(floor).encode()})
    return rows, schema


def with_temporal_tree(rows: pa.Table, schema: pa.Schema, memory: Memory) -> tuple[pa.Table, pa.Schema]:
    """``upgraded``'s rows and schema with the rows of ``memory``'s temporal tree (built on reading
    a table of schema 4 or older, :func:`m005_sessions_and_periods`) as the next commit, which the
    history then starts at (the root's new row replaces its old one, made a deletion before)."""
    rev = int(schema.metadata[META_FLOOR].decode()) + 1
    built = node_rows(memory, memory.temporal.branches, memory.temporal_replaced, time.time())
    schema = schema.with_metadata({**schema.metadata, META_FLOOR: str(rev).encode()})
    tree = pa.Table.from_pylist([{**row, "rev": rev} for row in built], schema=schema)
    return pa.concat_tables([rows.cast(schema), tree]), schema


def check_schema(namespace: str, schema: pa.Schema, embedder: str, dimension: int) -> None:
    """Raise StoreError for a table of another schema version, EmbedderMismatch for one whose
    vectors come from another embedder or dimension than ``embedder`` and ``dimension``."""
    meta = schema.metadata or {}
    version = meta.get(META_SCHEMA, b"?").decode()
    if version not in READABLE_VERSIONS:
        raise StoreError(
            f"namespace '{namespace}' has schema version {version}; this memtree-mcp reads version "
            f"{SCHEMA_VERSION}. Upgrade memtree-mcp, or point MEMTREE_HOME at another directory."
        )
    built_by = meta.get(META_EMBEDDER, b"?").decode()
    built_dimension = int(meta.get(META_DIMENSION, b"0").decode() or 0)
    if built_by != embedder or built_dimension != dimension:
        built, configured = embedder_setting(built_by), embedder_setting(embedder)
        if built == configured:  # the same setting, other weights or dimensions: say which
            built, configured = (
                f"{built} ({built_by}, {built_dimension} dimensions)",
                (f"{configured} ({embedder}, {dimension} dimensions)"),
            )
        raise EmbedderMismatch(
            f"namespace '{namespace}' was built with the embedder {built}, but the configured embedder "
            f"is {configured}. Run `memtree-mcp reindex` to embed its memories again with "
            f"{configured.split(' ')[0]}, set MEMTREE_EMBEDDER={built.split(' ')[0]} (the one it was "
            "built with), or use another namespace."
        )

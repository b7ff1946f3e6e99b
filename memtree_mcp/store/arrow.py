"""Arrow decoding: a namespace table's rows, read as Arrow columns, turned into nodes.

Which row is each id's latest (:func:`latest_positions`), which of those are alive and which are
leaves, and the nodes in the rows at given positions, built column by column rather than a dict
per row: the leaves (:func:`leaves_at`) with their vectors as one float32 matrix
(:func:`leaf_vectors`), the branches (:func:`branches_at`) and each tree's :class:`Shape`
(:func:`tree_shapes`). Rows that lie together, as a snapshot keeps them (``store/snapshot.py``), are
sliced rather than gathered, so over a memory-mapped file nothing is copied that need not be.
``store/rows.py`` holds the format itself and the same decoding one row at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.core.trees.hierarchy import Shape
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.errors import StoreError
from memtree_mcp.store.rows import DELETED, leaf_extras, refined

T = TypeVar("T", bound=Hashable)


def up_to(arrow: pa.Table, version: int) -> pa.Table:
    """The rows of ``arrow`` written up to commit ``version``."""
    return arrow.filter(pc.less_equal(arrow.column("rev"), version))


def last_row(arrow: pa.Table) -> tuple[str, int] | None:
    """(id, rev) of the last row of ``arrow``, None when it has none."""
    if not arrow.num_rows:
        return None
    return arrow.column("id")[-1].as_py(), int(arrow.column("rev")[-1].as_py())


def latest_positions(arrow: pa.Table) -> tuple[np.ndarray, pa.Array]:
    """Where each id's highest revision is, by id, and its kind (``DELETED`` for a deletion).

    Computed on the id and rev columns alone, without converting a row to Python.
    """
    if arrow.num_rows == 0:
        return np.zeros(0, dtype=np.int64), pa.array([], pa.string())
    order = pc.sort_indices(
        arrow.select(["id", "rev"]), sort_keys=[("id", "ascending"), ("rev", "descending")]
    )
    ids = arrow.column("id").take(order).combine_chunks()
    first = np.ones(len(ids), dtype=bool)  # the first row of each id, in this order its latest revision
    if len(ids) > 1:
        first[1:] = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1)).to_numpy(zero_copy_only=False)
    keep = order.to_numpy()[first]
    return keep, arrow.column("kind").take(pa.array(keep)).combine_chunks()


def live_positions(arrow: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Where each id's highest revision is, unless it deletes the id, by id; and which are leaves."""
    keep, kinds = latest_positions(arrow)
    alive, is_leaf = kind_masks(kinds)
    return keep[alive], is_leaf[alive]


def kind_masks(kinds: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``kinds`` are not deletions, and which are leaves."""
    alive = pc.not_equal(kinds, DELETED).to_numpy(zero_copy_only=False)
    is_leaf = pc.equal(kinds, "leaf").to_numpy(zero_copy_only=False)
    return alive, is_leaf


# The columns rows.leaf_from_row and rows.branch_from_row read (a leaf's vector apart): a load
# converts only these to Python.
LEAF_COLUMNS = (
    "id",
    "text",
    "first_seq",
    "first_ts",
    "role",
    "tags",
    "session",
    "content_hash",
    "created",
    "supersedes",
    "metadata",
)
BRANCH_COLUMNS = (
    "id",
    "tree",
    "kind",
    "parent",
    "depth",
    "children",
    "text",
    "label",
    "leaf_count",
    "first_seq",
    "last_seq",
    "first_ts",
    "last_ts",
    "metadata",
)


def release_arrow_pages() -> None:
    """Give Arrow's freed pages back: its allocator keeps a table's pages after the table is freed,
    so a whole read would otherwise stay in the resident memory."""
    pa.default_memory_pool().release_unused()


def tree_shapes(
    arrow: pa.Table,
    leaf_positions: np.ndarray,
    branch_positions: np.ndarray,
    leaf_ids: list[str],
    branch_ids: list[str],
) -> dict[str, Shape]:
    """Each tree's :class:`Shape` from the branch rows at ``branch_positions`` (in that order, as
    :func:`branches_at` builds them, their ids ``branch_ids``) and the leaf rows at
    ``leaf_positions`` (in seq order, their ids ``leaf_ids``), in Arrow and numpy rather than node
    by node. A tree whose rows name a parent that is not among them, or a leaf under two branches,
    gets none: the load works those out as before. ``parent_of`` is made of the strings of
    ``leaf_ids`` and ``branch_ids``, which the nodes already hold, rather than of new copies."""
    part = rows_at(
        arrow.select(["id", "tree", "kind", "parent", "depth", "leaf_count", "children"]), branch_positions
    )
    leaf_column = one_array(rows_at(arrow.select(["id"]), leaf_positions).column("id"))
    shapes = {}
    for name in ("semantic", "temporal"):
        in_tree = pc.equal(part.column("tree"), name)
        mine = part.filter(in_tree)
        mine_ids = list(itertools.compress(branch_ids, in_tree.to_numpy(zero_copy_only=False).tolist()))
        ids = one_array(mine.column("id"))
        parent = pc.index_in(mine.column("parent"), value_set=ids)
        if parent.null_count != mine.column("parent").null_count:
            continue  # a parent not among the rows
        children = one_array(mine.column("children"))
        lengths = pc.fill_null(pc.list_value_length(children), 0).to_numpy(zero_copy_only=False)
        owner = np.repeat(np.arange(mine.num_rows), lengths)
        listed = children.flatten()  # the children of each row in turn (none for a null list)
        rows = pc.index_in(listed, value_set=leaf_column)
        is_leaf = pc.is_valid(rows).to_numpy(zero_copy_only=False)
        owner = owner[is_leaf]
        leaf_rows = rows.filter(pa.array(is_leaf)).to_numpy(zero_copy_only=False).astype(np.int64)
        if len(np.unique(leaf_rows)) != len(leaf_rows):
            continue  # a leaf listed twice
        depth = mine.column("depth").to_numpy().astype(np.int64)
        shapes[name] = Shape(
            parent_of=dict(
                zip(
                    map(leaf_ids.__getitem__, leaf_rows.tolist()),
                    map(mine_ids.__getitem__, owner.tolist()),
                    strict=True,
                )
            ),
            height=int(depth[owner].max()) + 1 if len(owner) else 0,
            parent=pc.fill_null(parent, -1).to_numpy(zero_copy_only=False).astype(np.int64),
            depth=depth,
            leaf_count=mine.column("leaf_count").to_numpy().astype(np.float64),
            fan_out=lengths.astype(np.float64),
            internal=pc.equal(mine.column("kind"), "internal").to_numpy(zero_copy_only=False),
            leaves=len(leaf_column),
            leaf_rows=leaf_rows,
            leaf_parent=owner.astype(np.int64),
        )
    return shapes


def one_array(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: its only chunk as it is, or its chunks joined (``combine_chunks``
    copies even a single chunk, which over a memory-mapped snapshot would copy what a view serves)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def rows_at(arrow: pa.Table, positions: np.ndarray) -> pa.Table:
    """The rows at ``positions``, in that order. Rows that lie together, as a snapshot keeps its
    leaves and its branches (``store/snapshot.py``), are sliced rather than gathered: over a
    memory-mapped file that copies nothing."""
    if _together(positions):
        return arrow.slice(int(positions[0]), len(positions))
    return arrow.take(pa.array(positions))


def _together(positions: np.ndarray) -> bool:
    """Whether ``positions`` are consecutive and ascending (a slice)."""
    n = len(positions)
    return (
        bool(n) and int(positions[-1]) - int(positions[0]) == n - 1 and bool(np.all(np.diff(positions) == 1))
    )


def leaf_vectors(arrow: pa.Table, positions: np.ndarray, dimension: int, *, copy: bool = True) -> np.ndarray:
    """The vectors of the leaf rows at ``positions`` in one float32 matrix: a writable copy, or
    with ``copy=False`` and rows that lie together a read-only view of ``arrow``'s own buffer (a
    memory-mapped snapshot's). Gathered rows are always copied, so that the buffer they were
    gathered into goes back to Arrow's pool at once (``release_arrow_pages``)."""
    part = one_array(rows_at(arrow.select(["embedding"]), positions).column("embedding"))
    if part.null_count:
        raise StoreError("a stored memory has no vector; run `memtree-mcp doctor --repair`")
    if not len(part):
        return np.zeros((0, dimension), dtype=np.float32)
    offsets = np.frombuffer(part.buffers()[1], dtype=np.int32)[part.offset : part.offset + len(part) + 1]
    if not np.all(np.diff(offsets) == dimension * 4):
        raise StoreError(f"a stored memory's vector is not {dimension} float32 values")
    # The values of a binary array lie end to end: one view over them all, then one copy.
    data = np.frombuffer(
        part.buffers()[2], dtype=np.float32, count=len(part) * dimension, offset=int(offsets[0])
    )
    matrix = data.reshape(len(part), dimension)
    return matrix if not copy and _together(positions) else matrix.copy()


def leaves_at(
    arrow: pa.Table, positions: np.ndarray, dimension: int, vectors: np.ndarray | None = None
) -> list[Leaf]:
    """The leaves in the rows at ``positions``, built column by column (no dict per row); their
    vectors are the rows of ``vectors`` when given (gathered from the same positions)."""
    if not len(positions):
        return []
    if vectors is None:
        vectors = leaf_vectors(arrow, positions, dimension)
    part = rows_at(arrow.select(list(LEAF_COLUMNS)), positions)
    _no_nulls(part, ("id", "first_seq", "first_ts"))
    ids, texts, seqs, stamps, roles, sessions, hashes, created = (
        part.column(name).to_pylist()
        for name in LEAF_COLUMNS
        if name not in ("tags", "supersedes", "metadata")
    )
    tags = _tags(part.column("tags"))
    links = _tags(part.column("supersedes"))
    # Positional, in Leaf's field order, from whole columns: cheaper than a keyword call per row.
    leaves = list(
        map(
            Leaf,
            ids,
            texts,
            vectors,
            seqs,
            stamps,
            shared(role or "user" for role in roles),
            [tags.get(i, ()) for i in range(len(ids))] if tags else itertools.repeat(()),
            shared(sessions),
            [digest or "" for digest in hashes],
            [stamp or 0.0 for stamp in created],
            [links.get(i, ()) for i in range(len(ids))] if links else itertools.repeat(()),
        )
    )
    for at, extras in _extras(part.column("metadata")).items():
        for name, value in extras.items():
            setattr(leaves[at], name, value)
    return leaves


def _extras(column: pa.ChunkedArray) -> dict[int, dict[str, Any]]:
    """The Leaf fields in each leaf row's ``metadata`` (``rows.leaf_extras``), by row, for the rows
    that have any: most hold none, so nothing is parsed for them."""
    present = pc.is_valid(column).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(present)
    if not len(rows):
        return {}
    raws = column.take(pa.array(rows)).to_pylist()
    return {int(row): leaf_extras(raw) for row, raw in zip(rows.tolist(), raws, strict=True)}


def _tags(column: pa.ChunkedArray) -> dict[int, tuple[str, ...]]:
    """The strings of a list column (tags, update links) of the rows that have any, by row: most
    memories have none, so no list is made for each of them."""
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    tagged = np.flatnonzero(lengths)
    if not len(tagged):
        return {}
    listed = column.take(pa.array(tagged)).to_pylist()
    return {i: tuple(tags) for i, tags in zip(tagged.tolist(), listed, strict=True)}


def shared(values: Iterable[T]) -> list[T]:
    """``values`` with equal ones one object: a column of a few distinct strings (a role, a
    session, a tree) read as one string object per row costs 50 to 80 bytes a row."""
    same: dict[T, T] = {}
    return [same.setdefault(value, value) for value in values]


def branches_at(arrow: pa.Table, positions: np.ndarray, leaf_ids: Iterable[str] = ()) -> list[Branch]:
    """The branches in the rows at ``positions``, built column by column (no dict per row).

    Their parents and children are the id strings of the nodes they name (these branches', and
    ``leaf_ids``, the leaves read with them), not strings of their own: at 100k memories that
    is a third of a million strings fewer."""
    if not len(positions):
        return []
    part = rows_at(arrow.select(list(BRANCH_COLUMNS)), positions)
    _no_nulls(
        part, ("id", "tree", "kind", "depth", "leaf_count", "first_seq", "last_seq", "first_ts", "last_ts")
    )
    (
        ids,
        trees,
        kinds,
        parents,
        depths,
        children,
        texts,
        labels,
        counts,
        first_seqs,
        last_seqs,
        firsts,
        lasts,
    ) = (part.column(name).to_pylist() for name in BRANCH_COLUMNS[:-1])
    node = {node_id: node_id for node_id in leaf_ids}
    node.update(zip(ids, ids, strict=True))
    parents = [node.get(parent, parent) if parent is not None else None for parent in parents]
    children = [[node.get(child, child) for child in listed] if listed else [] for listed in children]
    # Built from the columns directly, not from a dict per row, and positionally, in Branch's field
    # order, not by a keyword call per row: both cost several times more.
    branches = list(
        map(
            Branch,
            ids,
            shared(trees),
            shared(kinds),
            parents,
            depths,
            children,
            [text or "" for text in texts],
            [label or "" for label in labels],
            itertools.repeat(None),
            counts,
            first_seqs,
            last_seqs,
            firsts,
            lasts,
        )
    )
    metadata = part.column("metadata")
    for i in np.flatnonzero(pc.is_valid(metadata).to_numpy(zero_copy_only=False)).tolist():
        for name, value in refined(metadata[i].as_py()).items():
            setattr(branches[i], name, value)
    return branches


def _no_nulls(part: pa.Table, names: tuple[str, ...]) -> None:
    """Raise StoreError when rows lack a value no node can be without."""
    for name in names:
        if part.column(name).null_count:
            raise StoreError(f"a stored node has no {name}; run `memtree-mcp doctor --repair`")

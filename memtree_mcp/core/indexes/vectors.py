"""An in-memory matrix of node vectors for exact, vectorised similarity search."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from memtree_mcp.core.embedding import Matrix, Vector


class VectorIndex:
    """Unit vectors in one contiguous float32 matrix, addressed by node id.

    Updates are O(1): the matrix grows by doubling (amortised, never once per insert), and a
    removed row is filled by the last one, so the index follows every insert without a rebuild; a
    search is one matrix-vector product over the filled rows. Brute force is exact and, measured
    in ``docs/findings/speed-at-scale.md``, fast enough up to 100k vectors of 384 dimensions.
    """

    def __init__(self, dimension: int, capacity: int = 1024) -> None:
        self.dimension = dimension
        self._matrix: Matrix = np.zeros((max(capacity, 1), dimension), dtype=np.float32)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}

    @classmethod
    def holding(cls, node_ids: Sequence[str], matrix: Matrix) -> VectorIndex:
        """An index of ``node_ids`` whose vectors are the first rows of ``matrix``, kept as its
        own, not copied: a writable float32 matrix with at least one row per id, the rest room to
        grow into (a snapshot's mapping, ``store/snapshot.py``).

        Raises ValueError for a matrix of too few rows or another type, or ids given twice.
        """
        if matrix.dtype != np.float32 or matrix.ndim != 2 or not matrix.flags.writeable:
            raise ValueError("the matrix held must be a writable float32 matrix")
        if len(matrix) < len(node_ids):
            raise ValueError(f"{len(node_ids)} ids but room for {len(matrix)} vectors")
        index = cls(matrix.shape[1], capacity=1)
        index._matrix = matrix
        index._ids = list(node_ids)
        index._rows = {node_id: row for row, node_id in enumerate(index._ids)}
        if len(index._rows) != len(index._ids):
            raise ValueError("holding takes distinct ids")
        return index

    def adopt(self, matrix: Matrix) -> bool:
        """Keep the vectors in ``matrix`` (its first rows equal to this index's, the rest room to
        grow into) instead of the matrix held; False, and nothing changed, when its rows are not
        the same values or it has no room to grow."""
        n = len(self._ids)
        if matrix.dtype != np.float32 or matrix.shape[1:] != (self.dimension,) or not matrix.flags.writeable:
            return False
        if len(matrix) <= n or not np.array_equal(matrix[:n], self._matrix[:n]):
            return False
        self._matrix = matrix
        return True

    def own(self) -> None:
        """Hold the vectors in a matrix of the index's own, if it was given one it shares with
        something else (:meth:`holding`): a copy, the same values."""
        if self._matrix.base is not None:
            self._matrix = np.array(self._matrix, dtype=np.float32)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._rows

    def upsert(self, node_id: str, vector: Vector) -> None:
        """Add the vector of ``node_id`` or replace it."""
        row = self._rows.get(node_id)
        if row is None:
            row = len(self._ids)
            self._reserve(row + 1)
            self._ids.append(node_id)
            self._rows[node_id] = row
        self._matrix[row] = vector

    def extend(self, node_ids: Sequence[str], vectors: Matrix) -> None:
        """Add many new ids at once (none of them already indexed), their vectors in one copy.

        Raises ValueError for an id already indexed or given twice, or a mismatched ``vectors``.
        """
        if len(vectors) != len(node_ids):
            raise ValueError(f"{len(node_ids)} ids but {len(vectors)} vectors")
        start = len(self._ids)
        rows = dict(zip(node_ids, range(start, start + len(node_ids)), strict=True))
        if len(rows) != len(node_ids) or not self._rows.keys().isdisjoint(rows):
            raise ValueError("extend takes new, distinct ids; use upsert to replace a vector")
        self._reserve(start + len(node_ids))
        self._matrix[start : start + len(node_ids)] = vectors
        self._ids.extend(node_ids)
        self._rows.update(rows)

    def _reserve(self, rows: int) -> None:
        """Make room for ``rows`` rows, doubling the matrix as often as needed."""
        capacity = self._matrix.shape[0]
        if rows <= capacity:
            return
        while capacity < rows:
            capacity *= 2
        grown = np.zeros((capacity, self.dimension), dtype=np.float32)
        grown[: len(self._ids)] = self._matrix[: len(self._ids)]
        self._matrix = grown

    def remove(self, node_id: str) -> str | None:
        """Forget ``node_id``; unknown ids are ignored.

        Returns the id whose vector moved into the freed row (it was in the last row), or None when
        no row moved; its ``row`` changes, nothing else does.
        """
        row = self._rows.pop(node_id, None)
        if row is None:
            return None
        last = len(self._ids) - 1
        moved: str | None = None
        if row != last:
            moved = self._ids[last]
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._rows[moved] = row
        self._ids.pop()
        return moved

    def ids(self) -> list[str]:
        """Every id, in row order."""
        return self._ids[:]

    def id_at(self, row: int) -> str:
        """The id in ``row``; raises IndexError."""
        return self._ids[row]

    def row(self, node_id: str) -> int:
        """The row of ``node_id`` in the arrays ``scores`` returns; raises KeyError."""
        return self._rows[node_id]

    @property
    def row_of(self) -> Mapping[str, int]:
        """Every id's row, read-only (valid until the next change)."""
        return MappingProxyType(self._rows)

    def vectors(self) -> Matrix:
        """The filled rows, as a read-only view (valid until the next change)."""
        view = self._matrix[: len(self._ids)]
        view.flags.writeable = False
        return view

    def score_array(self, query: Vector) -> np.ndarray:
        """The cosine of every row to ``query``, in row order (float32)."""
        return self._matrix[: len(self._ids)] @ query.astype(np.float32, copy=False)

    def scores(self, query: Vector) -> tuple[list[str], np.ndarray]:
        """Every id with its cosine to ``query``, in row order."""
        return self._ids[:], self.score_array(query)

    def search(self, query: Vector, k: int, min_score: float = -1.0) -> list[tuple[str, float]]:
        """The ``k`` ids with the highest cosine to ``query`` (at least ``min_score``), best first.

        Equal scores are ordered by id, so the same memory always answers in the same order.
        """
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        scores = self.score_array(query)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        ranked = sorted(((float(scores[i]), self._ids[i]) for i in top), key=lambda p: (-p[0], p[1]))
        return [(node_id, score) for score, node_id in ranked[:k] if score >= min_score]

"""An in-memory matrix of node vectors for exact, vectorised similarity search."""

from __future__ import annotations

import numpy as np

from memtree_mcp.core.embedding import Matrix, Vector


class VectorIndex:
    """Unit vectors in one contiguous float32 matrix, addressed by node id.

    Updates are O(1) (a removed row is filled by the last one), so the index follows every insert
    without a rebuild; a search is one matrix-vector product over the filled rows.
    """

    def __init__(self, dimension: int, capacity: int = 1024) -> None:
        self.dimension = dimension
        self._matrix: Matrix = np.zeros((max(capacity, 1), dimension), dtype=np.float32)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._rows

    def upsert(self, node_id: str, vector: Vector) -> None:
        """Add the vector of ``node_id`` or replace it."""
        row = self._rows.get(node_id)
        if row is None:
            row = len(self._ids)
            if row == self._matrix.shape[0]:
                grown = np.zeros((row * 2, self.dimension), dtype=np.float32)
                grown[:row] = self._matrix
                self._matrix = grown
            self._ids.append(node_id)
            self._rows[node_id] = row
        self._matrix[row] = vector

    def remove(self, node_id: str) -> None:
        """Forget ``node_id``; unknown ids are ignored."""
        row = self._rows.pop(node_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._rows[moved] = row
        self._ids.pop()

    def ids(self) -> list[str]:
        """Every id, in row order."""
        return self._ids[:]

    def row(self, node_id: str) -> int:
        """The row of ``node_id`` in the arrays ``scores`` returns; raises KeyError."""
        return self._rows[node_id]

    def scores(self, query: Vector) -> tuple[list[str], np.ndarray]:
        """Every id with its cosine to ``query``, in row order."""
        n = len(self._ids)
        return self._ids[:n], self._matrix[:n] @ query.astype(np.float32, copy=False)

    def search(self, query: Vector, k: int, min_score: float = -1.0) -> list[tuple[str, float]]:
        """The ``k`` ids with the highest cosine to ``query`` (at least ``min_score``), best first.

        Equal scores are ordered by id, so the same memory always answers in the same order.
        """
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        scores = self._matrix[:n] @ query.astype(np.float32, copy=False)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        ranked = sorted(((float(scores[i]), self._ids[i]) for i in top), key=lambda p: (-p[0], p[1]))
        return [(node_id, score) for score, node_id in ranked[:k] if score >= min_score]

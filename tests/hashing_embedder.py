"""A small deterministic embedder for tests of the trees' shape and of navigation, not of recall.

Each word of a text (lower-cased ``\\w+`` tokens) is hashed to one of 384 coordinates with a sign,
and a text is the normalised sum of its words: texts that share words are near, texts that share
none are nearly orthogonal, and the same text is the same vector on every machine and in every
run. It loads nothing and embeds a text in microseconds, where the real model takes seconds to load
and milliseconds a text on a busy two-core machine. Tests that measure what recall finds, or the
model itself, keep the real model (the ``embedder`` fixture in conftest.py).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from memtree_mcp.core.embedding import Matrix

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """A bag of hashed words in 384 dimensions (the default model's), rows of norm 1."""

    identity = "test:hashing-384"
    dimension = 384

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        """One row of norm 1 per text; a text without a word gets a fixed direction of its own."""
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            for word in _WORD.findall(text.lower()) or [""]:
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                where = int.from_bytes(digest[:4], "little") % self.dimension
                row[where] += 1.0 if digest[4] & 1 else -1.0
            norm = float(np.linalg.norm(row))
            if norm == 0.0:  # words that cancelled out: still a vector of norm 1
                row[0] = 1.0
            else:
                row /= norm
        return rows

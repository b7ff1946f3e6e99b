"""An embedder reached through ``litellm.embedding`` (OpenAI, Ollama, any OpenAI-compatible endpoint...).

Configured as ``litellm:<model>``, e.g. ``litellm:openai/text-embedding-3-small``. litellm is imported
on the first call, never at module import (see :func:`memtree_mcp.llm.endpoint.import_litellm`). If
the dimension is not given it is learnt by embedding one short probe text on first use; any later answer
of another length raises :class:`~memtree_mcp.errors.ProviderError`, as does any failed call.

Caveats: ``timeout`` bounds the whole call, its attempts included (litellm's OpenAI embedding path
turns ``retries=0`` into its default of 2 retries, ``DEFAULT_MAX_RETRIES``). On Python 3.11
``isinstance(e, Embedder)`` evaluates :attr:`LiteLLMEmbedder.dimension`, so it runs the probe call
when the dimension was not given.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memtree_mcp.core.embedding import Matrix
from memtree_mcp.errors import ProviderError
from memtree_mcp.llm.endpoint import EMBEDDING_REPLY_BYTES, LiteLLMEndpoint

__all__ = ["BATCH_SIZE", "PROBE_TEXT", "LiteLLMEmbedder"]

BATCH_SIZE = 64
PROBE_TEXT = "dimension probe"


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


class LiteLLMEmbedder:
    """Embeds texts with a remote model into float32 L2-normalised rows, ``batch_size`` texts per call."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        dimension: int | None = None,
        batch_size: int = BATCH_SIZE,
        retries: int = 1,
    ) -> None:
        if dimension is not None and dimension <= 0:
            raise ProviderError(f"the embedding dimension must be positive, got {dimension}")
        if batch_size <= 0:
            raise ProviderError(f"the embedding batch size must be positive, got {batch_size}")
        self.endpoint = LiteLLMEndpoint(
            model,
            api_base=api_base,
            api_key=api_key,
            timeout=timeout,
            retries=retries,
            kind="embedding",
            example="openai/text-embedding-3-small",
        )
        self.model = model
        self.batch_size = int(batch_size)
        self._dimension = dimension
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"LiteLLMEmbedder(model={self.model!r}, api_base={self.endpoint.api_base!r}, "
            f"dimension={self._dimension})"
        )

    @property
    def identity(self) -> str:
        return f"litellm:{self.model}"

    @property
    def dimension(self) -> int:
        """The vector length; probes the model with one short text the first time if it was not given."""
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = self._call([PROBE_TEXT]).shape[1]
        return self._dimension

    def _call(self, texts: list[str]) -> Matrix:
        """One embedding request; returns the raw (unnormalised, unchecked-dimension) float32 matrix."""
        response = self.endpoint.call("embedding", reply_bytes=EMBEDDING_REPLY_BYTES, input=texts)
        try:
            items = list(_field(response, "data"))
            if len(items) != len(texts):
                raise ValueError(f"{len(items)} vectors for {len(texts)} texts")
            indexed = []
            for position, item in enumerate(items):
                try:
                    index = _field(item, "index")
                except (KeyError, AttributeError):
                    index = None
                indexed.append((position if index is None else int(index), _field(item, "embedding")))
            indexed.sort(key=lambda pair: pair[0])
            if [i for i, _ in indexed] != list(range(len(texts))):
                raise ValueError("the vectors' indices do not match the inputs")
            matrix = np.asarray([vector for _, vector in indexed], dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[1] == 0:
                raise ValueError(f"vectors of unexpected shape {matrix.shape}")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"the embedding call with model {self.model!r} returned a malformed response "
                f"({type(exc).__name__}: {exc}); check that the endpoint speaks the embeddings API"
            ) from exc
        if not np.isfinite(matrix).all():
            raise ProviderError(f"the embedding model {self.model!r} returned non-finite values")
        return matrix

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``; returns shape (len(texts), dimension), float32 rows of norm 1, in input order."""
        dimension = self.dimension
        out = np.empty((len(texts), dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            # Providers reject empty inputs; a single space embeds as "nothing" without an error.
            chunk = [str(t) or " " for t in texts[start : start + self.batch_size]]
            matrix = self._call(chunk)
            if matrix.shape[1] != dimension:
                raise ProviderError(
                    f"the embedding model {self.model!r} returned vectors of dimension {matrix.shape[1]}, "
                    f"expected {dimension}; the model behind the endpoint changed — configure the original "
                    "model or re-embed the store with the new one"
                )
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            if (norms <= 1e-12).any():
                raise ProviderError(f"the embedding model {self.model!r} returned an all-zero vector")
            out[start : start + len(chunk)] = matrix / norms
        return out

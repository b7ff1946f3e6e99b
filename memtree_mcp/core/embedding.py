"""The embedder protocol that providers implement and the service consumes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def identity(self) -> str:
        """A stable name for the model and its weights; stored with the table."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``; returns an array of shape (len(texts), dimension), rows of norm 1."""
        ...


# The start of each offline embedder's identity, and the MEMTREE_EMBEDDER value that chooses it.
SETTINGS_BY_IDENTITY = {"local:all-MiniLM-L6-v2": "local", "local:multilingual-e5-small": "e5-small"}


def embedder_setting(identity: str) -> str:
    """How a user names the embedder of ``identity``: the MEMTREE_EMBEDDER value that chooses it
    (``local``, ``e5-small``, ``litellm:<model>``), or the identity itself when none does."""
    for start, setting in SETTINGS_BY_IDENTITY.items():
        if identity.startswith(start):
            return setting
    return identity


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Matrix:
    """``texts`` embedded as questions: by the embedder's ``embed_queries`` when it has one (a model
    trained with a question prefix, such as e5), else as any other text by ``embed_batch``."""
    method = getattr(embedder, "embed_queries", None)
    if method is not None:
        result: Matrix = method(texts)
        return result
    return embedder.embed_batch(texts)


def recall_weights(embedder: Embedder) -> dict[str, float]:
    """The fields of recall's ``Weights`` (``core/ranking/recall.py``) the embedder sets otherwise than the
    defaults, which were measured with the default embedder: its ``recall_weights`` if it has them."""
    return dict(getattr(embedder, "recall_weights", {}))

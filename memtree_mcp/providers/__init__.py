"""Embedders and LLMs behind the protocols of ``memtree_mcp.core``; each imported only when chosen."""

from __future__ import annotations

from memtree_mcp.core.embedding import Embedder
from memtree_mcp.errors import ProviderError

__all__ = ["make_embedder"]


def make_embedder(spec: str) -> Embedder:
    """The embedder named by ``spec`` (the MEMTREE_EMBEDDER setting).

    Raises ProviderError for a name this version does not provide.
    """
    if spec == "local":
        from memtree_mcp.providers.local import MiniLMEmbedder

        return MiniLMEmbedder()
    raise ProviderError(
        f"unknown embedder '{spec}'. This version provides 'local' (all-MiniLM-L6-v2, offline); "
        "set MEMTREE_EMBEDDER=local or remove the setting."
    )

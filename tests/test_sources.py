"""Memories kept elsewhere come over in one command: each source on a small fixture written here,
with what it adds, what it skips and why, and a rerun that adds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def home(empty_home: Path) -> Path:
    return empty_home


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


def test_a_folder_of_notes_comes_over_a_memory_per_section_with_its_tags_and_date(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "--from", "markdown", str(FIXTURES / "notes")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["imported 4 memories (0 already there)", "skipped 2 × section without text"]
    memories = {str(record["content"]).split("\n")[0]: record for record in exported(home)}
    assert set(memories) == {
        "## Deploys",
        "## Database",
        "Grandmother's bread needs a long rise overnight.",
        "## Soup",
    }
    deploys = memories["## Deploys"]
    assert "[[Release checklist]]" in str(deploys["content"])
    assert deploys["tags"] == ["work", "billing", "Billing service"]
    assert str(deploys["timestamp"]).startswith("2026-03-14T00:00:00")
    assert deploys["session"] == "projects/billing"
    assert "# not a heading" in str(memories["## Database"]["content"])
    soup = memories["## Soup"]
    assert soup["tags"] == ["home", "recipes", "cooking"]
    assert str(soup["timestamp"]).startswith("2025-12-01T18:30:00")

    assert main(["import", "--from", "markdown", str(FIXTURES / "notes")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "imported 0 memories (4 already there)"


def test_a_markdown_export_read_back_gives_the_same_memories(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = MemoryService(Settings(home=str(home), namespace="before"))
    try:
        first = service.remember(
            "The user's cat is called Miso.",
            tags=["pets", "a, b --> c"],
            session="chat 1",
            timestamp="2026-01-02T03:04:05Z",
        )
        service.remember("Meeting notes:\n\n## Agenda\n- budget\n\n```\n# code\n```", session="chat-2")
        service.remember(
            "The cat is called Mochi now.", supersedes=first.ids, timestamp="2026-02-03T04:05:06Z"
        )
        service.remember("A memory of no session, with 'quotes' and <html>.", role="assistant")
    finally:
        service.close()
    folder = tmp_path / "notes"
    assert main(["--namespace", "before", "export", "--format", "markdown", str(folder)]) == 0
    assert capsys.readouterr().out == f"exported 4 memories to 3 notes in {folder}\n"
    names = sorted(path.name for path in folder.iterdir())
    assert names[0] == "no-session.md" and names[2] == "session-chat-2.md"
    assert names[1].startswith("session-chat-1-")  # a space is not kept in a file name: a hash is
    note = (folder / "no-session.md").read_text(encoding="utf-8")
    assert "supersedes [[" in note and "The cat is called Mochi now." in note

    assert main(["--namespace", "after", "import", "--from", "markdown", str(folder)]) == 0
    assert capsys.readouterr().out == "imported 4 memories (0 already there)\n"
    key = lambda record: str(record["id"])  # noqa: E731
    # The same memories; their links are the import's (an import vouches only for itself).
    before = [
        {**r, "supersedes_by": ["import"]} if "supersedes" in r else r for r in exported(home, "before")
    ]
    assert sorted(exported(home, "after"), key=key) == sorted(before, key=key)
    assert main(["--namespace", "after", "import", "--from", "markdown", str(folder)]) == 0
    assert capsys.readouterr().out == "imported 0 memories (4 already there)\n"


def test_export_to_markdown_refuses_a_folder_that_holds_files(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["remember", "something"]) == 0
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.md").write_text("mine")
    assert main(["export", "--format", "markdown", str(tmp_path / "full")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an empty folder" in err
    assert (tmp_path / "full" / "mine.md").read_text() == "mine"


def test_a_csv_comes_over_through_a_column_mapping_and_a_rerun_adds_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import", "--from", "csv", str(FIXTURES / "notes_export.csv")]
    argv += ["--map", "content=note,timestamp=when,tags=labels,session=thread,role=who"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "imported 2 memories (0 already there)"
    assert (
        out[1].startswith("skipped 1 × refused (timestamp 'not a date' is not ISO 8601")
        and "1 × row without note" in out[1]
    )
    memories = {str(record["content"]): record for record in exported(home)}
    passport = memories["Renewed the passport, valid until 2036"]
    assert passport["tags"] == ["admin", "travel"] and passport["session"] == "t1"
    assert str(passport["timestamp"]).startswith("2026-04-01T09:00:00")
    dentist = memories["The dentist moved to Elm Street, number 12"]
    assert dentist["role"] == "assistant" and str(dentist["timestamp"]).startswith("2026-05-02")
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == "imported 0 memories (2 already there)"


def test_json_and_jsonl_come_over_through_a_mapping_with_dotted_columns_and_epoch_times(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "import",
        "--from",
        "json",
        str(FIXTURES / "chats.json"),
        "--map",
        "content=body.text,timestamp=at,tags=labels",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        "imported 2 memories (0 already there)",
        "skipped 1 × row not an object; 1 × row without body.text",
    ]
    argv = ["import", "--from", "jsonl", str(FIXTURES / "log.jsonl"), "--map", "content=msg,timestamp=ts"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        "imported 2 memories (0 already there)",
        "skipped 1 × line not JSON",
    ]
    memories = {str(record["content"]): record for record in exported(home)}
    assert str(memories["Prefers window seats on long flights"]["timestamp"]).startswith(
        "2026-01-01T00:00:00"
    )
    assert memories["Allergic to penicillin"]["tags"] == ["health", "important"]
    assert str(memories["Allergic to penicillin"]["timestamp"]).startswith("2026-01-05T09:00:00")
    assert str(memories["Backups run nightly at 02:00"]["timestamp"]).startswith("2026-03-01")


@pytest.mark.parametrize(
    ("mapping", "named"),
    [("content", "'content' is not field=column"), ("text=body", "'text' is not a field")],
)
def test_a_bad_mapping_is_one_line_naming_it_and_stores_nothing(
    mapping: str, named: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "--from", "csv", str(FIXTURES / "notes_export.csv"), "--map", mapping]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err and "content=text,timestamp=created_at" in err
    assert exported(home) == []

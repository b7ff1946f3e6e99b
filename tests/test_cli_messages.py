"""What the CLI says to a person: a suggestion for a typo, something on an empty store, counts in words.

In process through ``main``; the same commands in a subprocess, and the errors, are in
``test_first_hour.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memtree_mcp.cli import main
from memtree_mcp.core.wording import counted


@pytest.fixture
def home(empty_home: Path) -> Path:
    return empty_home


def test_counts_agree_in_number() -> None:
    assert [counted(n, "memory", "memories") for n in (0, 1, 2, 1234)] == [
        "0 memories",
        "1 memory",
        "2 memories",
        "1,234 memories",
    ]


@pytest.mark.parametrize(
    ("typed", "suggested"), [("remeber", "remember"), ("recal", "recall"), ("docter", "doctor")]
)
def test_a_mistyped_command_gets_the_closest_one_suggested(
    typed: str, suggested: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([typed, "something"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == (
        f"memtree-mcp: unknown command '{typed}'; did you mean '{suggested}'? (memtree-mcp --help)\n"
    )


def test_a_command_like_none_lists_the_commands(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["xyzzy"])
    err = capsys.readouterr().err
    assert err.startswith("memtree-mcp: unknown command 'xyzzy'; the commands are serve, install, remember")


def test_namespaces_on_an_empty_store_says_so_beside_the_listing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir()
    assert main(["namespaces"]) == 0
    printed = capsys.readouterr()
    assert (printed.out, printed.err) == ("", f"no namespaces yet in {home}\n")


def test_export_and_import_say_how_many_memories_in_words_that_agree(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backup = tmp_path / "backup.jsonl"
    assert main(["remember", "The user's cat is called Miso."]) == 0
    assert main(["export", str(backup)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"exported 1 memory to {backup}"

    assert main(["remember", "The user's dog is called Rex."]) == 0
    assert main(["export", str(backup)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"exported 2 memories to {backup}"
    assert len(backup.read_text().splitlines()) == 2

    single = tmp_path / "one.jsonl"
    single.write_text(json.dumps({"content": "The user's bird is called Kiwi."}) + "\n")
    assert main(["import", str(single)]) == 0
    assert capsys.readouterr().out == "imported 1 memory (0 already there)\n"
    assert main(["import", str(backup)]) == 0
    assert capsys.readouterr().out == "imported 0 memories (2 already there)\n"


def test_export_to_standard_output_prints_only_the_records(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["remember", "The user's cat is called Miso."]) == 0
    capsys.readouterr()
    assert main(["export"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["content"] == "The user's cat is called Miso."


def test_the_outline_of_one_memory_says_one_memory(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["remember", "The user's cat is called Miso."]) == 0
    capsys.readouterr()
    assert main(["tree", "--tree", "temporal"]) == 0
    assert capsys.readouterr().out.startswith("temporal tree · 1 memory")


@pytest.mark.slow
def test_a_command_piped_into_a_reader_that_stops_early_ends_without_a_traceback(tmp_path: Path) -> None:
    # Issue 31: `memtree-mcp doctor | head` ended in a BrokenPipeError traceback.
    import subprocess
    import sys

    home = tmp_path / "store"
    command = str(Path(sys.executable).with_name("memtree-mcp"))
    env = {**os.environ, "MEMTREE_HOME": str(home)}
    for i in range(3):
        subprocess.run([command, "remember", f"Note {i} about the staging database."], env=env, check=True)
    for args in (["doctor"], ["export"], ["tree"]):
        reader, writer = os.pipe()
        os.close(reader)  # the reader is gone before the command writes
        done = subprocess.run([command, *args], env=env, stdout=writer, stderr=subprocess.PIPE, timeout=120)
        os.close(writer)
        assert "Traceback" not in done.stderr.decode(), (args, done.stderr.decode())
        assert done.returncode == (1 if args == ["tree"] else 141), (args, done.returncode)  # rich's own

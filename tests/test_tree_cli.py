"""``memtree-mcp tree``: an outline a person can read in a terminal and a program can read from a pipe.

The plain outline MCP clients read (the ``outline`` resource) comes from the same walk of the tree.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from memtree_mcp import cli
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService
from memtree_mcp.service import memory_service as service_module
from memtree_mcp.service.outline import plain_outline
from memtree_mcp.ui.outline import outline_tree
from tests.hashing_embedder import HashingEmbedder


@pytest.fixture
def embedder() -> HashingEmbedder:
    """The outline's layout, not the model's grouping:
    the hashing embedder stands in for the model (conftest.py)."""
    return HashingEmbedder()


ANSI = re.compile(r"\x1b\[")
NOTES = [
    ("The staging database is Postgres 16 on port 5433.", "2026-03-02T09:00:00Z"),
    ("Backups of the staging database run every night at 02:00.", "2026-03-02T09:05:00Z"),
    ("The user's cat is called Miso and sleeps on the keyboard.", "2026-03-09T18:00:00Z"),
    ("Miso the cat is afraid of the vacuum cleaner.", "2026-03-09T18:02:00Z"),
    ("The team ships a release every second Tuesday.", "2026-03-20T11:00:00Z"),
    ("The user's favourite editor is Helix.", "2026-04-01T08:01:00Z"),
]


def store_of_notes(store: Path, embedder: object) -> Path:
    service = MemoryService(Settings(home=str(store), namespace="default"), embedder=embedder)  # type: ignore[arg-type]
    service.upkeep.import_memories({"content": text, "timestamp": at} for text, at in NOTES)
    service.close()
    return store


@pytest.fixture
def home(tmp_path: Path, embedder: HashingEmbedder) -> Path:
    return store_of_notes(tmp_path / "store", embedder)


@pytest.fixture(autouse=True)
def shared_embedder(monkeypatch: pytest.MonkeyPatch, embedder: HashingEmbedder) -> Iterator[None]:
    """The command builds its own service: hand it the already loaded model, and keep the umask it sets."""
    monkeypatch.setattr(
        service_module,
        "MemoryService",
        lambda settings, **kwargs: MemoryService(settings, embedder=embedder, **kwargs),
    )
    umask = os.umask(0o022)
    os.umask(umask)
    yield
    os.umask(umask)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_outline_shows_each_branch_with_its_label_count_and_time_span(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "tree", "--home", str(home), "--tree", "temporal", "--depth", "8")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "temporal tree · 6 memories · 2026-03-02 → 2026-04-01"
    branches = [line for line in lines[1:] if re.search(r"· \d+ memor(y|ies) ·", line)]
    assert branches, out
    for line in branches:
        assert re.search(r"· \d+ memor(y|ies) · 2026-\d\d-\d\d( → 2026-\d\d-\d\d)? \[b[0-9a-f]+\]$", line), (
            line
        )
    # Every memory appears once, by its first words, with its day and id.
    for text, at in NOTES:
        (line,) = [line for line in lines if text[:30] in line]
        assert f"· {at[:10]} [m" in line
    assert "├── " in out and "└── " in out


def test_piped_output_has_no_colour_codes_and_no_wrapped_lines(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "tree", "--home", str(home), "--depth", "20")
    assert status == 0
    assert not ANSI.search(out)
    # 6 memories, each on its own line: a wrapped line would break a memory over two.
    assert sum(1 for line in out.splitlines() if "[m" in line) == len(NOTES)


def test_a_terminal_gets_colour(home: Path, embedder: HashingEmbedder) -> None:
    service = MemoryService(Settings(home=str(home), namespace="default"), embedder=embedder)
    memory = service.memory()
    assert memory is not None
    screen = io.StringIO()
    Console(file=screen, force_terminal=True, color_system="standard", width=120).print(
        outline_tree(memory, "semantic", 3)
    )
    assert ANSI.search(screen.getvalue())
    service.close()


def test_depth_and_max_children_bound_the_outline(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, deep, _ = run(capsys, "tree", "--home", str(home), "--tree", "temporal", "--depth", "20")
    _, shallow, _ = run(capsys, "tree", "--home", str(home), "--tree", "temporal", "--depth", "1")
    assert len(shallow.splitlines()) < len(deep.splitlines())
    assert "(raise --depth)" in shallow and "(raise --depth)" not in deep
    _, capped, _ = run(capsys, "tree", "--home", str(home), "--depth", "20", "--max-children", "1")
    assert re.search(r"… and \d+ more", capped)
    assert sum(1 for line in capped.splitlines() if "[m" in line) < len(NOTES)


def test_a_namespace_not_there_says_so_and_names_the_ones_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    status, out, err = run(capsys, "tree", "--home", str(tmp_path / "empty"), "--namespace", "work")
    assert (status, out) == (2, "")
    assert err == f"memtree-mcp: no namespace 'work' in {tmp_path / 'empty'}; it holds no namespace yet\n"


def test_a_bad_depth_is_refused_with_a_message(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "tree", "--home", str(home), "--depth", "0")
    assert status == 2 and out == ""
    assert "depth must be a whole number from 1 to 20" in err


@pytest.mark.slow
def test_the_installed_command_prints_plain_text_into_a_pipe(tmp_path: Path, model_embedder: object) -> None:
    home = store_of_notes(tmp_path / "store", model_embedder)  # the command loads the model itself
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memtree_mcp",
            "tree",
            "--home",
            str(home),
            "--tree",
            "temporal",
            "--depth",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "40"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("temporal tree · 6 memories")
    assert not ANSI.search(done.stdout)
    # COLUMNS=40 does not wrap the lines: each memory stays on one line.
    assert sum(1 for line in done.stdout.splitlines() if "[m" in line) == len(NOTES)


def test_the_plain_outline_is_the_text_the_outline_resource_serves(service: MemoryService) -> None:
    assert plain_outline(service.memory(), "semantic", 3) == service.outline("semantic", 3)
    service.upkeep.import_memories({"content": text, "timestamp": at} for text, at in NOTES)
    memory = service.memory()
    assert memory is not None and memory.semantic.branches and memory.temporal.branches
    for tree in ("semantic", "temporal"):
        for depth in (1, 2, 3, 20):
            assert plain_outline(memory, tree, depth) == service.outline(tree, depth)

"""`memtree-mcp forget`: by id, or a query's list first; nothing is deleted that was not shown."""

from __future__ import annotations

import pytest

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService

FACTS = [
    "The staging password rotates every month.",
    "The user's cat is called Miso.",
    "Deploys go out every Tuesday.",
]


@pytest.fixture
def home(settings: Settings, embedder) -> str:  # type: ignore[no-untyped-def]
    service = MemoryService(settings, embedder=embedder)
    for fact in FACTS:
        service.remember(fact)
    service.close()
    return settings.home


def texts(home: str) -> set[str]:
    memory = MemoryService(Settings(home=home)).memory()
    return set() if memory is None else {leaf.text for leaf in memory.leaves.values()}


def test_a_query_only_lists_until_yes_and_yes_deletes_only_what_was_listed(
    home: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", home, "forget", "--query", "the staging password"]) == 0
    listed = capsys.readouterr().out
    assert "The staging password rotates every month." in listed and "--yes" in listed
    assert texts(home) == set(FACTS)
    assert main(["--home", home, "forget", "--query", "the staging password", "--yes"]) == 0
    assert "deleted 1 memory" in capsys.readouterr().out
    assert texts(home) == set(FACTS[1:])


def test_a_query_about_nothing_stored_deletes_nothing(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--home", home, "forget", "--query", "the football team's new coach", "--yes"]) == 0
    assert "deleted 0 memories" in capsys.readouterr().out
    assert texts(home) == set(FACTS)


def test_a_memory_goes_by_its_id_and_a_bad_call_is_one_line(
    home: str, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = MemoryService(Settings(home=home)).memory()
    assert memory is not None
    (cat,) = [leaf.id for leaf in memory.leaves.values() if "Miso" in leaf.text]
    assert main(["--home", home, "forget", cat]) == 0
    assert texts(home) == {FACTS[0], FACTS[2]}
    assert main(["--home", home, "forget"]) == 2
    assert "give the ids" in capsys.readouterr().err

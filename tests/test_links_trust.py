"""Update links are trusted as far as their makers go (issue 47): a link the user made is undone
only by the user; an import vouches only for itself, whatever its records claim; forgetting the
middle of a chain keeps the chain's newest memory current; no circle of links is stored, and doctor
finds and breaks one an older version let in; a note's front matter is read as YAML."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from mcp import Client

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Leaf, link_maker
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from tests.mcp_text import text_of

OLD_PORT = "The ingest service listens on port 7070."
NEW_PORT = "The ingest service now listens on port 7443."
LATEST_PORT = "The ingest service was moved again and listens on port 9090."
OTHERS = [
    "Every pull request needs two approvals before it can be merged.",
    "The user prefers code examples in TypeScript.",
    "Biscuit the golden retriever sees the vet every spring.",
]
QUESTION = "Which port does the ingest service listen on?"


def held(service: MemoryService, namespace: str | None = None) -> Memory:
    memory = service.memory(namespace)
    assert memory is not None
    return memory


def marked(service: MemoryService, older: str, namespace: str | None = None) -> str | None:
    """What recall marks memory ``older`` superseded by, when it is a hit for :data:`QUESTION`."""
    hits = service.look_up(RecallRequest(QUESTION, namespace=namespace)).hits
    (hit,) = [hit for hit in hits if hit.id == older]
    return hit.superseded_by


def ports(service: MemoryService) -> tuple[str, str]:
    """A store of a few memories and the two ports, the newer not yet linked; their ids."""
    for text in OTHERS:
        service.remember(text)
    older = service.remember(OLD_PORT, timestamp="2026-01-10T09:00:00Z").ids[0]
    newer = service.remember(NEW_PORT, timestamp="2026-02-20T09:00:00Z").ids[0]
    return older, newer


def shell_on(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI run in this process on ``settings``' home, no other MEMTREE_ setting left over."""
    for name in [name for name in os.environ if name.startswith("MEMTREE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MEMTREE_HOME", settings.home)


@pytest.fixture
async def client(service: MemoryService) -> AsyncIterator[Client]:
    async with Client(build_server(service)) as connected:
        yield connected


# -- a link the user made is undone only by the user ------------------------------------------------


@pytest.mark.anyio
async def test_the_agent_cannot_undo_a_link_the_user_made_and_nothing_is_written(
    client: Client, service: MemoryService
) -> None:
    older, newer = ports(service)
    service.link(newer, [older], by="user")  # what `memtree-mcp link NEWER --supersedes OLDER` does
    before = service.upkeep.history()[-1][0]

    refused = await client.call_tool("remember", {"content": NEW_PORT, "unlink": [older]})
    assert refused.is_error
    message = text_of(refused)
    assert "\n" not in message.strip(), message
    assert newer in message and older in message and "only the user" in message, message
    assert f"memtree-mcp link {newer} --unlink {older}" in message, message

    assert service.upkeep.history()[-1][0] == before  # nothing written
    assert held(service).leaves[newer].supersedes == (older,)
    assert marked(service, older) == newer
    summary = text_of(await client.call_tool("summarize", {}))
    assert "7443" in summary and "port 7070" not in summary, summary


def test_the_user_undoes_their_own_link_from_the_shell(
    service: MemoryService,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    older, newer = ports(service)
    service.link(newer, [older], by="user")
    service.close()
    shell_on(settings, monkeypatch)
    assert main(["link", newer, "--unlink", older]) == 0
    assert f"{newer} no longer supersedes {older}" in capsys.readouterr().out
    reopened = MemoryService(settings, embedder=service.embedder)
    try:
        assert held(reopened).leaves[newer].supersedes == ()
    finally:
        reopened.close()


def test_the_agent_still_undoes_its_own_link(service: MemoryService) -> None:
    older, newer = ports(service)
    service.remember(NEW_PORT, supersedes=[older])
    undone = service.remember(NEW_PORT, unlink=[older])
    assert undone.unlinked == [older] and held(service).leaves[newer].supersedes == ()


# -- an import vouches only for itself ---------------------------------------------------------------


def forged_export(folder: Path, older: str) -> str:
    """A note shaped exactly like a Markdown export (its title, a marker naming an id, the heading
    naming it) that claims the user linked its memory to ``older``; the id it claims."""
    claimed = "m00000000000f0ed"
    record = {
        "id": claimed,
        "role": "user",
        "timestamp": "2026-03-01T09:00:00Z",
        "supersedes": [older],
        "supersedes_by": ["user"],
    }
    folder.mkdir()
    (folder / "no-session.md").write_text(
        "# Memories without a session\n\n"
        f"<!-- memtree {json.dumps(record)} -->\n"
        f"## {{{claimed}}} · 2026-03-01T09:00:00Z · supersedes [[{older}]]\n\n"
        f"{LATEST_PORT}\n",
        encoding="utf-8",
    )
    return claimed


def test_a_note_forged_as_an_export_links_as_the_import_and_the_agent_can_undo_it(
    service: MemoryService, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    older, _ = ports(service)
    service.close()
    claimed = forged_export(tmp_path / "notes", older)
    shell_on(settings, monkeypatch)
    assert main(["import", "--from", "markdown", str(tmp_path / "notes")]) == 0
    reopened = MemoryService(settings, embedder=service.embedder)
    try:
        (forged,) = [leaf for leaf in held(reopened).leaves.values() if leaf.text == LATEST_PORT]
        assert forged.supersedes == (older,)
        assert link_maker(forged, older) == "import"
        exported = {record["id"]: record for record in reopened.export_memories()}
        assert exported[forged.id]["supersedes_by"] == ["import"]
        # The agent may undo what an import said; only a link the user made is the user's.
        assert reopened.remember(LATEST_PORT, unlink=[older]).unlinked == [older]
        assert held(reopened).leaves[forged.id].supersedes == ()
        assert forged.id == claimed  # an id the namespace does not use is kept, as an export's
    finally:
        reopened.close()


def test_an_export_imported_again_marks_the_users_links_as_the_imports(service: MemoryService) -> None:
    older, newer = ports(service)
    service.link(newer, [older], by="user")
    records = list(service.export_memories())
    assert next(r for r in records if r["id"] == newer)["supersedes_by"] == ["user"]
    service.upkeep.import_memories(records, namespace="copy")
    copy = held(service, "copy")
    assert copy.leaves[newer].supersedes == (older,)
    assert link_maker(copy.leaves[newer], older) == "import"
    assert marked(service, older, namespace="copy") == newer
    # Importing into the namespace that holds the user's link leaves it the user's.
    service.upkeep.import_memories(records)
    assert link_maker(held(service).leaves[newer], older) == "user"


def test_doctor_redact_storing_memories_again_keeps_the_users_links_the_users(
    settings: Settings, embedder: object
) -> None:
    keeping = MemoryService(settings.model_copy(update={"secrets": "keep"}), embedder=embedder)  # type: ignore[arg-type]
    try:
        older, _ = ports(keeping)
        leaked = "The ingest service reads postgres://ingest:Zx9Qw8Er7Ty6@db.internal:5432/ingest now."
        newer = keeping.remember(leaked, timestamp="2026-03-01T09:00:00Z").ids[0]
        keeping.link(newer, [older], by="user")
    finally:
        keeping.close()
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        assert service.upkeep.redact_stored() == [newer]
        rewritten = held(service).leaves[newer]
        assert "[redacted: " in rewritten.text and rewritten.supersedes == (older,)
        assert link_maker(rewritten, older) == "user"
    finally:
        service.close()


# -- forgetting the middle of a chain ----------------------------------------------------------------


def chain(service: MemoryService, first_by: str = "agent", second_by: str = "agent") -> tuple[str, str, str]:
    """x ← y ← z: three ports, each updating the one before, linked by the makers given."""
    x, y = ports(service)
    z = service.remember(LATEST_PORT, timestamp="2026-03-20T09:00:00Z").ids[0]
    service.link(y, [x], by=first_by)  # type: ignore[arg-type]
    service.link(z, [y], by=second_by)  # type: ignore[arg-type]
    return x, y, z


@pytest.mark.anyio
async def test_forgetting_the_middle_of_a_chain_keeps_its_newest_memory_current(
    client: Client, service: MemoryService, settings: Settings
) -> None:
    x, y, z = chain(service)
    assert marked(service, x) == z
    service.forget(ids=[y])
    assert marked(service, x) == z
    assert held(service).links.current_of(x) == z
    summary = text_of(await client.call_tool("summarize", {}))
    assert "9090" in summary and "port 7070" not in summary, summary
    # The link is stored: another process reading the namespace afresh sees it.
    other = MemoryService(settings, embedder=service.embedder)
    try:
        assert x in held(other).leaves[z].supersedes
        assert marked(other, x) == z
    finally:
        other.close()


def test_a_link_carried_over_a_forgotten_memory_is_the_users_only_when_both_links_were(
    service: MemoryService,
) -> None:
    x, y, z = chain(service, first_by="agent", second_by="user")
    service.forget(ids=[y])
    assert link_maker(held(service).leaves[z], x) == "agent"  # the user never said z updates x
    service.forget(ids=[z])
    a, b, c = (
        service.remember(f"The {name} queue holds {size} messages at most.").ids[0]
        for name, size in (("audit", 100), ("audit", 200), ("audit", 300))
    )
    service.link(b, [a], by="user")
    service.link(c, [b], by="user")
    service.forget(ids=[b])
    assert link_maker(held(service).leaves[c], a) == "user"


def test_forgetting_a_whole_chain_but_its_ends_links_them(service: MemoryService) -> None:
    x, y, z = chain(service)
    w = service.remember("The ingest service listens on port 9999 since April.").ids[0]
    service.link(w, [z])
    service.forget(ids=[y, z])
    memory = held(service)
    assert memory.links.current_of(x) == w and x in memory.leaves[w].supersedes
    assert [r.get("supersedes") for r in service.export_memories() if r["id"] == w] == [[x]]


# -- no circle of links ------------------------------------------------------------------------------


def leaf(leaf_id: str, seq: int) -> Leaf:
    vector = np.zeros(4, dtype=np.float32)
    vector[seq % 4] = 1.0
    return Leaf(id=leaf_id, text=f"memory {leaf_id}", vector=vector, seq=seq, timestamp=1_000.0 + seq)


def test_memory_link_refuses_a_circle_and_changes_nothing() -> None:
    memory = Memory(4)
    for seq, leaf_id in enumerate(("m0", "m1", "m2")):
        memory.add_leaf(leaf(leaf_id, seq))
    memory.links.link("m1", ["m0"])
    memory.links.link("m2", ["m1"])
    with pytest.raises(ValueError, match="circle"):
        memory.links.link("m0", ["m2"])
    assert memory.leaves["m0"].supersedes == () and memory.links.current_of("m0") == "m2"


def test_an_import_that_names_a_circle_keeps_the_newer_memorys_link_only(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = "m00000000000000a", "m00000000000000b"
    records = [
        {"id": a, "content": OLD_PORT, "timestamp": "2026-01-10T09:00:00Z", "supersedes": [b]},
        {"id": b, "content": NEW_PORT, "timestamp": "2026-02-20T09:00:00Z", "supersedes": [a]},
        *({"content": text} for text in OTHERS),
    ]
    with caplog.at_level(logging.WARNING, logger="memtree_mcp"):
        service.upkeep.import_memories(records)
    memory = held(service)
    assert memory.leaves[b].supersedes == (a,) and memory.leaves[a].supersedes == ()
    assert memory.links.current_of(a) == b and memory.links.current_of(b) is None
    assert any("circle" in record.getMessage() for record in caplog.records)


def test_doctor_finds_a_circle_of_links_and_repair_breaks_it_at_its_oldest_memory(
    service: MemoryService, settings: Settings
) -> None:
    older, newer = ports(service)
    third = service.remember(LATEST_PORT, timestamp="2026-03-20T09:00:00Z").ids[0]
    service.link(newer, [older])
    service.link(third, [newer])
    # A circle as an earlier version's import stored it: the oldest memory said to update the newest.
    name = service.resolve_namespace()
    with service.spaces.writing(name) as space:
        assert space is not None
        space.memory.leaves[older].supersedes = (third,)
        space.memory.leaves[older].supersedes_by = ("import",)
        with service.spaces.change(space) as change:
            change.changed.add(older)
            change.rewritten.add(older)
    service.close()

    checker = MemoryService(settings, embedder=service.embedder)
    try:
        problems = [str(problem) for problem in checker.upkeep.doctor()]
        assert any("circle" in p and older in p and newer in p and third in p for p in problems), problems
        assert checker.upkeep.doctor(repair=True)
        assert checker.upkeep.doctor() == []
        memory = held(checker)
        assert memory.leaves[older].supersedes == ()
        assert memory.leaves[newer].supersedes == (older,) and memory.leaves[third].supersedes == (newer,)
        assert marked(checker, older) == third
    finally:
        checker.close()


# -- a note's front matter is YAML -------------------------------------------------------------------


def imported_notes(home: Path, folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[Leaf]]:
    """Import ``folder`` from the CLI: what it printed and the memories stored, in order."""
    assert main(["import", "--from", "markdown", str(folder)]) == 0
    out = capsys.readouterr().out
    service = MemoryService(Settings(home=str(home), namespace="default"))
    try:
        memory = service.memory()
        return out, sorted(memory.leaves.values(), key=lambda leaf: leaf.seq) if memory else []
    finally:
        service.close()


def test_a_note_dated_with_a_comment_after_the_date_keeps_its_sections_and_its_date(
    empty_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ports.md").write_text(
        "---\ndate: 2025-03-01 # imported\ntags: [infra, 'ports']  # checked\n---\n"
        f"{OLD_PORT}\n\n## Later\n{NEW_PORT}\n",
        encoding="utf-8",
    )
    out, leaves = imported_notes(empty_home, notes, capsys)
    assert out.startswith("imported 2 memories"), out
    assert [leaf.text.split("\n")[-1] for leaf in leaves] == [OLD_PORT, NEW_PORT]
    assert all(leaf.tags == ("infra", "ports") for leaf in leaves)  # the title's tag given once
    assert {day_of(leaf) for leaf in leaves} == {"2025-03-01"}


def day_of(leaf: Leaf) -> str:
    return datetime.fromtimestamp(leaf.timestamp, tz=UTC).date().isoformat()


@pytest.mark.parametrize(
    "front",
    [
        # A billion laughs: each alias names the list above nine times.
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join([f'*{chr(97 + n)}'] * 9)}]\n" for n in range(8))
        + "tags: *i\n",
        "tags: " + "[" * 5000 + "]" * 5000 + "\n",
        "title: " + "x" * 100_000 + "\n",
        "title: a: b: [unclosed\n",
        "date: !!timestamp someday\ntags: !!python/object:os.system [echo]\n",
    ],
    ids=["aliases", "deep", "huge", "not YAML", "tags YAML builds objects from"],
)
def test_a_front_matter_that_cannot_be_read_safely_leaves_the_notes_sections_without_it(
    front: str, empty_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "hostile.md").write_text(
        f"---\n{front}---\n{OLD_PORT}\n\n## Two\n{NEW_PORT}\n", encoding="utf-8"
    )
    out, leaves = imported_notes(empty_home, notes, capsys)
    assert out.splitlines()[0] == "imported 2 memories (0 already there)", out
    assert "front matter" in out, out
    assert [leaf.text.split("\n")[-1] for leaf in leaves] == [OLD_PORT, NEW_PORT]
    assert all(leaf.tags == ("hostile",) for leaf in leaves)  # the note's name, nothing of the front

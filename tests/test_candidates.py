"""The current truth: ``remember`` proposes the older memories a new one may update, someone who
understands decides (the agent, the user, an LLM judge), and the newer of two memories on one
subject comes first whatever links exist. No mark is ever made without a stored link.

Core: the candidate finder and the newer-first order. Through the service and the CLI: links
stored with who made them, undone in one call, kept by export and import. The held-out look-alike
pairs (``bench/pairs_heldout.py``, written apart from the finder) remembered into one store: no
mark anywhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memtree_mcp.cli import main
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.candidates import newer_first, update_candidates, value_terms
from memtree_mcp.core.trees.model import Leaf, link_maker
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.rows import leaf_extras, leaf_metadata

DAY = 86_400.0
BENCH = Path(__file__).resolve().parents[1] / "bench"


def memory_of(embedder: MiniLMEmbedder, texts: list[str]) -> Memory:
    """A memory of ``texts``, a day apart, in order (ids m0, m1, ...)."""
    vectors = embedder.embed_batch(texts)
    memory = Memory(vectors.shape[1])
    for seq, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        memory.add_leaf(Leaf(id=f"m{seq}", text=text, vector=vector, seq=seq, timestamp=1e9 + DAY * seq))
    return memory


def offered(embedder: MiniLMEmbedder, memory: Memory, text: str, when: float = 2e9) -> list[str]:
    vector = embedder.embed_batch([text])[0]
    leaf = Leaf(id="new", text=text, vector=vector, seq=len(memory.leaves), timestamp=when)
    return [candidate.leaf.id for candidate in update_candidates(memory, leaf)]


def test_a_changed_fact_offers_the_memory_it_changes_and_an_unrelated_one_offers_nothing(
    embedder: MiniLMEmbedder,
) -> None:
    memory = memory_of(
        embedder,
        [
            "The ingest service listens on port 7070.",
            "Ines owns the billing module.",
            "The user prefers short pull requests.",
            "Design reviews happen on Thursdays at 14:00.",
            "Invoices are rendered to PDF with WeasyPrint.",
            "Nightly backups are kept for 7 days.",
        ],
    )
    assert offered(embedder, memory, "We moved the ingest service off 7070; it answers on 7443 now.") == [
        "m0"
    ]
    assert offered(embedder, memory, "Karl now owns the billing module.")[:1] == ["m1"]
    assert offered(embedder, memory, "The office plants are watered on Mondays.") == []
    assert (
        offered(embedder, memory, "Which port does the ingest service use?") == []
    )  # a question states nothing


def test_an_older_memory_already_updated_a_later_one_or_one_linked_is_not_offered(
    embedder: MiniLMEmbedder,
) -> None:
    memory = memory_of(
        embedder, ["The ingest service listens on port 7070.", "The ingest service listens on 7443."]
    )
    memory.links.link("m1", ["m0"])
    assert offered(embedder, memory, "The ingest service now listens on port 9000.") == ["m1"]
    # Backdated before both: it can update neither.
    assert offered(embedder, memory, "The ingest service listens on port 6000.", when=1.0) == []


def test_values_are_numbers_identifiers_and_names_but_not_the_speaker_of_a_told_turn() -> None:
    told = 'Alice said, "Then Bob moved TW-412 to port 9120 in Berlin."'
    assert value_terms(told) >= {"bob", "9120", "berlin", "tw-412"}
    assert "alice" not in value_terms('Alice said, "Bob moved the ticket."')


def test_of_two_related_memories_the_newer_comes_first_and_the_rest_keep_their_order(
    embedder: MiniLMEmbedder,
) -> None:
    memory = memory_of(
        embedder,
        [
            "The ingest service listens on port 7070.",
            "The user prefers short pull requests.",
            "The ingest service listens on port 7443.",
        ],
    )
    memory.leaves["m2"].may_update = ("m0",)
    leaves = [memory.leaves[i] for i in ("m0", "m1", "m2")]
    assert [leaf.id for leaf in newer_first(leaves)] == ["m2", "m0", "m1"]
    assert [leaf.id for leaf in newer_first(leaves[:2])] == ["m0", "m1"]


def test_a_leaf_row_keeps_who_made_each_link_and_a_link_stored_before_makers_is_the_agents() -> None:
    leaf = Leaf(id="m2", text="t", vector=None, seq=2, timestamp=0.0, supersedes=("m0", "m1"))  # type: ignore[arg-type]
    assert [link_maker(leaf, o) for o in ("m0", "m1")] == ["agent", "agent"]
    leaf.supersedes_by, leaf.may_update, leaf.judging = ("user", "llm"), ("m7",), True
    extras = leaf_extras(leaf_metadata(leaf))
    assert extras == {"judging": True, "supersedes_by": ("user", "llm"), "may_update": ("m7",)}
    assert leaf_metadata(Leaf(id="m3", text="t", vector=None, seq=3, timestamp=0.0)) is None  # type: ignore[arg-type]
    assert leaf_extras('{"judging":true}')["judging"] is True  # as older versions wrote it


def test_links_are_stored_with_who_made_them_exported_so_and_imported_as_the_imports(
    service: MemoryService, tmp_path: Path
) -> None:
    a = service.remember("The ingest service listens on port 7070.").ids[0]
    b = service.remember("The ingest service listens on port 7443.", supersedes=[a], by="agent").ids[0]
    c = service.remember("The ingest service listens on port 9000.").ids[0]
    service.link(c, [b], by="user")
    memory = service.memory()
    assert memory is not None
    assert link_maker(memory.leaves[b], a) == "agent" and link_maker(memory.leaves[c], b) == "user"
    records = list(service.export_memories())
    assert [r.get("supersedes_by") for r in records] == [None, ["agent"], ["user"]]
    copy = MemoryService(service.settings.model_copy(update={"namespace": "copy"}), embedder=service.embedder)
    try:
        copy.upkeep.import_memories(records)
        held = copy.memory()
        assert held is not None
        # An import vouches only for itself: what a file says the user linked is not the user's word.
        assert link_maker(held.leaves[c], b) == "import" and held.links.current_of(a) == c
    finally:
        copy.close()


def test_the_cli_links_as_the_user_undoes_in_one_call_and_refuses_a_circle(
    empty_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["remember", "The ingest service listens on port 7070.", "--json"]) == 0
    older = json.loads(capsys.readouterr().out)["ids"][0]
    assert main(["remember", "We moved the ingest service off 7070; it answers on 7443 now."]) == 0
    printed = capsys.readouterr().out
    newer = printed.split(": ", 1)[1].split(" ", 1)[0]
    assert f"memtree-mcp link {newer} --supersedes ID" in printed and older in printed
    assert main(["link", newer, "--supersedes", older]) == 0
    assert capsys.readouterr().out == f"{newer} supersedes {older}\n"
    assert main(["link", older, "--supersedes", newer]) == 2
    assert "cannot update one that updates it" in capsys.readouterr().err
    assert main(["link", newer, "--unlink", older]) == 0
    assert capsys.readouterr().out == f"{newer} no longer supersedes {older}\n{newer} supersedes nothing\n"


@pytest.mark.slow
def test_no_look_alike_pair_of_the_held_out_set_is_marked_without_a_link(service: MemoryService) -> None:
    sys.path.insert(0, str(BENCH))
    from pairs_heldout import PAIRS

    lookalikes = [pair for pair in PAIRS if not pair.update]
    assert len(lookalikes) >= 100
    for number, pair in enumerate(lookalikes):
        service.remember(pair.older, timestamp=f"2026-01-01T{number // 60:02d}:{number % 60:02d}:00Z")
        service.remember(pair.newer, timestamp=f"2026-06-01T{number // 60:02d}:{number % 60:02d}:00Z")
    for pair in lookalikes:
        hits = service.look_up(RecallRequest(pair.newer, k=10)).hits
        assert not any(hit.superseded_by for hit in hits), pair
    assert service.summarize(max_tokens=4000).summary.count("superseded") == 0

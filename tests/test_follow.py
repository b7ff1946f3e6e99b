"""Following another writer: a memory brought up to date with only what was committed since it was
read equals the same store read afresh, node for node and recall for recall.

Two tiers: in the core, a follower applies the nodes a writer changed and removed, batch by batch,
as a commit would carry them (property tests over random inserts and removals); through the
service, two services on one store (each with its own table handle, as two processes have) take
turns to remember, forget, restore and refine, and the one that did not write follows without
reading the table whole.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtree_mcp.config import Settings
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import STRATEGIES
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.semantic import SemanticTree
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.service.spaces import Space, Spaces
from memtree_mcp.store import table as tables
from memtree_mcp.store.fences import FENCE
from tests.hashing_embedder import HashingEmbedder
from tests.test_fast_paths import (
    DIM,
    WORDS,
    assert_arrays_match_a_fresh_build,
    queries,
    random_leaf,
    same_hits,
)
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants, memory_state
from tests.waiting import wait_until


@pytest.fixture
def embedder() -> HashingEmbedder:
    """A follower equals a fresh read whatever the vectors:
    the hashing embedder stands in for the model (conftest.py)."""
    return HashingEmbedder()


# -- the core: Memory.apply ---------------------------------------------------------------------


def nodes_of(memory: Memory) -> tuple[list[Leaf], list[Branch]]:
    """Copies of every node, as rows read back from a store would give them."""
    leaves = copy.deepcopy(list(memory.leaves.values()))
    branches = copy.deepcopy([*memory.semantic.branches.values(), *memory.temporal.branches.values()])
    return leaves, branches


def loaded(memory: Memory) -> Memory:
    """A fresh load of ``memory``'s nodes: what a process that reads the store whole holds."""
    fresh = Memory(memory.dimension)
    fresh.load(*nodes_of(memory))
    return fresh


def commit_rows(memory: Memory, changed: set[str], removed: set[str]) -> tuple[list[Leaf], list[Branch]]:
    """The rows one commit of ``changed`` carries, as copies (a commit writes the nodes as they are)."""
    leaves = [copy.deepcopy(memory.leaves[n]) for n in sorted(changed) if n in memory.leaves]
    branches = [copy.deepcopy(b) for n in sorted(changed) if (b := memory.branch(n)) is not None]
    assert len(leaves) + len(branches) == len(changed - removed)
    return leaves, branches


def timeline_by_id(memory: Memory) -> list[tuple[str, int]]:
    timeline = memory.timeline()
    return [
        (memory.leaf_index.id_at(int(r)), int(s))
        for r, s in zip(timeline.rows, timeline.segment, strict=True)
    ]


def assert_matrices_current(tree: SemanticTree) -> None:
    """Every children matrix the semantic tree keeps is the match vectors of the children it has now."""
    for branch_id, matrix in tree.children_matrices.items():
        children = tree.branches[branch_id].children
        expected = np.stack([tree.match_vector_of(c) for c in children])
        np.testing.assert_array_equal(matrix, expected)


def assert_same_memory(follower: Memory, fresh: Memory) -> None:
    """The follower holds what a fresh load holds: nodes, heights, indexes, timeline and recall."""
    assert memory_state(follower) == memory_state(fresh)
    assert follower.temporal.last_leaf == fresh.temporal.last_leaf
    assert follower.next_seq == fresh.next_seq
    for leaf in fresh.leaves.values():  # an exact copy is found as the same memory
        assert follower.duplicate_of(leaf.content_hash) == fresh.duplicate_of(leaf.content_hash) == leaf.id
    assert sorted(follower.leaf_index.ids()) == sorted(fresh.leaf_index.ids())
    for leaf_id in follower.leaves:
        np.testing.assert_array_equal(
            follower.leaf_index.vectors()[follower.leaf_index.row(leaf_id)], follower.leaves[leaf_id].vector
        )
    assert timeline_by_id(follower) == timeline_by_id(fresh)
    assert_arrays_match_a_fresh_build(follower)
    assert_matrices_current(follower.semantic)
    assert_semantic_invariants(follower.semantic)
    assert_temporal_invariants(follower.temporal)
    for vector, text in queries(len(follower.leaves), 3):
        for strategy in STRATEGIES:
            same_hits(follower, fresh, vector, text, strategy=strategy)
        for word in WORDS[:4]:
            assert follower.lexical.scores(word) == pytest.approx(fresh.lexical.scores(word), rel=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 2**32 - 1),
    st.lists(
        st.tuples(st.sampled_from(["add", "add", "remove", "link"]), st.booleans()), min_size=1, max_size=70
    ),
    st.integers(0, 40),
    st.sampled_from([3, 32]),
)
def test_a_follower_applying_each_commit_equals_a_fresh_load(
    seed: int, plan: list[tuple[str, bool]], before: int, fan_out: int
) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, DIM))
    writer = Memory(DIM)
    writer.semantic.max_fan_out = fan_out  # a small bound: full branches send leaves down
    for i in range(before):
        writer.add_leaf(random_leaf(rng, i, centres))
    follower = loaded(writer)
    # Built, so both must keep it up to date through inserts and removals.
    follower.timeline()
    writer.timeline()
    next_id = before
    changed: set[str] = set()
    removed: set[str] = set()
    for op, commit_now in plan:
        if op == "add" or not writer.leaves:
            leaf = random_leaf(rng, next_id, centres)
            if writer.leaves and rng.random() < 0.3:  # a memory that says it updates an earlier one
                leaf.supersedes = (str(rng.choice(sorted(writer.leaves))),)
            changed |= writer.add_leaf(leaf)
            next_id += 1
        elif op == "link":  # a stored memory given another link (remember of its duplicate)
            newer, older = (str(n) for n in rng.choice(sorted(writer.leaves), size=2))
            # As the writer does, a link that would close a circle is left out (link refuses it).
            if not writer.links.reaches(older, newer) and writer.links.link(newer, [older]):
                changed.add(newer)
        else:
            leaf_changed, leaf_removed = writer.remove_leaf(str(rng.choice(sorted(writer.leaves))))
            changed = (changed | leaf_changed) - leaf_removed
            removed |= leaf_removed
        if commit_now:
            follower.apply(*commit_rows(writer, changed, removed), removed)
            changed, removed = set(), set()
            fresh = loaded(writer)
            assert_same_memory(follower, fresh)
            assert timeline_by_id(writer) == timeline_by_id(fresh)
    follower.apply(*commit_rows(writer, changed, removed), removed)
    assert_same_memory(follower, loaded(writer))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(40, 120), st.integers(1, 20))
def test_a_follower_that_grew_its_own_children_matrices_keeps_them_current(
    seed: int, inserts: int, foreign: int
) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(2, DIM))
    writer = Memory(DIM)
    for i in range(inserts):
        writer.add_leaf(random_leaf(rng, i, centres))
    follower = loaded(writer)
    # A descent through a wide branch keeps its children's matrix in the follower too.
    for branch in list(follower.semantic.branches.values()):
        if branch.children:
            follower.semantic.children_matrix(branch)
    for i in range(inserts, inserts + foreign):
        changed = writer.add_leaf(random_leaf(rng, i, centres))
        follower.apply(*commit_rows(writer, changed, set()), set())
    assert_matrices_current(follower.semantic)
    assert_same_memory(follower, loaded(writer))


def test_a_follower_rebuilds_its_timeline_when_a_leaf_comes_back_before_the_last() -> None:
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(3, DIM))
    writer = Memory(DIM)
    for i in range(30):
        writer.add_leaf(random_leaf(rng, i, centres))
    earlier = nodes_of(writer)
    follower = loaded(writer)
    follower.timeline()
    target = sorted(writer.leaves)[5]
    changed, removed = writer.remove_leaf(target)
    follower.apply(*commit_rows(writer, changed, removed), removed)
    assert_same_memory(follower, loaded(writer))
    # A restore writes the earlier revisions again: the leaf returns with its old seq.
    restored = Memory(DIM)
    restored.load(*earlier)
    every = set(restored.leaves) | set(restored.semantic.branches) | set(restored.temporal.branches)
    gone = (set(follower.leaves) | set(follower.semantic.branches) | set(follower.temporal.branches)) - every
    follower.apply(*commit_rows(restored, every, gone), gone)
    assert target in follower.leaves
    assert_same_memory(follower, loaded(restored))


# -- through the service: two services, one store -------------------------------------------------


class Reads:
    """Counts how often a service reads a namespace's table whole."""

    def __init__(self, spaces: Spaces, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = spaces.reload

        def counted(space: Space) -> None:
            self.count += 1
            original(space)

        monkeypatch.setattr(spaces, "reload", counted)


def loaded_after(
    pair: tuple[MemoryService, MemoryService], notes: Sequence[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[MemoryService, MemoryService, Reads]:
    """The writer of ``pair`` remembers ``notes``, the follower loads them (its first read, a whole
    one), and from then on the follower's whole reads are counted."""
    writer, follower = pair
    for note in notes:
        writer.remember(note)
    assert follower.memory() is not None
    return writer, follower, Reads(follower.spaces, monkeypatch)


def memory_of(service: MemoryService) -> Memory:
    memory = service.memory()
    assert memory is not None
    return memory


def fresh_memory(settings: Settings, embedder: object) -> Memory:
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        memory = service.memory()
        assert memory is not None
        return memory
    finally:
        service.close()


@pytest.fixture
def pair(settings: Settings, embedder: object) -> Iterator[tuple[MemoryService, MemoryService]]:
    first = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    second = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    yield first, second
    first.close()
    second.close()


NOTES = [
    "The team standup moved to 9:30 on Tuesdays.",
    "Biscuit the retriever hates the vacuum cleaner.",
    "Our staging cluster runs Postgres 16 on port 5433.",
    "Ana's cello recital is on the 14th at the conservatory.",
    "The CI pipeline caches wheels between runs.",
    "I prefer window seats on long flights.",
]


def assert_follows_without_reading_whole(
    follower: MemoryService, reads: Reads, settings: Settings, embedder: object
) -> Memory:
    before = reads.count
    memory = follower.memory()
    assert memory is not None
    assert reads.count == before, "the follower read the table whole"
    fresh = fresh_memory(settings, embedder)
    assert memory_state(memory) == memory_state(fresh)
    assert memory.next_seq == fresh.next_seq
    assert_arrays_match_a_fresh_build(memory)
    return memory


def assert_reads_whole_once(
    follower: MemoryService, reads: Reads, settings: Settings, embedder: object
) -> Memory:
    """The follower's next look reads the table whole, once, and then equals a fresh load."""
    before = reads.count
    memory = follower.memory()
    assert memory is not None
    assert reads.count == before + 1, "the follower did not read the table whole (once)"
    assert memory_state(memory) == memory_state(fresh_memory(settings, embedder))
    return memory


def test_a_second_service_follows_remember_forget_and_restore_without_reading_the_table_whole(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, follower, reads = loaded_after(pair, NOTES[:1], monkeypatch)

    for note in NOTES[1:]:
        writer.remember(note, session="s1")
        assert_follows_without_reading_whole(follower, reads, settings, embedder)
    assert follower.look_up(RecallRequest("retriever vacuum", k=1)).hits[0].text == NOTES[1]

    version = writer.upkeep.history()[-1][0]
    target = writer.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits[0].id
    writer.forget(node_id=target)
    memory = assert_follows_without_reading_whole(follower, reads, settings, embedder)
    assert target not in memory.leaves
    assert all("cello" not in h.text for h in follower.look_up(RecallRequest("cello recital", k=5)).hits)

    writer.upkeep.restore(str(version))
    memory = assert_follows_without_reading_whole(follower, reads, settings, embedder)
    assert target in memory.leaves
    assert follower.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits[0].id == target

    # The follower writes in turn, and the first service follows it.
    back = Reads(writer.spaces, monkeypatch)
    follower.remember("The retro is on Friday afternoons.")
    assert_follows_without_reading_whole(writer, back, settings, embedder)


def test_a_watching_server_catches_up_with_another_process_s_writes_before_it_is_asked(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A server follows in the background: the next call after another client's remember, forget
    # or restore finds the memory already caught up, applied incrementally, equal to a fresh load.
    writer, follower, reads = loaded_after(pair, NOTES[:1], monkeypatch)
    follower.spaces.watch(every=0.02)
    space = follower.spaces[settings.namespace]
    target = writer.remember(NOTES[2]).ids[0]
    steps = [
        lambda: writer.remember(NOTES[1]),
        lambda: writer.forget(node_id=target),
        lambda: writer.upkeep.restore("2"),
    ]
    for step in steps:
        step()
        written = writer.spaces[settings.namespace].version
        # Nothing asks the follower anything meanwhile: it catches up in the background.
        wait_until(lambda: space.version == written, 10, what="the follower to catch up")  # noqa: B023
        with space.lock:
            assert memory_state(space.memory) == memory_state(fresh_memory(settings, embedder))
    assert reads.count == 0, "the follower read the table whole instead of following it"
    assert target in space.memory.leaves  # restored
    watcher = follower.spaces.watcher
    assert watcher is not None
    follower.close()
    assert not watcher.is_alive()


def test_a_follower_follows_across_compactions_without_reading_the_table_whole(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tables, "COMPACT_EVERY", 2)
    writer, follower, reads = loaded_after(pair, NOTES[:1], monkeypatch)
    for note in NOTES[1:]:
        writer.remember(note)
        assert_follows_without_reading_whole(follower, reads, settings, embedder)
    # Several commits and compactions at once are followed as well.
    writer.remember("The printer on the third floor is out of toner.")
    writer.remember("Lunch on Fridays is at the Thai place.")
    writer.remember("The VPN certificate expires in June.")
    assert_follows_without_reading_whole(follower, reads, settings, embedder)


def test_a_rewritten_table_is_read_whole_and_still_equals_a_fresh_load(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, follower, reads = loaded_after(pair, NOTES[:1], monkeypatch)
    monkeypatch.setattr(tables, "SQUASH_SLACK", -10_000)  # every commit squashes the table
    table = writer.spaces["default"].table
    table.history = 0.0  # and keeps no history: only the latest rows stay
    writer.remember(NOTES[1])
    snapshot = table.read()
    ids = table.lance.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
    nodes = [node for node in ids if not node.startswith(FENCE)]  # the rewrite ends with its marker
    assert len(nodes) == len(snapshot.leaves) + len(snapshot.branches)  # one row a node
    assert_reads_whole_once(follower, reads, settings, embedder)


def test_a_follower_whose_version_s_files_a_compaction_deleted_reads_the_latest_instead(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, follower = pair
    writer.remember(NOTES[0])
    follower.memory()
    seen = follower.spaces["default"].table
    monkeypatch.setattr(tables, "COMPACT_EVERY", 2)
    for note in NOTES[1:4]:
        writer.remember(note)  # two compactions; the files of the follower's version are gone
    with pytest.raises(Exception, match="Not found"):
        seen.lance.to_arrow()  # where a read under way at that version stands
    changes = seen.changes()  # the same read, through the table: it starts again from the latest
    assert changes is not None and changes.version == writer.spaces["default"].table.latest_version()
    assert {leaf.text for leaf in changes.leaves} == set(NOTES[1:4])


def test_rows_written_behind_the_generation_s_back_are_noticed_by_their_count(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, follower, reads = loaded_after(pair, NOTES[:3], monkeypatch)
    # Something rewrites the table with fewer rows and no new generation (not this code).
    table = writer.spaces["default"].table.lance
    rows = table.to_arrow()
    first_commit = pc.equal(rows.column("rev"), pc.min(rows.column("rev")))
    table.add(rows.filter(first_commit), mode="overwrite")  # the first memory, whole
    assert_reads_whole_once(follower, reads, settings, embedder)


def test_rows_deleted_behind_the_generation_s_back_are_noticed_even_after_more_appends(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, follower, reads = loaded_after(pair, NOTES[:3], monkeypatch)
    # Something deletes early rows in place (not this code; superseded revisions of the roots, so
    # the content stays whole), then more is appended than it took: the count alone would add up,
    # the last row seen has moved.
    table = writer.spaces["default"].table.lance
    table.delete("rev = 0 AND kind = 'root'")
    writer.remember(NOTES[3])
    mine = follower.spaces["default"].table
    mine.latest_version()
    assert mine.changes() is None  # told, not found out when the rows fail to apply
    assert_reads_whole_once(follower, reads, settings, embedder)


def test_a_purge_is_read_whole_by_a_follower_which_then_follows_again(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, follower, reads = loaded_after(pair, NOTES, monkeypatch)
    target = writer.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits[0].id
    before = time.time()
    writer.forget(ids=[target])
    assert_follows_without_reading_whole(follower, reads, settings, embedder)
    # The follower dates the forget from the rows it followed, so its own reads can purge when due.
    assert follower.spaces["default"].table.oldest_forget == writer.spaces["default"].table.oldest_forget
    assert before - 1 <= (follower.spaces["default"].table.oldest_forget or 0) <= time.time()

    writer.upkeep.purge()
    # More is appended after the rewrite than it took away: the row count alone would add up; the
    # purge's new generation says the rows seen are gone.
    mine = follower.spaces["default"].table
    table = writer.spaces["default"].table.lance
    for i in range(100):
        if table.count_rows() > mine.row_count_seen:
            break
        writer.remember(f"Note {i}: {WORDS[i % len(WORDS)]} and {WORDS[(7 * i) % len(WORDS)]}.")
    assert table.count_rows() > mine.row_count_seen
    assert mine.latest_generation() != mine.generation_seen
    assert mine.changes() is None
    memory = assert_reads_whole_once(follower, reads, settings, embedder)
    assert target not in memory.leaves
    assert memory_state(memory) == memory_state(fresh_memory(settings, embedder))
    assert follower.spaces["default"].table.oldest_forget is None

    writer.remember("The retro is on Friday afternoons.")
    assert_follows_without_reading_whole(follower, reads, settings, embedder)


def test_a_re_indexed_store_is_read_whole_by_a_follower(
    pair: tuple[MemoryService, MemoryService],
    settings: Settings,
    embedder: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, follower, reads = loaded_after(pair, NOTES, monkeypatch)
    writer.upkeep.reindex()
    assert_reads_whole_once(follower, reads, settings, embedder)


operations = st.lists(
    st.tuples(st.integers(0, 1), st.sampled_from(["remember", "remember", "forget"]), st.integers(0, 10_000)),
    min_size=1,
    max_size=10,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations)
def test_two_services_taking_turns_at_random_always_see_what_a_fresh_load_sees(
    tmp_path: Path, embedder: object, ops: list[tuple[int, str, int]]
) -> None:
    home = tmp_path / f"store-{uuid.uuid4().hex}"
    settings = Settings(home=str(home), namespace="default")
    services = [MemoryService(settings, embedder=embedder) for _ in range(2)]  # type: ignore[arg-type]
    try:
        for who, op, number in ops:
            service = services[who]
            memory = service.memory()
            if op == "remember" or memory is None or not memory.leaves:
                words = " ".join(WORDS[(number + k) % len(WORDS)] for k in range(3))
                service.remember(f"Note {number}: {words}.", session=f"s{number % 3}")
            else:
                service.forget(node_id=sorted(memory.leaves)[number % len(memory.leaves)])
            fresh = fresh_memory(settings, embedder)
            for each in services:
                seen = each.memory()
                assert seen is not None and memory_state(seen) == memory_state(fresh)
                assert_arrays_match_a_fresh_build(seen)
    finally:
        for service in services:
            service.close()


STEP = """
import sys
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService
service = MemoryService(Settings(home=sys.argv[1]))
op, arg = sys.argv[2], sys.argv[3]
if op == "remember":
    service.remember(arg)
elif op == "forget":
    service.forget(node_id=arg)
else:
    service.upkeep.restore(arg)
service.close()
"""


@pytest.mark.slow
def test_a_service_follows_another_process_s_remember_forget_and_restore_without_reading_whole(
    settings: Settings, model_embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = model_embedder  # the other process writes with the model it loads itself
    import subprocess
    import sys

    def other_process(op: str, arg: str) -> None:
        done = subprocess.run(
            [sys.executable, "-c", STEP, settings.home, op, arg], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr

    other_process("remember", NOTES[0])
    follower = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        assert follower.memory() is not None
        reads = Reads(follower.spaces, monkeypatch)
        for note in NOTES[1:4]:
            other_process("remember", note)
            assert_follows_without_reading_whole(follower, reads, settings, embedder)
        version = follower.upkeep.history()[-1][0]
        (cello,) = [leaf.id for leaf in memory_of(follower).leaves.values() if "cello" in leaf.text]
        other_process("forget", cello)
        memory = assert_follows_without_reading_whole(follower, reads, settings, embedder)
        assert cello not in memory.leaves
        other_process("restore", str(version))
        memory = assert_follows_without_reading_whole(follower, reads, settings, embedder)
        assert cello in memory.leaves
    finally:
        follower.close()

"""remember and recall as a user of the service sees them, on a real store and the real embedder."""

from __future__ import annotations

import re

import pytest

from memtree_mcp.config import Settings
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants


def table_version(service: MemoryService, namespace: str = "default") -> int | None:
    table = service.store.open(namespace, create=False)
    return None if table is None else table.latest_version()


def test_what_is_remembered_is_recalled_first(service: MemoryService) -> None:
    service.remember("Biscuit is my golden retriever.", timestamp="2024-05-08")
    service.remember("The staging database is Postgres 16 on port 5433.")
    service.remember("My sister Ana teaches physics in Lisbon.")
    hits = service.look_up(RecallRequest("what port is the staging database on?", k=3)).hits
    assert hits[0].text == "The staging database is Postgres 16 on port 5433."
    assert hits[0].kind == "leaf" and hits[0].score > 0.4
    dog = service.look_up(RecallRequest("what is my dog called", k=1)).hits[0]
    assert dog.text == "Biscuit is my golden retriever."
    assert dog.time_from == dog.time_to == "2024-05-08T00:00:00Z"


def test_related_memories_are_gathered_under_a_summary_with_a_breadcrumb(service: MemoryService) -> None:
    service.remember("Biscuit is my golden retriever.")
    service.remember("Biscuit the golden retriever loves swimming in the lake.")
    second = service.remember("Biscuit the golden retriever had his vaccinations on Tuesday.")
    assert second.path and "biscuit" in second.path[0].label
    hits = service.look_up(RecallRequest("Biscuit the golden retriever", k=8)).hits
    summaries = [h for h in hits if h.kind == "summary"]
    assert summaries and "Biscuit" in summaries[0].text
    leaf = next(h for h in hits if h.kind == "leaf")
    assert leaf.breadcrumb and "biscuit" in leaf.breadcrumb[0]


def test_an_exact_duplicate_is_not_stored_twice(service: MemoryService) -> None:
    first = service.remember("I prefer tabs over spaces.")
    version = table_version(service)
    again = service.remember("  I prefer tabs over spaces.  ")
    assert again.deduplicated and again.ids == first.ids
    assert table_version(service) == version
    assert (
        len([h for h in service.look_up(RecallRequest("tabs or spaces", k=10)).hits if h.kind == "leaf"]) == 1
    )


def test_long_content_is_split_into_ordered_chunks(service: MemoryService) -> None:
    paragraphs = [f"Chapter {i}: " + " ".join(f"w{i}x{j}" for j in range(150)) for i in range(5)]
    stored = service.remember("\n\n".join(paragraphs))
    assert len(stored.ids) == 5 and len(set(stored.ids)) == 5
    memory = service.memory()
    assert memory is not None
    seqs = [memory.leaves[i].seq for i in stored.ids]
    assert seqs == sorted(seqs)
    assert memory.leaves[stored.ids[2]].text.startswith("Chapter 2:")


def test_recall_on_an_empty_namespace_finds_nothing_and_creates_nothing(service: MemoryService) -> None:
    assert service.look_up(RecallRequest("anything", namespace="empty-one")).hits == []
    assert "empty-one" not in service.store.namespaces()


def test_namespaces_never_see_each_other(service: MemoryService) -> None:
    service.remember("Project Alpha uses Django.", namespace="alpha")
    service.remember("Project Beta uses Rails.", namespace="beta")
    assert [
        h.text for h in service.look_up(RecallRequest("which web framework", namespace="alpha")).hits
    ] == ["Project Alpha uses Django."]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"content": ""}, "content is empty"),
        ({"content": " \n\t "}, "content is empty"),
        ({"content": "x" * 100_001}, "limit is 100,000"),
        ({"content": "null\x00byte"}, "U+0000"),
        ({"content": "bell\x07"}, "U+0007"),
        ({"content": "lone \ud800 surrogate"}, "U+D800"),
        ({"content": "ok", "timestamp": "last Tuesday"}, "not ISO 8601"),
        ({"content": "ok", "timestamp": "2024-13-45"}, "not ISO 8601"),
        ({"content": "ok", "timestamp": "0001-01-01T00:00:00+14:00"}, "outside the years 1900 to 2199"),
        ({"content": "ok", "timestamp": "9999-12-31T23:59:59-14:00"}, "outside the years 1900 to 2199"),
        ({"content": "ok", "namespace": "../../etc"}, "invalid namespace"),
        ({"content": "ok", "namespace": "a" * 65}, "invalid namespace"),
        ({"content": "ok", "tags": ["x" * 65]}, "each tag"),
        ({"content": "ok", "tags": [f"t{i}" for i in range(33)]}, "at most 32 tags"),
        ({"content": "ok", "role": ""}, "role"),
        ({"content": "ok", "session": "s\n1"}, "session"),
    ],
)
def test_bad_remember_input_is_refused_and_writes_nothing(
    service: MemoryService, arguments: dict[str, object], message: str
) -> None:
    service.remember("An existing memory.")
    version = table_version(service)
    with pytest.raises(InvalidInput, match=re.escape(message)):
        service.remember(**arguments)  # type: ignore[arg-type]
    assert table_version(service) == version
    assert service.store.namespaces() == ["default"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": ""}, "query is empty"),
        ({"query": "q", "k": 0}, "k must be"),
        ({"query": "q", "k": 101}, "k must be"),
        ({"query": "q", "max_tokens": 0}, "max_tokens must be"),
        ({"query": "q" * 4001}, "limit is 4,000"),
    ],
)
def test_bad_recall_input_is_refused(
    service: MemoryService, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        service.look_up(RecallRequest(**arguments))  # type: ignore[arg-type]


def test_recall_is_identical_after_a_restart(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    first = MemoryService(settings, embedder=embedder)
    for fact in [
        "The deploy script lives in ops/deploy.sh.",
        "Deploys happen on Tuesdays after the standup.",
        "Rollbacks use the previous container tag.",
        "Ana prefers green tea.",
    ]:
        first.remember(fact)
    before = first.look_up(RecallRequest("how do we deploy and roll back", k=6))
    first.close()
    after = MemoryService(settings, embedder=embedder).look_up(
        RecallRequest("how do we deploy and roll back", k=6)
    )
    assert after == before


CONVERSATION = [
    ("2023-05-08T10:00:00Z", "s1", "What did you name the new puppy?"),
    ("2023-05-08T10:01:00Z", "s1", "Biscuit! He is a golden retriever and already chews everything."),
    ("2023-05-08T10:02:00Z", "s1", "Ha, mine did that too when she was young."),
    ("2023-06-20T18:00:00Z", "s2", "I finally started the pottery class at the community centre."),
    ("2023-06-20T18:01:00Z", "s2", "My first bowl came out lopsided but I love it."),
    ("2023-09-02T09:00:00Z", "s3", "We are moving to Lisbon in October for my new job."),
    ("2023-09-02T09:01:00Z", "s3", "The company is a small robotics startup near the river."),
]
# Two people talk, turn about.
SPEAKERS = ("Ana", "Ben")


@pytest.fixture
def chat(service: MemoryService) -> MemoryService:
    for turn, (timestamp, session, text) in enumerate(CONVERSATION):
        service.remember(text, role=SPEAKERS[turn % 2], timestamp=timestamp, session=session, tags=[session])
    return service


def test_hybrid_recall_brings_the_answer_said_right_after_the_question(chat: MemoryService) -> None:
    hits = chat.look_up(RecallRequest("What is the puppy called?", k=2, kind="leaf")).hits
    texts = [h.text for h in hits]
    assert "Biscuit! He is a golden retriever and already chews everything." in texts


def test_exact_words_count_in_hybrid_recall(chat: MemoryService) -> None:
    top = chat.look_up(RecallRequest("robotics", k=1, kind="leaf")).hits[0]
    assert top.text == "The company is a small robotics startup near the river."


def test_recall_filters_by_time_tags_session_and_kind(chat: MemoryService) -> None:
    # min_relevance=0: every hit the filters let through, whatever its relevance.
    june = chat.look_up(
        RecallRequest(
            "my hobbies", k=10, time_from="2023-06-01", time_to="2023-06-30T23:59:59Z", min_relevance=0.0
        )
    ).hits
    assert june and all(h.time_from.startswith("2023-06") for h in june)
    tagged = chat.look_up(RecallRequest("the new job", k=10, tags=["s3"], min_relevance=0.0)).hits
    assert {h.text for h in tagged} <= {CONVERSATION[5][2], CONVERSATION[6][2]} and tagged
    assert all(h.kind == "leaf" for h in tagged)
    in_session = chat.look_up(RecallRequest("pottery bowl", k=10, session="s2", min_relevance=0.0)).hits
    assert {h.text for h in in_session} == {CONVERSATION[3][2], CONVERSATION[4][2]}
    summaries = chat.look_up(
        RecallRequest("puppy", k=10, kind="summary", strategy="collapsed", min_relevance=0.0)
    ).hits
    assert summaries and all(h.kind == "summary" for h in summaries)
    everything = chat.look_up(
        RecallRequest("the move to Lisbon", k=20, kind="summary", min_relevance=0.0)
    ).hits
    assert everything and all(h.kind == "summary" and h.covers >= 2 for h in everything)


def test_both_strategies_answer_and_unknown_ones_are_refused(chat: MemoryService) -> None:
    for strategy in ("hybrid", "collapsed"):
        assert chat.look_up(RecallRequest("Lisbon job", k=3, strategy=strategy)).hits
    with pytest.raises(InvalidInput, match="unknown strategy"):
        chat.look_up(RecallRequest("x", strategy="psychic"))
    with pytest.raises(InvalidInput, match="unknown kind"):
        chat.look_up(RecallRequest("x", kind="everything"))
    with pytest.raises(InvalidInput, match="ISO 8601"):
        chat.look_up(RecallRequest("x", time_from="last week"))


def test_a_query_about_nothing_stored_recalls_nothing(chat: MemoryService) -> None:
    assert chat.look_up(RecallRequest("zzzz qqqq xyzzy", k=5)).hits == []
    assert chat.look_up(RecallRequest("tax deadline for freelancers", k=5)).hits == []


def test_expanding_summaries_returns_their_memories_once_each(chat: MemoryService) -> None:
    plain = chat.look_up(
        RecallRequest("the puppy Biscuit", k=6, strategy="collapsed", kind="summary", min_relevance=0.0)
    )
    summary = next(h for h in plain.hits if h.kind == "summary")
    memory = chat.memory()
    assert memory is not None
    branch = memory.branch(summary.id)
    assert branch is not None
    expanded = chat.look_up(
        RecallRequest("the puppy Biscuit", k=20, strategy="collapsed", expand=True, min_relevance=0.0)
    ).hits
    ids = [h.id for h in expanded]
    assert all(h.kind == "leaf" for h in expanded) and len(ids) == len(set(ids))
    under = {n for n in memory.leaves if branch.first_seq <= memory.leaves[n].seq <= branch.last_seq}
    if branch.tree == "semantic":
        under = {n for n in memory.leaves if summary.id in [b.id for b in memory.semantic.ancestors(n)]}
    assert under <= set(ids)


def test_top_down_refinement_descends_to_the_subject(chat: MemoryService) -> None:
    hits = chat.look_up(RecallRequest("pottery class bowl", k=3, strategy="refine", kind="leaf")).hits
    assert hits[0].text in {CONVERSATION[3][2], CONVERSATION[4][2]}


def all_texts(memory) -> str:  # type: ignore[no-untyped-def]
    """Every text and label either tree holds, as one string."""
    parts = [leaf.text for leaf in memory.leaves.values()]
    for tree in (memory.semantic, memory.temporal):
        parts += [b.text + " " + b.label for b in tree.branches.values()]
    return "\n".join(parts)


def test_a_forgotten_memory_leaves_no_trace(chat: MemoryService, settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    secret = chat.remember(
        "The spare key is hidden under the zorblax planter.", timestamp="2023-05-08T10:03:00Z", session="s1"
    )
    chat.remember(
        "The zorblax planter sits by the blue door.", timestamp="2023-05-08T10:04:00Z", session="s1"
    )
    memory = chat.memory()
    assert memory is not None and "zorblax" in all_texts(memory)
    listed = chat.forget(query="zorblax planter")
    assert listed.deleted == [] and {h.text for h in listed.candidates} >= {
        "The spare key is hidden under the zorblax planter."
    }
    zorblax = [c.id for c in listed.candidates if "zorblax" in c.text]
    forgotten = chat.forget(ids=zorblax)
    assert secret.ids[0] in forgotten.deleted and forgotten.deleted == zorblax
    for service in (chat, MemoryService(settings, embedder=embedder)):  # live, and reloaded from disk
        memory = service.memory()
        assert memory is not None
        assert "zorblax" not in all_texts(memory)
        assert memory.lexical.scores("zorblax") == {}
        assert all(
            "zorblax" not in h.text for h in service.look_up(RecallRequest("zorblax planter key", k=20)).hits
        )
        assert "zorblax" not in service.summarize(max_tokens=4000).summary
        assert_semantic_invariants(memory.semantic)
        assert_temporal_invariants(memory.temporal)
    assert chat.remember("The spare key is hidden under the zorblax planter.").deduplicated is False


def test_forgetting_a_summary_needs_confirm_and_takes_all_its_memories(chat: MemoryService) -> None:
    memory = chat.memory()
    assert memory is not None
    branch = next(b for b in memory.temporal.branches.values() if b.kind == "internal" and b.leaf_count >= 2)
    count = branch.leaf_count
    with pytest.raises(InvalidInput, match="confirm=true"):
        chat.forget(node_id=branch.id)
    gone = chat.forget(node_id=branch.id, confirm=True)
    assert len(gone.deleted) == count
    after = chat.memory()
    assert after is not None and not set(gone.deleted) & set(after.leaves)
    with pytest.raises(NotFound):
        chat.forget(node_id="m-no-such-node")
    with pytest.raises(InvalidInput, match="give either query"):
        chat.forget()


def test_summaries_cover_everything_a_period_a_subtree_or_a_subject(chat: MemoryService) -> None:
    memory = chat.memory()
    assert memory is not None
    whole = chat.summarize(max_tokens=2000)
    assert whole.node_ids and all(f"[{n}]" in whole.summary for n in whole.node_ids)
    june = chat.summarize(time_from="2023-06-01", time_to="2023-06-30T23:59:59Z")
    assert "pottery" in june.summary and "Lisbon" not in june.summary and "puppy" not in june.summary
    for node_id in june.node_ids:
        node = memory.node(node_id)
        first = getattr(node, "first_ts", getattr(node, "timestamp", 0.0))
        assert first >= 1685577600  # 2023-06-01
    subject = chat.summarize(query="moving abroad for work")
    assert "Lisbon" in subject.summary
    top = memory.semantic.root.children[0]
    assert chat.summarize(node_id=top).node_ids
    short = chat.summarize(max_tokens=16)
    assert len(short.summary) <= 16 * 4 + 1
    with pytest.raises(InvalidInput, match="give one of"):
        chat.summarize(node_id=top, query="x")
    with pytest.raises(NotFound):
        chat.summarize(node_id="b-no-such-node")


def test_navigate_moves_the_cursor_and_refuses_impossible_moves(chat: MemoryService) -> None:
    root = chat.navigate(tree="temporal").node
    assert root.kind == "root" and root.children and not root.has_up
    first = chat.navigate(move="down", index=0, tree="temporal").node
    assert first.has_up and first.time_from is not None
    switched = chat.navigate(node_id=first.id, move="switch", tree="temporal").node
    assert switched.tree == "semantic"
    with pytest.raises(InvalidInput, match="root"):
        chat.navigate(move="up")
    with pytest.raises(InvalidInput, match="unknown move"):
        chat.navigate(move="sideways")
    with pytest.raises(InvalidInput, match="needs a query"):
        chat.navigate(agent=True)
    with pytest.raises(NotFound):
        chat.navigate(node_id="b-nowhere")


def test_the_memory_agent_finds_the_memory_asked_about(chat: MemoryService) -> None:
    run = chat.navigate(query="the pottery class bowl", agent=True, tree="semantic")
    assert run.moves and run.sufficient is not None
    assert any("pottery" in line.text or "bowl" in line.text for line in run.context)


NOTES_IN_ORDER = [
    "The staging database moved to port 5433.",
    "Marta's flight lands at 18:40 at gate B12.",
    "The office plants are watered on Wednesdays.",
    "Our API rate limit is 600 requests per minute per key.",
    "Tomas is allergic to peanuts and shellfish.",
]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param({3: 1}, id="a duplicated sequence number"),
        pytest.param({4: 0, 3: -7}, id="low sequence numbers"),
    ],
)
def test_repair_survives_duplicated_or_low_sequence_numbers(
    service: MemoryService, settings: Settings, damage: dict[int, int]
) -> None:
    # Two writers that did not share a lock (or a hand-edited table) can store leaves whose
    # sequence numbers repeat or go back; repair then crashed with a ValueError (issue 31).
    ids = [service.remember(text).ids[0] for text in NOTES_IN_ORDER]
    space = service.spaces["default"]
    memory = space.memory
    for index, seq in damage.items():
        memory.leaves[ids[index]].seq = seq
    damaged = {ids[index] for index in damage}
    with service.spaces.writing("default"):
        space.table.commit(memory, damaged, rewritten=damaged)
    fresh = MemoryService(settings, embedder=service.embedder)
    assert fresh.look_up(RecallRequest("staging database port")).hits  # read as it is meanwhile
    assert fresh.upkeep.doctor(repair=True)  # the damage is found
    assert fresh.upkeep.doctor() == []
    assert sorted(fresh.memory().leaves) == sorted(ids)  # type: ignore[union-attr]
    assert fresh.look_up(RecallRequest("staging database port")).hits
    fresh.close()
    again = MemoryService(settings, embedder=service.embedder)
    assert again.upkeep.doctor() == [] and len(again.memory().leaves) == len(ids)  # type: ignore[union-attr]
    again.close()

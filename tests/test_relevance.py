"""Relevance and updates (core/relevance.py): the scale, the word share, and which memory updates which."""

from __future__ import annotations

import math

import pytest

from memtree_mcp.core.lexical import LexicalIndex, stem, tokenize
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.relevance import DENSE_SAME, DENSE_UNRELATED, meaning, relevance
from memtree_mcp.core.updates import UPDATE_MEANING, UpdateJudge, read, supersedes
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService

DOCS = {
    "a": "The staging database is Postgres 16 on port 5432.",
    "b": "The production database is Postgres 16 on port 5432.",
    "c": "Staging Postgres now listens on 5433 after the migration.",
    "d": "The daily standup is at 9:30 CET.",
    "e": "The daily standup is at 10:15 CET.",
    "f": "The user prefers tabs over spaces.",
}


def test_meaning_maps_cosines_linearly_onto_zero_to_one() -> None:
    assert meaning(DENSE_UNRELATED) == 0.0 and meaning(-1.0) == 0.0
    assert meaning(DENSE_SAME) == 1.0 and meaning(1.0) == 1.0
    assert meaning((DENSE_UNRELATED + DENSE_SAME) / 2) == pytest.approx(0.5)


def test_either_signal_alone_counts_and_both_count_more() -> None:
    middle = (DENSE_UNRELATED + DENSE_SAME) / 2
    assert relevance(middle, 0.0) == pytest.approx(0.5)
    assert relevance(DENSE_UNRELATED, 1.0) == pytest.approx(0.6)
    assert relevance(middle, 1.0) > max(relevance(middle, 0.0), relevance(DENSE_UNRELATED, 1.0))
    assert 0.0 <= relevance(-1.0, 0.0) <= relevance(1.0, 1.0) == 1.0


def test_word_coverage_is_the_idf_weighted_share_of_the_query_terms() -> None:
    index = LexicalIndex()
    for doc_id, text in DOCS.items():
        index.add(doc_id, text)
    query = "Which port does staging Postgres use?"
    n = len(DOCS)

    def idf(term: str) -> float:
        df = sum(term in tokenize(text) for text in DOCS.values())
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    terms = set(tokenize(query))
    for doc_id, text in DOCS.items():
        present = set(tokenize(text))
        expected = sum(idf(t) for t in terms if t in present) / sum(idf(t) for t in terms)
        assert index.coverage(query, doc_id) == pytest.approx(expected)
    assert index.coverage("zebra crossing", "a") == 0.0


@pytest.fixture(scope="module")
def leaves(embedder: MiniLMEmbedder) -> dict[str, Leaf]:
    vectors = embedder.embed_batch(list(DOCS.values()))
    return {
        doc_id: Leaf(id=doc_id, text=text, vector=vector, seq=seq, timestamp=1_000.0 + 60 * seq)
        for seq, ((doc_id, text), vector) in enumerate(zip(DOCS.items(), vectors, strict=True))
    }


@pytest.fixture(scope="module")
def lexical() -> LexicalIndex:
    index = LexicalIndex()
    for doc_id, text in DOCS.items():
        index.add(doc_id, text)
    return index


def test_a_later_memory_that_says_the_value_changed_supersedes_the_earlier(
    leaves: dict[str, Leaf], lexical: LexicalIndex
) -> None:
    assert supersedes(leaves["c"], leaves["a"], lexical)  # "now listens on 5433"
    assert supersedes(leaves["e"], leaves["d"], lexical)  # only the time differs


def test_a_parallel_fact_or_an_earlier_memory_supersedes_nothing(
    leaves: dict[str, Leaf], lexical: LexicalIndex
) -> None:
    assert not supersedes(leaves["b"], leaves["a"], lexical)  # production is not staging
    assert not supersedes(leaves["a"], leaves["c"], lexical)  # older never supersedes newer
    assert not supersedes(leaves["f"], leaves["d"], lexical)  # another subject


def updates(embedder: MiniLMEmbedder, older: str, newer: str) -> bool:
    """Whether ``newer``, said a day after ``older``, supersedes it in a store of those two memories."""
    old_vector, new_vector = embedder.embed_batch([older, newer])
    old = Leaf(id="old", text=older, vector=old_vector, seq=0, timestamp=1_000.0)
    new = Leaf(id="new", text=newer, vector=new_vector, seq=1, timestamp=1_000.0 + 86_400)
    index = LexicalIndex()
    index.add("old", older)
    index.add("new", newer)
    return supersedes(new, old, index)


def test_a_fact_about_another_environment_is_not_an_update_even_when_it_says_now(
    embedder: MiniLMEmbedder,
) -> None:
    assert not updates(
        embedder, "The staging Redis runs on port 6379.", "The production Redis now runs on port 6380."
    )
    assert not updates(
        embedder, "The iOS app requires iOS 16 or later.", "The Android app now requires Android 12 or later."
    )
    assert not updates(embedder, "Alice's laptop is a MacBook Pro.", "Bob's laptop is a ThinkPad.")
    # the same update does supersede the fact about its own environment
    assert updates(
        embedder, "The production Redis runs on port 6379.", "The production Redis now runs on port 6380."
    )


def test_the_readme_example_is_an_update_in_a_store_of_two_memories(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder,
        "The staging database is Postgres 16 on port 5432.",
        "Staging Postgres now listens on 5433 after the migration.",
    )


def test_a_changed_status_or_person_is_an_update(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder, "ORION-160, the JPY rounding bug, is open.", "ORION-160, the JPY rounding bug, is resolved."
    )
    assert updates(
        embedder, "The on-call engineer this week is Priya.", "The on-call engineer this week is now Tom."
    )
    assert updates(
        embedder, "Maya Okafor leads the backend team.", "Tomasz Wrobel now leads the backend team."
    )


def test_a_change_of_mechanism_does_not_retire_an_unrelated_value(embedder: MiniLMEmbedder) -> None:
    assert not updates(
        embedder,
        "The API rate limit was raised to 300 requests per minute.",
        "Rate limiting moves to the API gateway.",
    )
    # while a new value for the limit does retire it
    assert updates(
        embedder,
        "The API rate limit was raised to 300 requests per minute.",
        "The API rate limit is now 500 requests per minute.",
    )


def test_no_longer_is_an_update_and_also_is_not(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder, "GraphQL is used for the public API.", "GraphQL is no longer used for the public API."
    )
    assert updates(embedder, "I am vegetarian.", "I'm not vegetarian anymore.")
    assert not updates(embedder, "The team chat runs on Slack.", "The team also uses Zoom for calls.")


def test_a_qualifier_without_an_article_or_after_the_head_noun_still_tells_subjects_apart(
    embedder: MiniLMEmbedder,
) -> None:
    assert not updates(
        embedder, "Staging Redis runs on port 6379.", "Production Redis now runs on port 6380."
    )
    assert not updates(
        embedder,
        "The Redis for staging runs on port 6379.",
        "The Redis for production now runs on port 6380.",
    )
    assert not updates(
        embedder,
        "Customer data in the EU is stored in Frankfurt.",
        "Customer data in the US is now stored in Virginia.",
    )


def test_the_same_value_said_again_is_no_update_even_with_now(embedder: MiniLMEmbedder) -> None:
    assert not updates(
        embedder, "Staging Redis runs on port 6379.", "Production Redis now runs on port 6379."
    )
    assert not updates(
        embedder, "The build cache is kept for 7 days.", "We now keep the build cache for 7 days."
    )
    # while a new value for the same thing is one
    assert updates(
        embedder, "The build cache is kept for 7 days.", "We now keep the build cache for 14 days."
    )


def test_another_person_doing_the_same_is_no_update_unless_the_role_changed_hands(
    embedder: MiniLMEmbedder,
) -> None:
    assert not updates(embedder, "Alice works on the billing team.", "Bob now works on the billing team.")
    assert not updates(
        embedder, "Alice Smith works on the billing team.", "Bob Jones now works on the billing team."
    )
    assert updates(
        embedder, "Jonas leads the infrastructure team.", "Elena now leads the infrastructure team."
    )
    assert updates(
        embedder, "Dana manages the support rota.", "Sam has replaced Dana as manager of the support rota."
    )


def test_a_number_and_its_unit_are_one_value(embedder: MiniLMEmbedder) -> None:
    assert updates(embedder, "The session cache TTL is 30 minutes.", "The session cache TTL is 2 hours.")
    assert updates(embedder, "The trial lasts 14 days.", "The trial lasts one month.")
    # two values that differ still mean two things differ
    assert not updates(
        embedder,
        "Priya is on vacation from May 3 to May 10.",
        "Tom is on vacation from May 12 to May 20.",
    )


def test_an_issue_that_reaches_a_closing_state_is_updated_whatever_was_said_of_it(
    embedder: MiniLMEmbedder,
) -> None:
    assert updates(
        embedder,
        "ORION-172: webhook retries can fire twice when the gateway times out.",
        "ORION-172 was closed as won't fix.",
    )
    assert updates(
        embedder, "#731 tracks the flaky login test.", "#731 was closed after the test was rewritten."
    )
    # not another issue, not a state that is not reached, not a mere mention
    assert not updates(embedder, "ORION-201 is fixed in 3.1.", "ORION-202 is fixed in 3.2.")
    assert not updates(
        embedder, "ORION-205: refunds fail for partial captures.", "ORION-205 is not fixed yet."
    )
    assert not updates(
        embedder,
        "ORION-190: exports time out for large merchants.",
        "ORION-190 was discussed in the planning meeting.",
    )


def test_a_replaced_value_or_name_named_again_ties_reworded_memories(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder,
        "The API gateway serves HTTP on port 8080 in every environment.",
        "We moved the gateway off 8080; it answers on 9443 with TLS now.",
    )
    assert updates(embedder, "Our product is called Taskly.", "Taskly has been renamed to Flowboard.")


def test_new_before_the_role_and_a_reason_after_the_value_change_nothing(embedder: MiniLMEmbedder) -> None:
    assert updates(embedder, "My dentist is Dr. Alvarez.", "My new dentist is Dr. Chen.")
    assert updates(embedder, "The mobile SDK is at v4.2.", "The mobile SDK is at v5.0 after the rewrite.")
    assert not updates(embedder, "The user likes hiking.", "The user also enjoys painting.")


def test_rare_shared_words_count_more_in_a_large_store(embedder: MiniLMEmbedder) -> None:
    older, newer = "ORION uses Kestrel queues for every payout job.", "Kestrel queues were replaced by SQS."
    fillers = [f"Note {i}: the team met about every payout job on day {i}." for i in range(24)]
    texts = [older, newer, *fillers]
    vectors = embedder.embed_batch(texts)
    leaves = [
        Leaf(id=f"n{i}", text=text, vector=vector, seq=i, timestamp=1_000.0 + i)
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    big, small = LexicalIndex(), LexicalIndex()
    for leaf in leaves:
        big.add(leaf.id, leaf.text)
    for leaf in leaves[:2]:
        small.add(leaf.id, leaf.text)
    old, new = read(older), read(newer)
    assert UpdateJudge(small).weighted_share(leaves[0], old, new) is None  # two memories: no idf
    share = UpdateJudge(big).weighted_share(leaves[0], old, new)
    uniform = len(old.subject & new.content) / len(old.subject)  # "kestrel" and "queue" of seven
    assert share is not None and share > uniform + 0.1  # rare "kestrel" weighs more than "every job"


def close_in_meaning(embedder: MiniLMEmbedder, older: str, newer: str) -> bool:
    """Whether the two are close enough in meaning for the rule to read their words at all."""
    old_vector, new_vector = embedder.embed_batch([older, newer])
    return float(old_vector @ new_vector) >= UPDATE_MEANING


def test_reported_speech_is_read_for_what_was_said() -> None:
    said = read('Alice said, "I moved to Berlin in May." and shared a photo of a station')
    assert said.speaker == "alice" and said.personal
    assert [t.key for t in said.tokens if t.kind != "stop"] == [stem("moved"), "berlin", "may"]
    assert read("User: I moved to Berlin in May.").speaker == "user"
    assert read("ORION-172: webhook retries fire twice.").speaker == ""  # an issue id is no speaker
    # a question, greetings and thanks state nothing; the fact beside them is kept
    assert read('Tom said, "Do you have any suggestions?"').tokens == ()
    assert read('Tom said, "Hey Maria! Thanks, that means a lot."').tokens == ()
    kept = read('Tom said, "Hey Maria! How are you? I sold my bike last week."')
    assert {t.key for t in kept.tokens if t.kind == "word"} == {
        stem(w) for w in ("sold", "bike", "last", "week")
    }


def test_questions_greetings_and_reactions_of_a_chat_update_nothing(embedder: MiniLMEmbedder) -> None:
    pairs = [
        # a question, even one that says "still" or "now", states no fact
        (
            'Lena said, "We are still deciding where to go in August."',
            'Lena said, "Any ideas where we should go in August now?"',
        ),
        ('Ben said, "Alice works at the bakery."', 'Ben said, "Does Alice still work at the bakery?"'),
        # greetings and small talk, with "since then" or "now", and the speaker's name shared
        (
            'Omar said, "I am still looking for a flat near the river."',
            'Omar said, "Hey Jess! Long time no see, so much has changed since then!"',
        ),
        ('Kofi said, "See you next week!"', 'Kofi said, "Talk soon, I\'m off now!"'),
        (
            'Omar said, "Wow, that sounds amazing! Enjoy the trip!"',
            'Omar said, "Wow, that sounds great! Have fun at the concert!"',
        ),
        (
            'John said, "We\'re still deciding on the destination. Do you have any suggestions?"',
            'John said, "Hey Tim! Long time no talk - a lot has been going on since then!"',
        ),
        # a state said in other words is the same state
        (
            'Mia said, "Tell me what you think when you are done!"',
            'Mia said, "Tell me what you think when you are finished!"',
        ),
        # two sentences with little in common: nothing was replaced
        (
            'Jess said, "I finally found a flat near the river. The rent is fair."',
            'Jess said, "My sister found a new job in the city."',
        ),
    ]
    for older, newer in pairs:
        assert close_in_meaning(embedder, older, newer), (older, newer)
        assert not updates(embedder, older, newer), (older, newer)


def test_the_same_fact_said_by_another_speaker_is_about_another_person(embedder: MiniLMEmbedder) -> None:
    assert not updates(
        embedder, 'Alice said, "I moved to Paris last year."', 'Bob said, "I moved to Berlin last year."'
    )
    assert not updates(embedder, 'Nina said, "My daughter is 7 now."', 'Raj said, "My daughter is 9 now."')
    assert updates(embedder, 'Nina said, "My daughter is 7."', 'Nina said, "My daughter is 8 now."')


def test_an_update_told_in_a_chat_is_an_update(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder,
        'Priya said, "My rent is 950 euros a month."',
        'Priya said, "My rent is 1,100 euros a month."',
    )
    assert updates(
        embedder,
        'Alice said, "I work at the bakery on Main Street."',
        'Alice said, "I no longer work at the bakery on Main Street."',
    )
    assert updates(embedder, "User: My home office is in Leeds.", "User: My home office moved to Bristol.")
    # the fact changed in one sentence of a longer turn, beside a greeting and a question
    assert updates(
        embedder,
        'Tom said, "I run 10 km every Sunday."',
        'Tom said, "Hi Ana! I now run 15 km every Sunday. How about you?"',
    )


@pytest.mark.parametrize("strategy", ["gather", "hybrid"])
@pytest.mark.parametrize("query", ["anything", "xyzzy", "tell me everything"])
def test_min_relevance_zero_returns_every_hit_ranked_even_for_a_query_nothing_is_about(
    service: MemoryService, strategy: str, query: str
) -> None:
    # The README: "min_relevance: 0 returns every hit ranked"; these returned nothing (issue 31).
    notes = [
        "The staging database is on port 5433.",
        "Marta's flight lands at 18:40.",
        "The plants are watered on Wednesdays.",
        "Tomas is allergic to peanuts.",
    ]
    for note in notes:
        service.remember(note)
    every = service.recall(query, min_relevance=0, strategy=strategy, kind="leaf", k=10).hits
    assert sorted(hit.text for hit in every) == sorted(notes)
    assert len(service.recall(query, strategy=strategy).hits) <= 1  # the default cut-off still holds

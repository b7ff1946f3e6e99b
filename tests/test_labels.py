"""Branch labels a person can read: the words that tell a branch from its siblings, kept whole.

Small handmade cases for :func:`memtree_mcp.core.trees.extractive.label_for`, then the same property
through real trees, where a label is computed when its branch is refreshed.
"""

from __future__ import annotations

import numpy as np

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.extractive import content_words, label_for
from memtree_mcp.core.trees.model import Leaf

STAGING = [
    "The staging Postgres runs on port 5433.",
    "Backups of the staging Postgres database run nightly.",
    "Staging Postgres migrations run before each deploy.",
]
PRODUCTION = [
    "The production Postgres cluster has three replicas in Frankfurt.",
    "Production Postgres failover takes four minutes.",
    "The production Postgres database has max_connections 400.",
]


def words(label: str) -> list[str]:
    return label.split(", ") if label else []


def test_sibling_branches_about_staging_and_production_postgres_are_labelled_by_what_differs() -> None:
    staging = label_for(STAGING, [" ".join(PRODUCTION)])
    production = label_for(PRODUCTION, [" ".join(STAGING)])
    assert staging != production
    assert "staging" in words(staging) and "production" in words(production)
    # Postgres is what they share, so it names neither: their parent's label says it.
    assert "postgres" not in words(staging) + words(production)
    assert "postgres" in words(label_for(STAGING + PRODUCTION))


def test_the_label_is_not_the_most_frequent_words_but_the_distinctive_ones() -> None:
    children = [
        "The user asked about the invoice service.",
        "The user saw the invoice service time out on Fridays.",
        "The user wants invoice PDFs archived for ten years.",
    ]
    siblings = [
        "The user asked about the email service.",
        "The user set up the email service retries.",
        "The user reads the service logs every morning.",
    ]
    label = words(label_for(children, siblings))
    assert label[0] == "invoice"
    assert "user" not in label and "service" not in label


def test_a_word_every_sibling_uses_only_fills_the_label_when_nothing_else_is_left() -> None:
    assert words(label_for(["postgres backups", "postgres backups"], ["postgres replicas"])) == [
        "backups",
        "postgres",
    ]


def test_without_siblings_a_label_is_the_branch_most_used_words() -> None:
    texts = ["Biscuit the dog loves the lake.", "The dog Biscuit had a vet visit.", "Lunch was pasta."]
    assert words(label_for(texts))[:2] == ["biscuit", "dog"]
    assert label_for([]) == ""


def test_labels_keep_names_with_digits_ports_identifiers_and_file_names_whole() -> None:
    found = content_words(
        "Bug orion-160: the user's Postgres on port 5433 hit max_connections; see CHANGELOG.md "
        "and v2.16.2. CI is slow, e.g. on Mondays."
    )
    assert {"orion-160", "postgres", "5433", "max_connections", "changelog.md", "v2.16.2", "CI"} <= set(found)
    assert "user" in found and "user's" not in found  # a possessive counts as the word itself
    assert not {"the", "on", "and", "is", "e.g", "orion-", "orion"} & set(found)
    label = label_for(["Bug orion-160 returns 502 on checkout.", "orion-160 reproduces with 50 checkouts."])
    assert words(label)[0] == "orion-160"


def test_label_words_are_whole_words_of_the_memories() -> None:
    texts = ["Café owners in Zürich open at 07:30.", "The Zürich café sells naïve art."]
    for word in words(label_for(texts, ["Bakeries in Basel open early."])):
        assert any(word.lower() in text.lower().split() or word in text for text in texts), word
    assert "zürich" in words(label_for(texts))


def _vector(axis: int, wobble: float, dimension: int = 8) -> np.ndarray:
    vector = np.zeros(dimension, dtype=np.float32)
    vector[0], vector[axis], vector[-1] = 0.6, 0.9, wobble
    return vector / np.linalg.norm(vector)


def test_in_the_trees_the_staging_and_production_branches_name_staging_and_production() -> None:
    # Two subjects far apart (cosine ~0.3), each in its own session, remembered interleaved so
    # both branches are refreshed after the other exists.
    memory = Memory(8)
    order = [(STAGING, 0, 1), (PRODUCTION, 0, 2), (STAGING, 1, 1), (PRODUCTION, 1, 2)]
    order += [(STAGING, 2, 1), (PRODUCTION, 2, 2)]
    for seq, (texts, index, axis) in enumerate(order):
        memory.add_leaf(
            Leaf(
                id=f"m{seq}",
                text=texts[index],
                vector=_vector(axis, 0.05 * seq),
                seq=seq,
                timestamp=1_000.0 + 60 * seq,
            )
        )
    semantic = memory.semantic
    labels = {}
    for child in semantic.root.children:
        texts = " ".join(memory.leaves[leaf].text.lower() for leaf in semantic.leaves_under(child))
        labels["staging" if "staging" in texts else "production"] = semantic.branches[child].label
    assert set(labels) == {"staging", "production"}, labels
    assert "staging" in words(labels["staging"]) and "production" in words(labels["production"]), labels
    assert "postgres" not in words(labels["staging"]) + words(labels["production"]), labels


def test_a_closed_time_segment_is_labelled_against_the_segment_that_follows_it() -> None:
    memory = Memory(8)
    sessions = [("s1", STAGING, 1), ("s2", PRODUCTION, 2)]
    seq = 0
    for session, texts, axis in sessions:
        for text in texts:
            memory.add_leaf(
                Leaf(
                    id=f"m{seq}",
                    text=text,
                    vector=_vector(axis, 0.05 * seq),
                    seq=seq,
                    timestamp=1_000.0 + 60 * seq,
                    session=session,
                )
            )
            seq += 1
    temporal = memory.temporal
    first, second = (temporal.branches[c] for c in temporal.root.children)
    # The first segment was written before the second existed; it is labelled again when it closes.
    # A session's label: "session", its id and start, then the words that tell it from the other.
    assert first.label.startswith(
        f"session {temporal.leaves[temporal.ends(first.id)[0]].session} 1970-01-01 "
    )
    assert second.label.startswith("session ") and " 1970-01-01 " in second.label
    subject, other = (words(b.label.split(" · ", 1)[1]) for b in (first, second))
    assert "staging" in subject and "postgres" not in subject, first.label
    assert "production" in other, second.label

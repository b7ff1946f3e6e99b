"""Recall's marks, as the model reads them: a stale memory always comes with the memory that
updates it, and its ``superseded by N`` names the rank of that memory in the same result, whatever
``k``, the cut-off, the one-hit rule, the budget or a summary that quotes the update."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from mcp import Client

from memtree_mcp.core.ranking.relevance import CONFIDENT, DEFAULT_MIN_RELEVANCE
from memtree_mcp.core.trees.extractive import PART_SEPARATOR
from memtree_mcp.service import MemoryService
from tests.mcp_text import client_remembering, text_of

pytestmark = pytest.mark.anyio

# A platform team's memory, in the order it was told; the last four change earlier facts.
MEMORIES = [
    ("2025-04-01T09:00:00Z", "a", "The Kafka cluster keeps messages for 7 days."),
    ("2025-04-01T09:01:00Z", "a", "The Kafka cluster has three brokers in Frankfurt."),
    ("2025-04-01T09:02:00Z", "a", "The Kafka cluster uses ZooKeeper for coordination."),
    ("2025-04-01T09:03:00Z", "a", "Kafka topics of the billing service have 12 partitions."),
    ("2025-04-01T09:04:00Z", "a", "The Kafka cluster is monitored with Burrow for consumer lag."),
    ("2025-04-02T09:00:00Z", "b", "The nightly backup job runs at 02:00 UTC on the reporting server."),
    ("2025-04-02T09:01:00Z", "b", "Lena Fischer is on call for the payments team this week."),
    ("2025-04-02T09:02:00Z", "b", "The mobile app supports iOS 15 and later."),
    ("2025-04-02T09:03:00Z", "b", "The CI pipeline runs on GitHub Actions with four parallel jobs."),
    ("2025-04-03T09:00:00Z", "c", "The design review happens every Thursday afternoon."),
    ("2025-04-03T09:01:00Z", "c", "Feature flags are managed in LaunchDarkly."),
    ("2025-05-10T09:00:00Z", "d", "The Kafka cluster now keeps messages for 3 days to save disk."),
    ("2025-05-11T09:00:00Z", "d", "The nightly backup job now runs at 03:30 UTC."),
    ("2025-05-12T09:00:00Z", "d", "The mobile app now requires iOS 16 or later."),
    ("2025-05-13T09:00:00Z", "d", "The Kafka cluster migrated from ZooKeeper to KRaft for coordination."),
]
# What the agent knows when it remembers each of the last four: the memory it replaces.
REPLACES = {
    MEMORIES[11][2]: MEMORIES[0][2],
    MEMORIES[12][2]: MEMORIES[5][2],
    MEMORIES[13][2]: MEMORIES[7][2],
    MEMORIES[14][2]: MEMORIES[2][2],
}
QUERIES = [
    "Kafka cluster",
    "Kafka messages",
    "Kafka ZooKeeper",
    "How long does Kafka keep messages?",
    "What does Kafka use for coordination?",
    "Is ZooKeeper still used?",
    "When do backups happen?",
    "reporting server",
    "Which server hosts reports?",
    "How long are events stored?",
    "Which iOS versions does the app support?",
    "Who is on call?",
    "What is the user's favourite football team?",
]
LINE = re.compile(
    r"^(?P<rank>\d+)\. \[(?P<relevance>\d\.\d\d)(?P<facts>( · [^\]]+)?)\] "
    r"(?P<text>.+) \{(?P<id>[a-z0-9-]+)\}$"
)
MARK = re.compile(r" · superseded by (\d+)$")


@pytest.fixture
async def client(service: MemoryService) -> AsyncIterator[Client]:
    async with client_remembering(service, MEMORIES, REPLACES) as connected:
        yield connected


def read(found: Any) -> list[dict[str, Any]]:
    """Each line of a recall as the model reads it (rank, relevance, day, text, id, the rank its
    mark names), checked against the structured content: the same hits, the same marks."""
    lines = text_of(found).splitlines()
    hits = found.structured_content["hits"]
    if not hits:
        return []
    assert len(lines) == len(hits), lines
    out = []
    for rank, (line, hit) in enumerate(zip(lines, hits, strict=True), start=1):
        parsed = LINE.match(line)
        assert parsed is not None, line
        assert int(parsed["rank"]) == rank and parsed["id"] == hit["id"]
        mark = MARK.search(parsed["facts"])
        day = parsed["facts"].removeprefix(" · ").split(" · ")[-2 if mark else -1]
        out.append(
            {
                "rank": rank,
                "relevance": float(parsed["relevance"]),
                "day": day,
                "text": parsed["text"],
                "id": hit["id"],
                "kind": hit["kind"],
                "newer": int(mark.group(1)) if mark else None,
                "superseded_by": hit.get("superseded_by"),
            }
        )
    return out


def assert_marks_can_be_followed(lines: Sequence[dict[str, Any]], *, newest_first: bool) -> None:
    """Every ``superseded by N`` names a line of the same result, a later memory (and, with the
    cut-off, one above it); the structured ``superseded_by`` is that line's id; no line is marked
    in one and not in the other; no text is read twice (a summary never quotes a memory shown)."""
    for line in lines:
        if line["newer"] is None:
            assert line["superseded_by"] is None, line
            continue
        assert 1 <= line["newer"] <= len(lines) and line["newer"] != line["rank"], line
        newer = lines[line["newer"] - 1]
        assert line["superseded_by"] == newer["id"], (line, newer)
        assert newer["kind"] == "leaf" and newer["day"] >= line["day"], (line, newer)
        if newest_first:
            assert newer["rank"] < line["rank"], lines
    pieces = [piece for line in lines for piece in line["text"].split(PART_SEPARATOR)]
    assert len(pieces) == len(set(pieces)), lines


async def test_every_mark_names_a_line_of_the_same_result_whatever_the_arguments(client: Client) -> None:
    arguments: list[dict[str, Any]] = [
        {},
        {"k": 1},
        {"k": 2},
        {"k": 3, "kind": "leaf"},
        {"max_tokens": 40},
        {"max_tokens": 70},
        {"min_relevance": 0.6},
        {"min_relevance": 0, "k": 3},
        {"min_relevance": 0, "k": 20},
        {"min_relevance": 0, "k": 20, "max_tokens": 90},
    ]
    marked = 0
    for query in QUERIES:
        for extra in arguments:
            found = await client.call_tool("recall", {"query": query, **extra})
            lines = read(found)
            assert_marks_can_be_followed(lines, newest_first=extra.get("min_relevance") != 0)
            marked += sum(line["newer"] is not None for line in lines)
    assert marked >= 40  # the updates of this memory are met all along


async def test_an_update_below_the_cut_off_comes_first_with_the_stale_hit(client: Client) -> None:
    lines = read(await client.call_tool("recall", {"query": "reporting server"}))
    assert [line["text"] for line in lines] == [
        "The nightly backup job now runs at 03:30 UTC.",
        "The nightly backup job runs at 02:00 UTC on the reporting server.",
    ]
    # The update shares no word with the query: only the stale memory it updates brings it.
    assert lines[0]["relevance"] < DEFAULT_MIN_RELEVANCE <= lines[1]["relevance"]
    assert lines[0]["newer"] is None and lines[1]["newer"] == 1


@pytest.mark.parametrize("k", [1, 2])
async def test_k_never_leaves_the_update_of_a_stale_hit_out(client: Client, k: int) -> None:
    for query, newer, older in [
        ("How long does Kafka keep messages?", "3 days", "7 days"),
        ("What does Kafka use for coordination?", "KRaft", "uses ZooKeeper"),
        ("reporting server", "03:30", "02:00"),
    ]:
        lines = read(await client.call_tool("recall", {"query": query, "k": k}))
        stale = next(line for line in lines if older in line["text"])
        assert newer in lines[stale["newer"] - 1]["text"], lines
        assert stale["newer"] < stale["rank"]
        # k counts what ranked; the updates that had to join come on top of it (every line that is
        # no mark's update is a ranked hit)
        updates = {line["newer"] for line in lines}
        assert sum(line["rank"] not in updates for line in lines) <= k


async def test_when_the_one_weak_hit_is_stale_its_update_comes_with_it(client: Client) -> None:
    lines = read(await client.call_tool("recall", {"query": "Which server hosts reports?"}))
    # No hit reaches CONFIDENT: the one-hit rule keeps the best-ranked memory, and its update.
    assert all(line["relevance"] < CONFIDENT for line in lines)
    assert [line["text"] for line in lines] == [
        "The nightly backup job now runs at 03:30 UTC.",
        "The nightly backup job runs at 02:00 UTC on the reporting server.",
    ]
    assert lines[1]["newer"] == 1 and lines[1]["relevance"] >= DEFAULT_MIN_RELEVANCE


async def test_a_hint_below_the_cut_off_is_the_current_version_alone(client: Client) -> None:
    everything = read(
        await client.call_tool("recall", {"query": "How long are events stored?", "min_relevance": 0})
    )
    best = everything[0]
    assert best["text"] == "The Kafka cluster keeps messages for 7 days."
    assert best["relevance"] < DEFAULT_MIN_RELEVANCE and best["newer"] is not None
    # Nothing passes the cut-off: one line, and it is the current version of what ranked first.
    lines = read(await client.call_tool("recall", {"query": "How long are events stored?"}))
    assert [line["text"] for line in lines] == [
        "The Kafka cluster now keeps messages for 3 days to save disk."
    ]


async def test_an_update_filed_inside_a_summary_hit_is_shown_as_the_memory_it_is(client: Client) -> None:
    update = "The Kafka cluster migrated from ZooKeeper to KRaft for coordination."
    query = "Kafka messages"
    summaries = read(await client.call_tool("recall", {"query": query, "kind": "summary"}))
    # The update is filed in a summary that ranks for the query...
    assert any(update in line["text"].split(PART_SEPARATOR) for line in summaries), summaries
    lines = read(await client.call_tool("recall", {"query": query}))
    assert_marks_can_be_followed(lines, newest_first=True)
    # ...and the stale memory it updates is a hit: the update is its own line, with its own rank.
    stale = next(
        line for line in lines if line["text"] == "The Kafka cluster uses ZooKeeper for coordination."
    )
    assert stale["newer"] is not None and lines[stale["newer"] - 1]["text"] == update
    assert lines[stale["newer"] - 1]["kind"] == "leaf"
    assert sum(update in line["text"] for line in lines) == 1


@pytest.mark.parametrize("budget", [15, 25, 30, 40, 55, 80])
async def test_a_budget_too_small_for_both_drops_the_stale_hit_not_its_update(
    client: Client, budget: int
) -> None:
    for query in ["reporting server", "How long does Kafka keep messages?", "Kafka ZooKeeper"]:
        for cut_off in (DEFAULT_MIN_RELEVANCE, 0):
            found = await client.call_tool(
                "recall", {"query": query, "max_tokens": budget, "min_relevance": cut_off}
            )
            if found.structured_content["hits"]:
                assert len(text_of(found)) <= 4 * budget
            else:  # none fits: one line says so whole, and what would fit (issue 32)
                assert f"but none fits in max_tokens {budget};" in text_of(found)
            assert_marks_can_be_followed(read(found), newest_first=cut_off > 0)


async def test_without_a_cut_off_the_ranking_keeps_its_order_and_updates_join_after_it(
    client: Client,
) -> None:
    ranked = read(await client.call_tool("recall", {"query": "Kafka messages", "min_relevance": 0, "k": 3}))
    # The ranking's first three, in its order; the updates of the stale ones among them follow.
    wider = read(await client.call_tool("recall", {"query": "Kafka messages", "min_relevance": 0, "k": 8}))
    assert [line["id"] for line in ranked[:3]] == [line["id"] for line in wider[:3]]
    assert_marks_can_be_followed(ranked, newest_first=False)
    for line in ranked[3:]:
        assert any(other["superseded_by"] == line["id"] for other in ranked), ranked

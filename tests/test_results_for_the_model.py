"""What the model reads through MCP: compact lines, no repeats, no padding, a budget that holds,
relevance on one scale, and the newest of conflicting memories first."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest
from mcp import Client

from memtree_mcp.core.ranking.relevance import DEFAULT_MIN_RELEVANCE
from memtree_mcp.service import MemoryService
from tests.mcp_text import client_remembering, text_of

pytestmark = pytest.mark.anyio

# A small project memory, in the order it was told; the last three change earlier facts.
FACTS = [
    ("2025-01-13T09:00:00Z", "s1", "Maya Okafor leads the Orion backend team."),
    ("2025-01-13T09:02:00Z", "s1", "The staging database is Postgres 16 on port 5432."),
    ("2025-01-13T09:04:00Z", "s1", "The API gateway serves HTTP on port 8080 in every environment."),
    ("2025-01-20T10:00:00Z", "s2", "The daily standup is at 9:30 CET in the #orion-standup channel."),
    ("2025-01-20T10:02:00Z", "s2", "ORION-160, the JPY rounding bug, is still open."),
    ("2025-01-20T10:04:00Z", "s2", "Product search runs on a three-node OpenSearch cluster."),
    ("2025-01-27T11:00:00Z", "s3", "Every pull request needs two approvals before it can be merged."),
    ("2025-01-27T11:02:00Z", "s3", "Application logs are shipped to Loki and kept for 14 days."),
    ("2025-01-27T11:04:00Z", "s3", "The user prefers code examples in TypeScript."),
    ("2025-02-20T09:00:00Z", "s4", "Staging Postgres now listens on 5433 after the migration."),
    ("2025-02-27T09:00:00Z", "s5", "The daily standup now starts at 10:15 CET instead of 9:30."),
    ("2025-03-24T09:00:00Z", "s6", "Fixed ORION-160: JPY amounts now round half-even; shipped in 2.3.1."),
]
# The agent confirms, from the candidates remember offers, what each of the last three replaces.
REPLACES = {FACTS[9][2]: FACTS[1][2], FACTS[10][2]: FACTS[3][2], FACTS[11][2]: FACTS[4][2]}
QUESTIONS = [
    "Which port does staging Postgres use?",
    "What time is the daily standup?",
    "Is the JPY rounding bug fixed?",
    "How long are logs kept?",
    "Who leads the backend team?",
    "How many approvals does a pull request need?",
]
LINE = re.compile(r"^(\d+)\. \[(\d\.\d\d)( · [^\]]+)?\] (.+) \{([a-z0-9-]+)\}$")


@pytest.fixture
async def client(service: MemoryService) -> AsyncIterator[Client]:
    async with client_remembering(service, FACTS, REPLACES) as connected:
        yield connected


async def test_each_hit_is_one_short_line_with_rank_relevance_date_text_and_id(client: Client) -> None:
    found = await client.call_tool("recall", {"query": "Which port does staging Postgres use?"})
    lines = text_of(found).splitlines()
    assert lines and found.structured_content is not None
    hits = found.structured_content["hits"]
    assert len(lines) == len(hits)
    for rank, (line, hit) in enumerate(zip(lines, hits, strict=True), start=1):
        parsed = LINE.match(line)
        assert parsed is not None, line
        assert int(parsed.group(1)) == rank and parsed.group(5) == hit["id"]
        assert float(parsed.group(2)) == pytest.approx(hit["relevance"], abs=0.005)
        assert "text" not in hit  # the words are in the text, once


async def test_no_text_appears_twice_in_any_result(client: Client) -> None:
    for question in [*QUESTIONS, "everything about Orion", "ports"]:
        for kind in ("any", "leaf", "summary"):
            found = await client.call_tool(
                "recall", {"query": question, "k": 20, "kind": kind, "min_relevance": 0}
            )
            texts = [LINE.match(line).group(4) for line in text_of(found).splitlines()]  # type: ignore[union-attr]
            pieces = [piece for text in texts for piece in text.split(" · ")]
            assert len(pieces) == len(set(pieces)), (question, kind, texts)


async def test_a_question_about_something_never_stored_gets_at_most_one_hit(client: Client) -> None:
    for question in [
        "What is the user's favourite football team?",
        "Which Python version does the data science team use?",
        "When is the next company offsite?",
        "What is the name of the user's dog?",
    ]:
        found = await client.call_tool("recall", {"query": question})
        assert found.structured_content is not None
        assert len(found.structured_content["hits"]) <= 1, (question, text_of(found))


async def test_k_is_a_most_not_a_quota_and_min_relevance_zero_returns_everything_ranked(
    client: Client,
) -> None:
    asked = await client.call_tool(
        "recall", {"query": "How many approvals does a pull request need?", "k": 8}
    )
    everything = await client.call_tool(
        "recall", {"query": "How many approvals does a pull request need?", "k": 8, "min_relevance": 0}
    )
    assert asked.structured_content is not None and everything.structured_content is not None
    shown = asked.structured_content["hits"]
    assert 1 <= len(shown) < len(everything.structured_content["hits"])
    assert all(hit["relevance"] >= DEFAULT_MIN_RELEVANCE for hit in shown)
    assert "two approvals" in text_of(asked).splitlines()[0]


async def test_relevance_is_between_zero_and_one_and_highest_for_the_fact_asked_about(client: Client) -> None:
    found = await client.call_tool("recall", {"query": "How long are logs kept in Loki?", "min_relevance": 0})
    assert found.structured_content is not None
    relevances = [hit["relevance"] for hit in found.structured_content["hits"]]
    assert all(0.0 <= value <= 1.0 for value in relevances)
    assert relevances[0] == max(relevances) and relevances[0] > 0.6
    assert "Loki" in text_of(found).splitlines()[0]


@pytest.mark.parametrize("budget", [8, 20, 40, 60, 100])
async def test_max_tokens_bounds_what_the_model_reads_to_the_character(client: Client, budget: int) -> None:
    """Hits never exceed the budget; when none fits, the one line saying so is whole (issue 32)."""
    for question in QUESTIONS:
        found = await client.call_tool(
            "recall", {"query": question, "max_tokens": budget, "k": 20, "min_relevance": 0}
        )
        text = text_of(found)
        if f"but none fits in max_tokens {budget};" in text:
            assert not found.structured_content["hits"] and "\n" not in text
        else:
            assert len(text) <= 4 * budget, (question, budget, text)


async def test_the_newest_of_conflicting_memories_comes_first_and_the_older_is_marked(client: Client) -> None:
    cases = {
        "Which port does staging Postgres use?": ("5433", "5432"),
        "What time is the daily standup?": ("10:15", "is at 9:30"),
        "Is the JPY rounding bug fixed?": ("Fixed ORION-160", "still open"),
    }
    for question, (newer, older) in cases.items():
        found = await client.call_tool("recall", {"query": question})
        lines = text_of(found).splitlines()
        first_newer = next(i for i, line in enumerate(lines) if newer in line)
        first_older = next(i for i, line in enumerate(lines) if older in line)
        assert first_newer < first_older, lines
        assert f"superseded by {first_newer + 1}" in lines[first_older]
        assert found.structured_content is not None
        hits = found.structured_content["hits"]
        assert hits[first_older]["superseded_by"] == hits[first_newer]["id"]


async def test_a_summary_states_the_current_state(client: Client) -> None:
    summary = text_of(await client.call_tool("summarize", {"query": "the JPY rounding bug"}))
    assert "Fixed ORION-160" in summary and "still open" not in summary
    staging = text_of(await client.call_tool("summarize", {"query": "staging database port"}))
    assert "5433" in staging and "port 5432" not in staging


async def test_a_default_recall_reads_in_well_under_fifteen_hundred_characters(client: Client) -> None:
    for question in QUESTIONS:
        found = await client.call_tool("recall", {"query": question})
        assert len(text_of(found)) <= 1_500
        assert len(json.dumps(found.structured_content)) <= 1_500


async def test_the_tool_list_stays_under_eight_thousand_characters_with_plain_descriptions(
    client: Client,
) -> None:
    listed = await client.list_tools()
    tools = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]
    assert len(json.dumps(tools)) <= 8_000
    for tool in tools:
        assert "\n" not in tool["description"] and "  " not in tool["description"]
    described = {tool["name"]: tool["description"] for tool in tools}
    assert "before answering" in described["recall"] and "after each turn" in described["remember"]

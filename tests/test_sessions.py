"""Sessions and periods through MCP: a client walks the temporal tree as an agent or a person would.

Five working sessions of eight turns on unrelated subjects, each with its own session id, 7 to 12
days apart (and the same without session ids, cut by silences): every session sits under one
session node that holds nothing else, no node cuts a session, a session holds at most two segments,
``left`` / ``right`` at a session walk the sessions in time order, and a period's summary quotes
nothing from outside the period but the note of a later change.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from mcp import Client

from memtree_mcp.config import Settings
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.ui.api import timeline_segments
from tests.hashing_embedder import HashingEmbedder
from tests.mcp_text import remember_as_an_agent, text_of


@pytest.fixture
def embedder() -> HashingEmbedder:
    """The shape of the temporal tree through MCP, not what recall finds:
    the hashing embedder stands in for the model (conftest.py)."""
    return HashingEmbedder()


pytestmark = pytest.mark.anyio

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DAYS_APART = [0, 9, 7, 12, 8]
# Five sessions of a developer's week-by-week work; the turns of a session change subject.
SESSIONS = [
    [
        "Bug #42: the invoice PDF renders the VAT line twice.",
        "The SAML sign-on for Acme fails with a clock skew error.",
        "Onboarding checklist: new hires get a YubiKey on day one.",
        "The staging database listens on port 5433.",
        "Lunch order for the team offsite is vegetarian pizza.",
        "The mobile app's splash screen is slow on Android 11.",
        "Renewed the TLS certificate for api.example.org.",
        "The design review moved to Thursdays at 14:00.",
    ],
    [
        "Migrated the billing cron jobs to Kubernetes CronJobs.",
        "Ines wants the quarterly report as a spreadsheet.",
        "The search index rebuild takes forty minutes.",
        "Fixed the flaky checkout test by freezing time.",
        "The office Wi-Fi password changed to a passphrase.",
        "Sentry now groups errors by release tag.",
        "The Grafana dashboard for queues got a latency panel.",
        "Bug #57: emails to Gmail land in spam since Monday.",
    ],
    [
        "The staging database now listens on port 5434.",
        "Karl takes over the payments module from Ines.",
        "The feature flag for dark mode is on for 10% of users.",
        "Backups are now kept for thirty days.",
        "The load balancer health check path is /healthz.",
        "A customer asked for SSO with Okta.",
        "Replaced moment.js with date-fns in the web client.",
        "The CI runners moved to the Frankfurt region.",
    ],
    [
        "Bug #42 is fixed: the VAT line is rendered once.",
        "The data retention policy is three years for invoices.",
        "Postgres was upgraded to version 16 on production.",
        "The iOS build needs Xcode 16 from now on.",
        "Planning poker sessions happen every other Monday.",
        "The rate limit for the public API is 100 requests a minute.",
        "Rotated the AWS access keys for the deploy user.",
        "The marketing site moved to a static host.",
    ],
    [
        "The on-call rotation switched to weekly shifts.",
        "Webhooks now retry five times with backoff.",
        "The legacy SOAP endpoint will be shut down in June.",
        "Translations are managed in Weblate now.",
        "The Android minimum version is now 12.",
        "Docker images are scanned with Trivy in CI.",
        "The product roadmap review is on the 30th.",
        "The team chat moved from Slack to Zulip.",
    ],
]


def turns() -> Iterator[tuple[str, str, str]]:
    """(timestamp, session, text) of every turn, in order: a turn every five minutes."""
    day = START
    for number, (apart, texts) in enumerate(zip(DAYS_APART, SESSIONS, strict=True)):
        day += timedelta(days=apart)
        for minute, text in enumerate(texts):
            moment = day + timedelta(minutes=5 * minute)
            yield moment.isoformat().replace("+00:00", "Z"), f"work-{number}", text


# The agent knows that the later port replaces the earlier, and confirms it when remember offers it.
REPLACES = {"The staging database now listens on port 5434.": "The staging database listens on port 5433."}


async def remembered(service: MemoryService, *, with_ids: bool) -> AsyncIterator[Client]:
    async with Client(build_server(service)) as client:
        for timestamp, session, text in turns():
            await remember_as_an_agent(
                client, timestamp, session if with_ids else None, text, REPLACES.get(text)
            )
        yield client


@pytest.fixture(params=["session ids", "silences"])
async def client(request: pytest.FixtureRequest, service: MemoryService) -> AsyncIterator[Client]:
    async for connected in remembered(service, with_ids=request.param == "session ids"):
        yield connected


async def node(client: Client, node_id: str | None = None, move: str = "stay", **more: Any) -> dict[str, Any]:
    """Where the cursor is after ``move``: navigate's structured result (ids, kind, moves), ``text``,
    what the model reads, and ``period``, the time scale that text names."""
    arguments: dict[str, Any] = {"tree": "temporal", "move": move, **more}
    if node_id is not None:
        arguments["node_id"] = node_id
    result = await client.call_tool("navigate", arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    text = text_of(result)
    # The first line names the node: "temporal tree, <path>: session of 8 memories, <dates> {id}".
    named = re.search(r": (\w+) of \d+ memor", text.splitlines()[0])
    return {**result.structured_content, "text": text, "period": named.group(1) if named else None}


async def memories_under(client: Client, node_id: str) -> list[str]:
    """The texts of the memories under a node, in time order, found by walking down."""
    shown = await node(client, node_id)
    if shown["kind"] == "leaf":
        return [shown["text"].splitlines()[1].split(" (superseded by ", 1)[0]]
    found: list[str] = []
    for child in shown["children"]:
        found += await memories_under(client, child)
    return found


async def every_branch(client: Client) -> list[dict[str, Any]]:
    """Every branch below the root, parents before children, as navigate shows it."""
    out: list[dict[str, Any]] = []
    queue = list((await node(client))["children"])
    while queue:
        shown = await node(client, queue.pop(0))
        if shown["kind"] != "leaf":
            out.append(shown)
            queue += shown["children"]
    return out


def label_line(parent_text: str, node_id: str) -> str:
    """The line of a parent's view that shows the child ``node_id``: "2. <label> — <gist> (…) {id}"."""
    (line,) = [line for line in parent_text.splitlines() if line.endswith(f"{{{node_id}}}")]
    return line.split(". ", 1)[1]


async def test_each_session_has_one_node_that_holds_it_alone_and_no_node_cuts_a_session(
    client: Client,
) -> None:
    branches = await every_branch(client)
    sessions = [b for b in branches if b.get("period") == "session"]
    assert [await memories_under(client, s["node_id"]) for s in sessions] == SESSIONS
    for branch in branches:
        held = set(await memories_under(client, branch["node_id"]))
        for texts in SESSIONS:  # a node holding part of a session holds all of it, or is within it
            if held & set(texts):
                assert set(texts) <= held or held <= set(texts), branch["text"]
    for number, session in enumerate(sessions):
        assert len(session["children"]) <= 2, session["text"]  # at most two topical segments
        day = (START + timedelta(days=sum(DAYS_APART[: number + 1]))).date().isoformat()
        parent = await node(client, session["parent"])
        assert re.match(
            rf"session (work-{number} )?{day} \d\d:\d\d · ", label_line(parent["text"], session["node_id"])
        )


async def test_left_and_right_at_a_session_walk_the_sessions_in_time_order(client: Client) -> None:
    shown = await node(client)
    while shown.get("period") != "session":  # down the first child: month, week, day, then the session
        shown = await node(client, shown["node_id"], "down", index=0)
    walked = [shown]
    while shown.get("right") is not None:
        shown = await node(client, shown["node_id"], "right")
        assert shown["period"] == "session"
        walked.append(shown)
    assert [await memories_under(client, s["node_id"]) for s in walked] == SESSIONS
    back = await node(client, walked[-1]["node_id"], "left")
    assert back["node_id"] == walked[-2]["node_id"]
    refused = await client.call_tool(
        "navigate", {"tree": "temporal", "node_id": walked[0]["node_id"], "move": "left"}
    )
    assert refused.is_error and "first node" in text_of(refused)
    # What the model reads says what the node is: "session of 8 memories".
    assert "session of 8 memories" in walked[1]["text"].splitlines()[0]


async def test_a_period_summary_quotes_only_that_period_and_notes_later_changes(client: Client) -> None:
    day = START  # the first session's day: the staging port was 5433, 5434 three weeks later
    result = await client.call_tool(
        "summarize",
        {"time_from": day.isoformat(), "time_to": (day + timedelta(days=1)).isoformat(), "max_tokens": 2000},
    )
    summary = text_of(result)
    others = [text for texts in SESSIONS[1:] for text in texts]
    for line in summary.splitlines():
        quoted = line.split("changed later", 1)[0]  # a later change may be noted after this
        assert not any(text in quoted for text in others), line
    assert "port 5433" in summary and "5434" in summary.split("changed later", 1)[-1]


async def test_the_explorers_timeline_has_one_card_a_session(client: Client, service: MemoryService) -> None:
    timeline = service.read(timeline_segments)
    assert timeline is not None and timeline["period"] == "session"
    assert [s["leaf_count"] for s in timeline["segments"]] == [8] * 5


def test_memories_without_session_ids_are_cut_by_the_configured_silence(tmp_path: Any, embedder: Any) -> None:
    settings = Settings(home=str(tmp_path / "store"), namespace="default", session_gap="10m")  # type: ignore[arg-type]
    service = MemoryService(settings, embedder=embedder)
    try:
        for minutes, text in [(0, "a"), (8, "b"), (30, "c"), (35, "d")]:
            service.remember(
                f"note {text} about the release", timestamp=(START + timedelta(minutes=minutes)).isoformat()
            )
        memory = service.memory()
        assert memory is not None
        tree = memory.temporal
        sessions = [c for c in tree.root.children if tree.period_of(c) == "session"]
        assert [tree.branches[s].leaf_count for s in sessions] == [2, 2]
    finally:
        service.close()
    with pytest.raises(ValueError, match="duration"):
        Settings(home=str(tmp_path / "other"), session_gap="soon")  # type: ignore[arg-type]


def test_a_store_of_schema_4_reads_with_sessions_and_the_upgrade_stores_them(
    settings: Settings, embedder: Any
) -> None:
    import lancedb
    import pyarrow as pa

    from memtree_mcp.core.trees.model import Branch
    from memtree_mcp.store.rows import branch_row, node_rows, node_schema

    source = MemoryService(settings.model_copy(update={"home": settings.home + "-source"}), embedder=embedder)
    for timestamp, session, text in turns():
        source.remember(text, timestamp=timestamp, session=session)
    memory = source.memory()
    assert memory is not None
    # Schema 4's temporal tree grouped by subject alone; here one flat segment of everything.
    rows = [
        {**row, "rev": 0} for row in node_rows(memory, [*memory.leaves, *memory.semantic.branches], (), 1.0)
    ]
    flat = Branch(id="temporal-root", tree="temporal", kind="root", parent=None, depth=0)
    flat.children = sorted(memory.leaves, key=lambda n: memory.leaves[n].seq)
    rows.append({**branch_row(flat, 1.0), "rev": 0})
    current = node_schema(embedder.identity, embedder.dimension)
    schema = current.with_metadata({**(current.metadata or {}), b"memtree.schema_version": b"4"})
    lancedb.connect(settings.home).create_table("default", data=pa.Table.from_pylist(rows, schema=schema))
    source.close()

    service = MemoryService(settings, embedder=embedder)
    read = service.memory()
    assert read is not None and service.spaces["default"].table.outdated
    tree = read.temporal
    sessions = [n for n in tree.walk() if tree.period_of(n) == "session"]
    assert len(sessions) == 5 and len(read.leaves) == 40  # read with sessions before any write
    before = [version for version, _ in service.upkeep.history()]
    service.remember("The release train leaves on Fridays.", session="work-4")
    assert not service.spaces["default"].table.outdated
    service.close()

    again = MemoryService(settings, embedder=embedder)
    stored = again.memory()
    assert stored is not None and not stored.temporal_rebuilt  # the tree was stored by the upgrade
    # The 40 memories' five sessions, and the new memory's own (today, months later).
    assert len([n for n in stored.temporal.walk() if stored.temporal.period_of(n) == "session"]) == 6
    assert set(read.leaves) < set(stored.leaves) and len(stored.leaves) == 41
    with pytest.raises(Exception, match="no version"):
        again.upkeep.restore(str(before[0]))  # history before the upgrade: refused by name
    again.close()

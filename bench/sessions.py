"""Sessions and periods: how the temporal tree groups a few weeks of work, and how well an agent
walking it finds a memory.

A scenario written for this benchmark: five working sessions of eight turns each on unrelated
subjects, 7 to 12 days apart, a turn every four minutes, remembered once with a session id per
session and once without any (the sessions then come from silences). For each run:

- ``lowest_segments``: branches whose children are memories, and the most in one session;
- ``nodes_cutting_a_session``: branches that hold part of a session and memories of another;
- ``agent_top1``: for 14 questions, whether the memory agent (no LLM: the embedding policy) puts the
  right memory first among what it found, walking the temporal tree and the semantic tree;
- ``period_summaries_quoting_outside``: summaries of each session's day (``summarize`` with a time
  range) that quote a memory of another day outside a "changed later" note.

Nothing here depends on the temporal tree's levels, so the same script measures an older checkout
(``PYTHONPATH=/other/checkout python bench/run.py sessions``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from latency import machine_info, source_state

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.providers import make_embedder
from memtree_mcp.service import MemoryService

START = datetime(2026, 1, 12, 10, 0, tzinfo=UTC)
DAYS_APART = [0, 8, 11, 7, 12]
SESSIONS = [
    [
        "The nightly ETL job failed because the S3 bucket policy changed.",
        "Maria prefers code reviews in the morning.",
        "The VPN client needs version 5.2 on macOS Sonoma.",
        "Our Stripe webhook secret was rotated on Monday.",
        "The conference talk proposal is due on the 20th.",
        "Redis memory usage peaks at 6 GB during imports.",
        "The new intern starts with the documentation backlog.",
        "The printer on the third floor needs a new toner.",
    ],
    [
        "The search page uses Elasticsearch 8 with a custom analyzer.",
        "Tom is on parental leave until April.",
        "Kafka consumer lag alerts fire above ten thousand messages.",
        "The company offsite will be in Porto.",
        "The password reset email template was rewritten.",
        "Terraform state lives in a locked S3 backend.",
        "The Android release is blocked on a Play Store review.",
        "Coffee beans are ordered from a roaster in Leipzig.",
    ],
    [
        "The GraphQL gateway times out after 30 seconds.",
        "Customer Globex wants invoices in Spanish.",
        "Feature branches are deleted after merging.",
        "The on-call phone number changed to the new provider.",
        "Load tests run every Friday against staging.",
        "The security audit found an outdated OpenSSL in the base image.",
        "The team lunch is on Wednesdays at noon.",
        "Image uploads are resized by a Lambda function.",
    ],
    [
        "The billing service is written in Go 1.22.",
        "Lena leads the accessibility review.",
        "Database migrations run with Flyway in CI.",
        "The support inbox gets about 200 tickets a week.",
        "The mobile app crashes on iPad split view.",
        "Cloudflare caches the marketing pages for an hour.",
        "The quarterly planning is in the big meeting room.",
        "Error budgets are reviewed at the monthly SRE meeting.",
    ],
    [
        "The data warehouse moved from Redshift to BigQuery.",
        "Paul handles the vendor contracts.",
        "Dependabot opens pull requests every Tuesday.",
        "The customer portal supports passkeys now.",
        "The holiday calendar is shared in the HR tool.",
        "gRPC is used between the pricing and the catalog services.",
        "The staging environment is rebuilt every night.",
        "The office plants are watered on Thursdays.",
    ],
]
# (question, the memory that answers it)
QUESTIONS = [
    ("Why did the nightly ETL job fail?", SESSIONS[0][0]),
    ("When does Maria like to do code reviews?", SESSIONS[0][1]),
    ("How much memory does Redis use during imports?", SESSIONS[0][5]),
    ("Which Elasticsearch version does search use?", SESSIONS[1][0]),
    ("What is the threshold for Kafka consumer lag alerts?", SESSIONS[1][2]),
    ("Where is the Terraform state stored?", SESSIONS[1][5]),
    ("What is the GraphQL gateway timeout?", SESSIONS[2][0]),
    ("What language does Globex want invoices in?", SESSIONS[2][1]),
    ("What did the security audit find?", SESSIONS[2][5]),
    ("Which Go version does the billing service use?", SESSIONS[3][0]),
    ("How are database migrations run?", SESSIONS[3][2]),
    ("How long does Cloudflare cache the marketing pages?", SESSIONS[3][5]),
    ("Where did the data warehouse move to?", SESSIONS[4][0]),
    ("How do the pricing and catalog services talk to each other?", SESSIONS[4][5]),
]


def turns() -> Iterator[tuple[str, str, str]]:
    """(timestamp, session, text) of every turn, in order."""
    day = START
    for number, (apart, texts) in enumerate(zip(DAYS_APART, SESSIONS, strict=True)):
        day += timedelta(days=apart)
        for minute, text in enumerate(texts):
            yield (day + timedelta(minutes=4 * minute)).isoformat(), f"s{number}", text


def tree_figures(service: MemoryService) -> dict[str, Any]:
    """Segments and cut sessions, read off the temporal tree's branches and children alone."""
    memory = service.memory()
    assert memory is not None
    tree = memory.temporal
    session_of = {
        leaf.id: number
        for leaf in memory.leaves.values()
        for number, texts in enumerate(SESSIONS)
        if leaf.text in texts
    }

    def under(node_id: str) -> list[str]:
        branch = tree.branches.get(node_id)
        if branch is None:
            return [node_id]
        return [leaf for child in branch.children for leaf in under(child)]

    lowest = [b for b in tree.branches.values() if b.children and all(c in memory.leaves for c in b.children)]
    per_session = [0] * len(SESSIONS)
    for branch in lowest:
        for number in {session_of[c] for c in branch.children}:
            per_session[number] += 1
    cutting = 0
    for branch in tree.branches.values():
        if branch.parent is None:
            continue
        held = under(branch.id)
        sessions = {session_of[n] for n in held}
        whole = all(sum(1 for n in held if session_of[n] == s) == len(SESSIONS[s]) for s in sessions)
        if len(sessions) > 1 and not whole:
            cutting += 1
    return {
        "lowest_segments": len(lowest),
        "most_segments_in_a_session": max(per_session),
        "nodes_cutting_a_session": cutting,
        "height": tree.height,
    }


def agent_top1(service: MemoryService, tree: str) -> dict[str, Any]:
    memory = service.memory()
    assert memory is not None
    right = 0
    misses: list[str] = []
    for question, expected in QUESTIONS:
        found = service.navigate(tree=tree, query=question, agent=True, max_steps=12).context
        first = next((c.text for c in found if c.id in memory.leaves), "")
        if first.split(" (superseded by", 1)[0] == expected:
            right += 1
        else:
            misses.append(question)
    return {"right": right, "of": len(QUESTIONS), "misses": misses}


def period_summaries(service: MemoryService) -> dict[str, Any]:
    outside = 0
    day = START
    for number, apart in enumerate(DAYS_APART):
        day += timedelta(days=apart)
        others = [t for n, texts in enumerate(SESSIONS) if n != number for t in texts]
        text = service.summarize(
            time_from=day.isoformat(), time_to=(day + timedelta(days=1)).isoformat(), max_tokens=2000
        ).summary
        if any(o in line.split("changed later", 1)[0] for line in text.splitlines() for o in others):
            outside += 1
    return {"quoting_outside": outside, "of": len(DAYS_APART)}


def run(with_ids: bool, embedder: Embedder) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        service = MemoryService(Settings(home=home, namespace="default"), embedder=embedder)
        try:
            for timestamp, session, text in turns():
                service.remember(text, timestamp=timestamp, session=session if with_ids else None)
            return {
                **tree_figures(service),
                "agent_top1_temporal": agent_top1(service, "temporal"),
                "agent_top1_semantic": agent_top1(service, "semantic"),
                "period_summaries": period_summaries(service),
            }
        finally:
            service.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/sessions.json"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    embedder = make_embedder(os.environ.get("MEMTREE_EMBEDDER", "local"))  # the default unless set
    report = {
        "memories": sum(len(texts) for texts in SESSIONS),
        "sessions": len(SESSIONS),
        "with_session_ids": run(True, embedder),
        "without_session_ids": run(False, embedder),
        "command": shlex.join([sys.executable, *sys.argv]),
        "source": source_state(),
        "machine": machine_info(),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for key in ("with_session_ids", "without_session_ids"):
        part = report[key]
        print(
            f"{key}: {part['lowest_segments']} lowest segments (at most {part['most_segments_in_a_session']} "
            f"a session), {part['nodes_cutting_a_session']} nodes cutting a session; agent top-1 temporal "
            f"{part['agent_top1_temporal']['right']}/14, semantic {part['agent_top1_semantic']['right']}/14; "
            f"period summaries quoting outside {part['period_summaries']['quoting_outside']}/5"
        )
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A realistic memory to look at: a developer's agent sessions over five months, deterministic.

The explorer and the labels are judged on what a person sees, and nine handmade memories (one
segment, one branch or two) show none of the problems of a real store: many segments side by side,
siblings about neighbouring subjects ("staging postgres" beside "production postgres"), names with
digits ("orion-160", port 5433). This builds ~200 memories of that kind: sessions of 5 to 14
memories on one subject each, a few days apart from January to May 2026, from sentences with
varied slots so no two memories are the same. Same ``seed``, same memories.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

# One subject a session: sentences with {slots} filled from the lists after them.
SUBJECTS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "staging-postgres": (
        [
            "The staging Postgres runs on port 5433 behind pgbouncer; {detail}.",
            "Staging database migrations are applied with alembic before {moment}.",
            "The staging Postgres replica lagged {minutes} minutes after {moment}.",
            "Staging database credentials live in the vault path secret/staging/postgres; {detail}.",
            "Nightly backups of the staging Postgres go to the staging-backups bucket; {detail}.",
        ],
        {
            "detail": [
                "the user checked it twice",
                "nobody else may change it",
                "it was noted in the runbook",
                "the user asked to keep it that way",
                "it changed last week",
            ],
            "moment": ["each deploy", "the Friday release", "the load test", "the schema change"],
            "minutes": ["3", "7", "12", "20"],
        },
    ),
    "production-postgres": (
        [
            "The production Postgres cluster has three replicas in Frankfurt; {detail}.",
            "Production database failover was tested on {day} and took {minutes} minutes.",
            "The production Postgres max_connections is 400; {detail}.",
            "Production database vacuum jobs run at 03:00 UTC; {detail}.",
            "A slow query on the production invoices table was fixed with an index; {detail}.",
        ],
        {
            "detail": [
                "the DBA team owns it",
                "the user wants alerts on it",
                "it is in the SLO doc",
                "the change needs a ticket",
                "the user double-checked it",
            ],
            "day": ["Monday", "Tuesday", "Thursday"],
            "minutes": ["2", "4", "9"],
        },
    ),
    "orion-160": (
        [
            "Bug orion-160: the checkout service returns HTTP 502 when {cause}.",
            "For orion-160 the user suspects the retry loop in the payment client; {detail}.",
            "orion-160 reproduces with {count} concurrent checkouts against the sandbox.",
            "The orion-160 fix adds a timeout of {seconds} seconds to the payment gateway call.",
            "orion-160 was reopened because {cause} in the canary.",
        ],
        {
            "cause": [
                "the payment gateway is slow",
                "the cart has over 50 items",
                "a coupon expires mid-request",
                "the session token is refreshed",
            ],
            "detail": ["logs show a spike of 502s", "the stack trace points at httpx", "QA confirmed it"],
            "count": ["20", "50", "100"],
            "seconds": ["5", "8", "15"],
        },
    ),
    "release": (
        [
            "Releases ship every second Tuesday; the freeze starts {when}.",
            "Release notes go in CHANGELOG.md and the user writes them {when}.",
            "The {version} release was tagged after the smoke tests passed.",
            "Hotfix {version} went out to fix a crash in the mobile login.",
            "The release checklist now includes a database migration dry run; {detail}.",
        ],
        {
            "when": ["on Monday morning", "the Friday before", "right after standup"],
            "version": ["v2.14.0", "v2.14.1", "v2.15.0", "v2.16.0", "v2.16.2"],
            "detail": ["the user added it", "it caught a bug once", "it takes ten minutes"],
        },
    ),
    "ci": (
        [
            "The CI pipeline on GitHub Actions takes {minutes} minutes; {detail}.",
            "The flaky test test_checkout_timeout fails about once in {count} runs.",
            "CI caches the pip wheels keyed on requirements.lock; {detail}.",
            "The user wants CI to run mypy and ruff before the unit tests.",
            "A self-hosted runner was added for the GPU tests; {detail}.",
        ],
        {
            "minutes": ["11", "14", "18", "22"],
            "detail": [
                "the user finds it too slow",
                "splitting the jobs helped",
                "the cache saves four minutes",
            ],
            "count": ["20", "30", "50"],
        },
    ),
    "kubernetes": (
        [
            "The services run on a Kubernetes cluster in eu-central-1; {detail}.",
            "Helm charts live in the deploy/charts folder; {detail}.",
            "The checkout deployment has {count} pods and autoscales on CPU.",
            "Kubernetes liveness probes were relaxed to {seconds} seconds after restarts.",
            "The ingress controller is nginx with cert-manager for TLS; {detail}.",
        ],
        {
            "detail": [
                "the platform team owns it",
                "the user prefers kubectl over the dashboard",
                "changes go through Argo CD",
            ],
            "count": ["4", "6", "8"],
            "seconds": ["10", "20", "30"],
        },
    ),
    "frontend": (
        [
            "The web frontend is moving from webpack to Vite; {detail}.",
            "The React components use TypeScript strict mode; {detail}.",
            "The design system lives in the ui-kit package, version {version}.",
            "Storybook runs on port 6006 for the ui-kit components.",
            "The checkout page bundle is {size} kB after the Vite migration.",
        ],
        {
            "detail": ["the user likes the faster builds", "two pages still break", "the team agreed on it"],
            "version": ["3.2", "3.4", "4.0"],
            "size": ["180", "240", "310"],
        },
    ),
    "preferences": (
        [
            "The user prefers tabs over spaces in Go code and {style}.",
            "The user's editor is Helix with a light theme; {detail}.",
            "The user writes commit messages in the imperative mood; {detail}.",
            "The user drinks green tea in the afternoon and {detail}.",
            "The user wants answers short, with code first and {style}.",
        ],
        {
            "style": ["no emojis", "type hints everywhere", "small functions"],
            "detail": ["does not like long explanations", "reviews code in the morning", "keeps a daily log"],
        },
    ),
    "holiday": (
        [
            "The user plans a hiking trip to the Dolomites in {month}.",
            "The user booked a hut near Cortina for {count} nights.",
            "The user's cat Miso stays with the neighbour during the trip; {detail}.",
            "The user is away from {month} 3 and wants on-call covered.",
            "The user needs new hiking boots before the Dolomites trip; {detail}.",
        ],
        {
            "month": ["June", "July"],
            "count": ["3", "4", "5"],
            "detail": ["the neighbour is called Ines", "Miso needs her pills twice a day", "size 43"],
        },
    ),
}
# Each session keeps to one subject; the order makes neighbours in time differ, and subjects recur.
SESSIONS = """
    staging-postgres orion-160 preferences ci production-postgres release orion-160 kubernetes frontend
    staging-postgres holiday ci release production-postgres frontend orion-160 kubernetes preferences
    holiday release staging-postgres ci frontend production-postgres
""".split()
START = datetime(2026, 1, 7, 9, 0, tzinfo=UTC)
# What a person adds to a note now and then; it multiplies the sentences without changing subjects.
ASIDES = [
    "",
    "",
    "",
    "",
    " Ana agreed.",
    " Bruno will follow up.",
    " To check again next week.",
    " The user said it twice.",
    " Keep this in mind.",
    " Mentioned in standup.",
    " Written in the team wiki.",
]


def workday_memories(count: int = 200, seed: int = 17) -> list[dict[str, Any]]:
    """About ``count`` memories as ``import`` reads them: content, timestamp, session, role."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    per_session = max(5, count // len(SESSIONS))
    when = START
    for number, subject in enumerate(SESSIONS):
        sentences, slots = SUBJECTS[subject]
        session = f"s{number + 1:02d}-{subject}"
        size = min(per_session + rng.randint(-3, 3), count - len(records))
        if size <= 0:
            break
        moment = when
        made = 0
        for _ in range(size * 20):  # bounded: give up on a session that cannot be varied enough
            if made == size:
                break
            template = rng.choice(sentences)
            text = template.format(**{name: rng.choice(values) for name, values in slots.items()})
            text += rng.choice(ASIDES)
            if text in seen:
                continue
            seen.add(text)
            records.append(
                {"content": text, "timestamp": moment.isoformat().replace("+00:00", "Z"), "session": session}
            )
            moment += timedelta(minutes=rng.randint(2, 9))
            made += 1
        when += timedelta(days=rng.randint(4, 9), hours=rng.randint(-2, 3))
    return records

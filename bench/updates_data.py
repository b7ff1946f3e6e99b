"""Data of the updates benchmark (``updates.py``): a project memory whose later memories change facts.

Everything here was invented for this benchmark: Orion, a fictional payments platform, its team,
services, bugs, decisions and the user's preferences, told over fourteen sessions from mid-January
to early April 2025.

Protocol
- ``MEMORIES``: one self-contained sentence each, with a key ``<topic>@<version>``, an ISO 8601
  timestamp and a session id; sessions hold 3 to 6 memories, two minutes apart. Version 1 of a
  topic is the base fact; versions 2 and 3 are later memories that change it (an update), phrased
  the way someone would say it then, sometimes close to the original wording, sometimes not.
- ``QUESTIONS``: ``updated`` questions ask about an updated topic, and their answer is its newest
  version (``stale`` lists the older ones); ``stable`` questions ask about a topic never updated;
  ``unrelated`` questions ask about something never stored (several share words with stored
  facts), so they have no answer.
- ``SUBJECTS``: subjects with updates given to ``summarize``, each with a substring only the newest
  version contains and, per stale version, a substring only that version contains.

``check()`` verifies the invariants above; ``python bench/updates_data.py`` runs it and prints counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

QuestionKind = Literal["updated", "stable", "unrelated"]
KINDS: tuple[QuestionKind, ...] = ("updated", "stable", "unrelated")
SESSION_STEP = timedelta(minutes=2)


@dataclass(frozen=True)
class Memory:
    key: str  # "<topic>@<version>"
    text: str
    timestamp: str  # ISO 8601, UTC
    session: str

    @property
    def topic(self) -> str:
        return self.key.split("@", 1)[0]

    @property
    def version(self) -> int:
        return int(self.key.split("@", 1)[1])


@dataclass(frozen=True)
class Question:
    text: str
    kind: QuestionKind
    answer: str | None  # key of the memory that answers it (the newest version), None if unrelated
    stale: tuple[str, ...] = ()  # keys of the older versions of the answer's topic


@dataclass(frozen=True)
class Subject:
    query: str  # given to summarize
    topic: str
    newest: str  # a substring only the newest version contains (compared case-insensitively)
    stale: dict[str, str] = field(default_factory=dict)  # stale key -> a substring only it contains


# (session id, start time, [(key, text), ...]); memories of a session are two minutes apart.
SESSIONS: list[tuple[str, str, list[tuple[str, str]]]] = [
    (
        "s01-kickoff",
        "2025-01-13T09:00:00Z",
        [
            ("lead@1", "Maya Okafor leads the Orion backend team."),
            ("designer@1", "Priya Raman is the product designer for the Orion checkout flow."),
            ("qa@1", "Lena Hartmann owns QA and writes the end-to-end test plans for Orion."),
            ("oncall@1", "Daniel Ferreira organises the Orion on-call rotation, one week per engineer."),
            ("brevity@1", "The user asks for short answers without long explanations."),
        ],
    ),
    (
        "s02-infra",
        "2025-01-15T14:10:00Z",
        [
            ("staging-port@1", "The staging database is Postgres 16 on port 5432."),
            ("prod-db@1", "Production data lives in a managed Postgres 15 instance in eu-west-1."),
            ("gateway-port@1", "The API gateway serves HTTP on port 8080 in every environment."),
            ("ledger@1", "The ledger service is written in Go and exposes gRPC on port 7070."),
            ("k8s@1", "Orion runs on Kubernetes 1.29, with one Helm chart per service."),
        ],
    ),
    (
        "s03-process",
        "2025-01-20T10:30:00Z",
        [
            ("deploy@1", "Orion deploys to production every Tuesday and Thursday afternoon."),
            ("freeze@1", "There is a code freeze during the last week of each quarter."),
            ("review@1", "Every pull request needs two approvals before it can be merged."),
            ("ci@1", "CI runs on GitHub Actions, with a separate workflow per service."),
            ("standup@1", "The daily standup is at 9:30 CET in the #orion-standup channel."),
        ],
    ),
    (
        "s04-preferences",
        "2025-01-24T16:00:00Z",
        [
            ("code-lang@1", "The user prefers code examples in TypeScript."),
            ("test-style@1", "The user wants pytest-style tests with plain asserts, not unittest classes."),
            ("editor@1", "The user works in Neovim with a LazyVim configuration."),
            ("commits@1", "The user writes commit messages in the Conventional Commits format."),
            ("home-town@1", "The user is based in Lisbon and works on Western European Time."),
        ],
    ),
    (
        "s05-bugs",
        "2025-01-29T11:20:00Z",
        [
            ("orion-160@1", "ORION-160: JPY invoices show two decimal places although the yen has none."),
            ("orion-172@1", "ORION-172: webhook retries can fire twice when the gateway times out."),
            ("orion-145@1", "ORION-145, the login redirect loop in Safari, was fixed in release 2.2.4."),
            ("flaky@1", "The checkout end-to-end test fails about one CI run in ten for no clear reason."),
        ],
    ),
    (
        "s06-data",
        "2025-02-04T09:45:00Z",
        [
            ("cache@1", "Session data is cached in Redis 7 with a 30-minute TTL."),
            ("search@1", "Product search runs on a three-node OpenSearch 2.11 cluster."),
            ("queue@1", "Background jobs go through RabbitMQ queues, one queue per job type."),
            ("email@1", "The notification service sends transactional emails through Postmark."),
            ("money@1", "Money amounts are stored as integer minor units, never as floats."),
        ],
    ),
    (
        "s07-decisions",
        "2025-02-10T13:00:00Z",
        [
            ("dashboard@1", "The team chose React with Vite for the new merchant dashboard."),
            ("monorepo@1", "All Orion services live in one monorepo built with Bazel."),
            ("flags@1", "Feature flags are managed with a self-hosted Unleash server."),
            ("api-style@1", "Public endpoints are REST with JSON bodies; GraphQL was rejected for now."),
            ("auth@1", "Merchants sign in through Auth0, with email and password or with Google."),
        ],
    ),
    (
        "s08-tools",
        "2025-02-14T15:30:00Z",
        [
            ("metrics@1", "Metrics are scraped by Prometheus and the dashboards live in Grafana."),
            ("logs@1", "Application logs are shipped to Loki and kept for 14 days."),
            ("secrets@1", "Secrets are kept in HashiCorp Vault, never in .env files."),
            ("tracker@1", "Bugs and tasks are tracked in Linear under the ORION team key."),
            ("wiki@1", "Internal documentation lives in Notion, in the Orion Engineering space."),
            ("budget@1", "The monthly cloud budget for Orion is 12,000 euros."),
        ],
    ),
    (
        "s09-triage",
        "2025-02-20T10:00:00Z",
        [
            ("orion-160@2", "ORION-160, the JPY rounding bug, is still open."),
            (
                "orion-181@1",
                "ORION-181 tracks the slow invoice PDF export: about 40 seconds for large accounts.",
            ),
            (
                "cache@2",
                "We bumped the session cache TTL to 2 hours because merchants kept getting logged out.",
            ),
            ("staging-port@2", "Staging Postgres now listens on 5433 after the migration."),
        ],
    ),
    (
        "s10-retro",
        "2025-02-27T16:15:00Z",
        [
            ("deploy@2", "From now on we ship to prod once a week, on Wednesday mornings only."),
            ("standup@2", "The daily standup now starts at 10:15 CET instead of 9:30."),
            ("gateway-port@2", "We moved the gateway off 8080; it answers on 9443 with TLS now."),
            ("ci@2", "The pipelines were migrated from GitHub Actions to Buildkite this sprint."),
        ],
    ),
    (
        "s11-reorg",
        "2025-03-06T09:10:00Z",
        [
            ("lead@2", "Maya Okafor has moved to the platform group; Tomasz Wrobel now runs backend."),
            ("email@2", "Transactional emails go out via Amazon SES since we dropped Postmark."),
            (
                "orion-172@2",
                "ORION-172 was closed as won't fix: webhook consumers must be idempotent instead.",
            ),
            ("payouts@1", "Merchant payouts run as a nightly batch at 02:00 UTC."),
        ],
    ),
    (
        "s12-frontend",
        "2025-03-13T14:40:00Z",
        [
            ("dashboard@2", "We dropped React for the merchant dashboard and are rewriting it in SvelteKit."),
            ("editor@2", "These days the user codes in Zed."),
            ("logs@2", "Loki log retention was raised to 30 days for the audit."),
            ("rate-limit@1", "The public API allows 100 requests per second per merchant."),
        ],
    ),
    (
        "s13-release",
        "2025-03-24T11:00:00Z",
        [
            ("orion-160@3", "Fixed ORION-160: JPY amounts now round half-even; shipped in 2.3.1."),
            (
                "cache@3",
                "After the security review, merchant sessions expire after 45 minutes of inactivity.",
            ),
            ("budget@2", "Finance cut Orion's cloud spending limit to 9,500 euros a month."),
        ],
    ),
    (
        "s14-platform",
        "2025-04-07T10:20:00Z",
        [
            ("deploy@3", "Deploys are continuous now: every merge to main goes straight to production."),
            ("backups@1", "Production Postgres is backed up every 6 hours with point-in-time recovery."),
            ("buddy@1", "New engineers on Orion get an onboarding buddy for their first two weeks."),
        ],
    ),
]


def _memories() -> list[Memory]:
    out: list[Memory] = []
    for session, start, items in SESSIONS:
        begin = datetime.fromisoformat(start.replace("Z", "+00:00"))
        for i, (key, text) in enumerate(items):
            at = (begin + i * SESSION_STEP).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            out.append(Memory(key, text, at, session))
    return sorted(out, key=lambda m: m.timestamp)


MEMORIES: list[Memory] = _memories()
BY_KEY: dict[str, Memory] = {m.key: m for m in MEMORIES}


def versions(topic: str) -> list[str]:
    """Keys of a topic's versions, oldest first."""
    return sorted((m.key for m in MEMORIES if m.topic == topic), key=lambda k: BY_KEY[k].version)


def updated(topic: str, text: str) -> Question:
    keys = versions(topic)
    return Question(text, "updated", keys[-1], tuple(keys[:-1]))


def stable(topic: str, text: str) -> Question:
    return Question(text, "stable", versions(topic)[-1])


def unrelated(text: str) -> Question:
    return Question(text, "unrelated", None)


QUESTIONS: list[Question] = [
    # -- updated topics: the answer is the newest version ----------------------------------------
    updated("lead", "Who leads the Orion backend team?"),
    updated("lead", "What does Maya Okafor work on now?"),
    updated("staging-port", "Which port does staging Postgres use?"),
    updated("staging-port", "What port should I use to connect to the staging database?"),
    updated("gateway-port", "What port does the API gateway listen on?"),
    updated("email", "Which email provider does Orion use?"),
    updated("cache", "What is the session TTL?"),
    updated("cache", "When do merchant sessions expire?"),
    updated("deploy", "How often do we deploy to production?"),
    updated("deploy", "Which day of the week do releases go out?"),
    updated("ci", "Which CI system runs our pipelines?"),
    updated("standup", "What time is the daily standup?"),
    updated("orion-160", "Is the JPY rounding bug fixed?"),
    updated("orion-160", "What is the status of ORION-160?"),
    updated("orion-172", "Is the duplicate webhook retry bug going to be fixed?"),
    updated("dashboard", "What framework is the merchant dashboard built with?"),
    updated("editor", "Which code editor does the user use?"),
    updated("logs", "How long are logs retained in Loki?"),
    updated("budget", "What is Orion's monthly cloud budget?"),
    # -- stable topics: never updated ------------------------------------------------------------
    stable("designer", "Who designs the checkout flow?"),
    stable("ledger", "Which port does the ledger service use?"),
    stable("prod-db", "In which region is the production database?"),
    stable("search", "What runs product search?"),
    stable("freeze", "When is the code freeze?"),
    stable("review", "How many approvals does a pull request need?"),
    stable("orion-181", "Which ticket tracks the slow PDF export?"),
    stable("orion-145", "Was the Safari login redirect loop fixed?"),
    stable("monorepo", "Which build tool does the monorepo use?"),
    stable("flags", "How are feature flags managed?"),
    stable("money", "How are money amounts stored?"),
    stable("code-lang", "Which language does the user want code examples in?"),
    stable("secrets", "Where are secrets stored?"),
    stable("queue", "What do we use to queue background jobs?"),
    stable("payouts", "When do merchant payouts run?"),
    stable("home-town", "Where is the user based?"),
    # -- never stored: nothing in MEMORIES answers these -----------------------------------------
    unrelated("What is the user's favourite football team?"),
    unrelated("Which cloud region hosts the ML cluster?"),
    unrelated("Which port does the OpenSearch cluster listen on?"),
    unrelated("What is the name of the user's dog?"),
    unrelated("Which Python version does the data science team use?"),
    unrelated("When is the next company offsite?"),
    unrelated("What uptime SLA do we promise merchants?"),
    unrelated("What is ORION-203 about?"),
    unrelated("What did we decide about mobile push notifications?"),
    unrelated("What is the team's sprint velocity in story points?"),
    unrelated("Which font does the user prefer in the terminal?"),
    unrelated("How much does the Auth0 plan cost per month?"),
]

SUBJECTS: list[Subject] = [
    Subject("staging database", "staging-port", "5433", {"staging-port@1": "5432"}),
    Subject(
        "ORION-160 JPY rounding bug",
        "orion-160",
        "half-even",
        {"orion-160@1": "two decimal places", "orion-160@2": "still open"},
    ),
    Subject(
        "production deploy schedule",
        "deploy",
        "every merge to main",
        {"deploy@1": "Tuesday and Thursday", "deploy@2": "Wednesday mornings"},
    ),
    Subject(
        "session expiry and cache TTL",
        "cache",
        "45 minutes",
        {"cache@1": "30-minute", "cache@2": "2 hours"},
    ),
    Subject("backend team lead", "lead", "Tomasz", {"lead@1": "leads the Orion backend team"}),
    Subject("email provider", "email", "Amazon SES", {"email@1": "through Postmark"}),
]


def check() -> None:
    """Raise AssertionError when the data breaks the protocol of the module docstring."""
    keys = [m.key for m in MEMORIES]
    assert len(keys) == len(set(keys)), "duplicate keys"
    texts = [m.text for m in MEMORIES]
    assert len(texts) == len(set(texts)), "duplicate texts"
    assert len({m.timestamp for m in MEMORIES}) == len(MEMORIES), "timestamps must be distinct"
    for _session, _start, items in SESSIONS:
        assert 3 <= len(items) <= 6, f"session {_session} has {len(items)} memories"
    for topic in {m.topic for m in MEMORIES}:
        keys_of = versions(topic)
        assert [BY_KEY[k].version for k in keys_of] == list(range(1, len(keys_of) + 1)), topic
        stamps = [BY_KEY[k].timestamp for k in keys_of]
        assert stamps == sorted(stamps), f"{topic}: versions out of time order"
    for q in QUESTIONS:
        if q.kind == "unrelated":
            assert q.answer is None and not q.stale, q.text
            continue
        assert q.answer in BY_KEY, q.text
        topic = BY_KEY[q.answer].topic
        assert q.answer == versions(topic)[-1], q.text
        assert (len(versions(topic)) > 1) == (q.kind == "updated"), q.text
        assert list(q.stale) == versions(topic)[:-1], q.text
    for s in SUBJECTS:
        newest = versions(s.topic)[-1]
        assert s.newest.lower() in BY_KEY[newest].text.lower(), s.query
        for key, marker in s.stale.items():
            assert key in versions(s.topic)[:-1], (s.query, key)
            others = [k for k in versions(s.topic) if k != key]
            assert marker.lower() in BY_KEY[key].text.lower(), (s.query, key)
            assert all(marker.lower() not in BY_KEY[k].text.lower() for k in others), (s.query, key)
        stale_keys = versions(s.topic)[:-1]
        assert all(s.newest.lower() not in BY_KEY[k].text.lower() for k in stale_keys), s.query


check()

if __name__ == "__main__":
    updates = [m for m in MEMORIES if m.version > 1]
    print(
        f"{len(MEMORIES)} memories ({len(MEMORIES) - len(updates)} base facts, {len(updates)} updates "
        f"of {len({m.topic for m in updates})} topics) in {len(SESSIONS)} sessions, "
        f"{MEMORIES[0].timestamp} .. {MEMORIES[-1].timestamp}"
    )
    for kind in KINDS:
        print(f"{kind}: {sum(q.kind == kind for q in QUESTIONS)} questions")
    print(f"{len(SUBJECTS)} summarize subjects")

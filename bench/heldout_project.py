"""Held-out project memory for the update benchmark: the Tidewell team, June to September 2026.

What this is
    A hand-written, fictional project memory of one software team (Tidewell, a field-service
    scheduling product: dispatch-api, roster-sync, notify-gw, ledgerd, tw-console and a technician
    app). It spans about four months and is stored one memory at a time, the way an agent would
    remember things while working with the team. Every product, customer, person and service here
    is invented.

Who wrote it
    Written on 2026-11-26 by a helper session, apart from the code it measures: neither
    memtree_mcp/ nor bench/update_*.py was read while writing it, and nothing here was tuned
    against their output. Keep it that way: do not edit this set to make a run look better.

What it holds
    MEMORIES       -- the memories in time order (ISO 8601 UTC timestamps, session ids).
                      15 of them update an earlier memory: 12 implicitly (nothing links them;
                      the server has to notice) and 3 explicitly (explicit=True: the agent
                      passes the link itself). Updates are written in deliberately different
                      ways: restated values, raised minimums, swapped owners, a ticket's status
                      among its neighbours, a replaced tool with a reason, moved dates, ports,
                      percentages, a reversed decision, a new role holder, and so on.
    ORDINARY_KEYS  -- every memory that updates nothing (derived below).
    LOOKALIKE_KEYS -- the ordinary memories written to look like updates but that are not:
                      numbered rooms and pools, staging vs production, a per-group exception to
                      a default, "now also", neighbouring tickets, per-service ports, owners of
                      different things. A careful server offers nothing for these.
    QUESTIONS      -- one question per update; `fresh` is a substring of the updating memory
                      giving the current value, `stale` a substring of the old memory giving the
                      superseded one.
    FOREIGN        -- four memories in German and Spanish (two old/new pairs), dated after
                      MEMORIES, with FOREIGN_QUESTIONS; report these apart from the main set.

How to use it
    Replay MEMORIES in order, remembering each with its timestamp and session. For explicit
    updates pass `updates` as the link; for everything else pass no link. Then score:
      (a) for each implicit update, whether the server offered the memory named by `updates`
          as a candidate when the update was remembered (recall of offers), and for each key in
          ORDINARY_KEYS whether it offered anything at all (false offers; LOOKALIKE_KEYS are the
          hard part of that, report them separately too);
      (b) for each of QUESTIONS, recall with `question` and check that a result containing
          `fresh` ranks above any result containing `stale`.
    This is a held-out test set: use it to measure, not to fit thresholds or rules.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Memory:
    key: str  # a short unique name
    timestamp: str  # ISO 8601 UTC, e.g. "2026-03-02T09:15:00Z"
    session: str  # a working-session id; several memories share one
    text: str  # the memory as an agent would store it
    updates: str | None = None  # key of the earlier memory this one updates, if any
    explicit: bool = False  # True when the agent passes the link itself


@dataclass(frozen=True)
class Question:
    key: str  # the updating memory's key
    question: str  # what a user would ask
    fresh: str  # substring of the updating memory giving the current value
    stale: str  # substring of the old memory giving the superseded value


MEMORIES: list[Memory] = [
    # --- June -------------------------------------------------------------------------------
    Memory(
        "standup-time",
        "2026-06-01T07:12:00Z",
        "ses-0601-onboard",
        "Daily standup is at 09:45 CET, cameras optional. Anything that needs more than two minutes "
        "gets pushed to a follow-up thread.",
    ),
    Memory(
        "dispatch-port",
        "2026-06-01T07:40:00Z",
        "ses-0601-onboard",
        "dispatch-api serves on port 8080 inside the cluster; the ingress maps it to 443 for the "
        "outside world.",
    ),
    Memory(
        "notify-port-old",
        "2026-06-01T07:55:00Z",
        "ses-0601-onboard",
        "notify-gw binds to 8085, same in staging and prod.",
    ),
    Memory(
        "roster-port",
        "2026-06-01T08:20:00Z",
        "ses-0601-onboard",
        "roster-sync listens on 8091. Its admin port is 8092 and is only reachable over the VPN, "
        "so don't be surprised when curl hangs from a laptop.",
    ),
    Memory(
        "utc-convention",
        "2026-06-01T08:31:00Z",
        "ses-0601-onboard",
        "Convention: every timestamp is stored in UTC and only converted to the tenant's zone at "
        "render time.",
    ),
    Memory(
        "py-min-old",
        "2026-06-03T12:05:00Z",
        "ses-0603-build",
        "Building dispatch-api needs Python 3.10 or anything newer; the Dockerfile pins the slim "
        "base image to match.",
    ),
    Memory(
        "node-min-console",
        "2026-06-03T12:22:00Z",
        "ses-0603-build",
        "The tw-console frontend build wants Node 22. Older Node versions choke on the import "
        "attributes syntax in the bundler config.",
    ),
    Memory(
        "pr-how-to-test",
        "2026-06-03T12:40:00Z",
        "ses-0603-build",
        "Marisol bounces any PR whose description lacks a 'How to test' section. Worth adding it "
        "even for one-line fixes.",
    ),
    Memory(
        "roster-owner-old",
        "2026-06-03T13:02:00Z",
        "ses-0603-build",
        "Kwame Asante owns roster-sync. If the overnight calendar sync fails, he's the person to ping.",
    ),
    Memory(
        "hana-billing",
        "2026-06-03T13:10:00Z",
        "ses-0603-build",
        "Hana Kobayashi owns the billing exports in ledgerd, including the CSV layout customers "
        "download from the console.",
    ),
    Memory(
        "canary-old",
        "2026-06-05T08:00:00Z",
        "ses-0605-rollout",
        "dispatch-api canaries take 2% of traffic for the first hour before the rollout continues.",
    ),
    Memory(
        "sched-flag-rollout",
        "2026-06-05T08:18:00Z",
        "ses-0605-rollout",
        "The new scheduler UI sits behind the sched-v2 flag and is being switched on per tenant, "
        "20% of tenants in the first wave.",
    ),
    Memory(
        "error-budget",
        "2026-06-05T08:40:00Z",
        "ses-0605-rollout",
        "Error budget for dispatch-api is 99.9% availability per calendar month.",
    ),
    Memory(
        "canary-new",
        "2026-06-05T09:45:00Z",
        "ses-0605-rollout",
        "Out of this morning's retro: a canary gets 10% of traffic during its first hour. The "
        "thinner slice never produced enough errors to judge a release on.",
        updates="canary-old",
    ),
    Memory(
        "logs-shipper-old",
        "2026-06-08T07:30:00Z",
        "ses-0608-observability",
        "Container logs go from each node to the Loki cluster through Fluent Bit, deployed as a DaemonSet.",
    ),
    Memory(
        "traces-path",
        "2026-06-08T07:50:00Z",
        "ses-0608-observability",
        "Traces take a different route from logs: services export OTLP to the OpenTelemetry "
        "collector, which forwards to Tempo.",
    ),
    Memory(
        "commit-prefixes",
        "2026-06-08T08:15:00Z",
        "ses-0608-observability",
        "Commit messages use conventional prefixes (feat:, fix:, chore:); a commit-msg hook "
        "enforces it and the changelog is generated from them.",
    ),
    Memory(
        "recon-time-old",
        "2026-06-09T14:00:00Z",
        "ses-0609-ops",
        "We kick off ledgerd's reconciliation batch every night at 23:30 UTC.",
    ),
    Memory(
        "dw-sync",
        "2026-06-09T14:12:00Z",
        "ses-0609-ops",
        "The sync into the analytics warehouse is a weekly job, Sundays at 04:00 UTC.",
    ),
    Memory(
        "escalation-old",
        "2026-06-09T14:30:00Z",
        "ses-0609-ops",
        "Pages nobody acknowledges escalate to the secondary on-call after 30 minutes.",
    ),
    Memory(
        "escalation-new",
        "2026-06-09T15:05:00Z",
        "ses-0609-ops",
        "Shortened the escalation policy this afternoon: an unacknowledged page goes to the "
        "secondary after 15 minutes. This replaces the timeout I noted earlier today.",
        updates="escalation-old",
        explicit=True,
    ),
    Memory(
        "status-page-deadline",
        "2026-06-09T15:20:00Z",
        "ses-0609-ops",
        "Customer-visible incidents need a status page post within 20 minutes of being declared.",
    ),
    Memory(
        "grpc-decision",
        "2026-06-11T09:00:00Z",
        "ses-0611-archreview",
        "Architecture review outcome: we'll adopt gRPC for calls between dispatch-api and "
        "roster-sync and retire the internal REST endpoints by Q3.",
    ),
    Memory(
        "openapi-decision",
        "2026-06-11T09:20:00Z",
        "ses-0611-archreview",
        "Also agreed in the review: the public API spec is written in OpenAPI 3.1 and linted in CI.",
    ),
    Memory(
        "kafka-job-status",
        "2026-06-11T09:40:00Z",
        "ses-0611-archreview",
        "Job status changes are published to Kafka on the job-status.v1 topic.",
    ),
    Memory(
        "lakeshore-golive-old",
        "2026-06-15T08:05:00Z",
        "ses-0615-customers",
        "Lakeshore Utilities goes live on the pilot on July 20. First customer we've had with more "
        "than 200 technicians in the field.",
    ),
    Memory(
        "lakeshore-seats-old",
        "2026-06-15T08:20:00Z",
        "ses-0615-customers",
        "Lakeshore's contract covers 250 technician seats.",
    ),
    Memory(
        "room-314",
        "2026-06-15T08:40:00Z",
        "ses-0615-customers",
        "Room 3.14 is booked for the Lakeshore kickoff on June 18, 10:00 to 12:00.",
    ),
    Memory(
        "room-316",
        "2026-06-15T08:44:00Z",
        "ses-0615-customers",
        "Room 3.16 is reserved that same morning for the backend hiring panel.",
    ),
    Memory(
        "token-expiry-old",
        "2026-06-17T11:30:00Z",
        "ses-0617-mobile",
        "Technician app sessions expire after 12 hours; after that the app forces a fresh login.",
    ),
    Memory(
        "password-reset",
        "2026-06-17T11:45:00Z",
        "ses-0617-mobile",
        "Password reset links are valid for 45 minutes.",
    ),
    Memory(
        "pixel-dog",
        "2026-06-17T12:00:00Z",
        "ses-0617-mobile",
        "Oskar's dog Pixel turns up on most afternoon calls. Nobody minds.",
    ),
    Memory(
        "tw412-open",
        "2026-06-17T12:10:00Z",
        "ses-0617-mobile",
        "TW-412 is still open: technicians get duplicate SMS reminders when a job is rescheduled. "
        "Hana suspects the retry queue in notify-gw.",
    ),
    Memory(
        "tw411",
        "2026-06-17T12:25:00Z",
        "ses-0617-mobile",
        "TW-411 (dispatch board freezes for tenants with more than 500 unassigned jobs) is in code review.",
    ),
    Memory(
        "tw413",
        "2026-06-17T12:31:00Z",
        "ses-0617-mobile",
        "TW-413 is the one where invoice PDFs show the wrong currency symbol for CAD tenants; "
        "it's waiting on QA.",
    ),
    Memory(
        "tw414",
        "2026-06-17T12:40:00Z",
        "ses-0617-mobile",
        "TW-414: roster-sync drops shifts that cross midnight Pacific time. Parked as won't-fix "
        "until the calendar rewrite.",
    ),
    Memory(
        "release-captain-old",
        "2026-06-22T07:50:00Z",
        "ses-0622-release",
        "Dara Whitfield is release captain for the summer trains, 3.7 and 3.8.",
    ),
    Memory(
        "docs-owner",
        "2026-06-22T08:05:00Z",
        "ses-0622-release",
        "Tomasz Wren maintains the public API reference; route doc changes through him.",
    ),
    Memory(
        "oskar-mobile",
        "2026-06-22T08:10:00Z",
        "ses-0622-release",
        "Oskar Brandt owns the mobile release pipeline, store submissions included.",
    ),
    Memory(
        "branch-cleanup",
        "2026-06-22T08:30:00Z",
        "ses-0622-release",
        "A cleanup bot deletes feature branches nobody has touched for 30 days.",
    ),
    Memory(
        "jobs-page-size-old",
        "2026-06-24T13:00:00Z",
        "ses-0624-api",
        "The /jobs list endpoint returns 50 results per page unless the client asks for something else.",
    ),
    Memory(
        "invoices-page-size",
        "2026-06-24T13:10:00Z",
        "ses-0624-api",
        "/invoices pages are smaller, 25 results per page, because every row carries its line items.",
    ),
    Memory(
        "driftwood-repo",
        "2026-06-24T13:30:00Z",
        "ses-0624-api",
        "Design tokens and shared components live in the driftwood repo. Import them, don't copy "
        "them into tw-console.",
    ),
    Memory(
        "guild-meeting-old",
        "2026-06-24T13:45:00Z",
        "ses-0624-api",
        "Backend guild meets Thursdays at 15:00 CET, one hour.",
    ),
    Memory(
        "guild-meeting-new",
        "2026-06-24T14:40:00Z",
        "ses-0624-api",
        "Heads-up from Priya: from next week the backend guild is on Wednesday mornings, 09:30 CET.",
        updates="guild-meeting-old",
    ),
    # --- July -------------------------------------------------------------------------------
    Memory(
        "prod-replicas",
        "2026-07-01T08:00:00Z",
        "ses-0701-capacity",
        "Production runs dispatch-api with 6 replicas behind the ingress.",
    ),
    Memory(
        "staging-replicas",
        "2026-07-01T08:05:00Z",
        "ses-0701-capacity",
        "On staging, dispatch-api has only 2 replicas, so load tests there don't tell us much.",
    ),
    Memory(
        "rate-limit-default",
        "2026-07-01T08:20:00Z",
        "ses-0701-capacity",
        "Public API default rate limit: 600 requests per minute per tenant.",
    ),
    Memory(
        "rate-limit-enterprise",
        "2026-07-01T08:35:00Z",
        "ses-0701-capacity",
        "Enterprise-tier tenants are allowed 3,000 requests per minute. Everyone else keeps the "
        "default limit.",
    ),
    Memory(
        "support-channel",
        "2026-07-01T09:00:00Z",
        "ses-0701-capacity",
        "Support escalations land in #tw-support-esc; someone from backend looks at it twice a day.",
    ),
    Memory(
        "py-min-new",
        "2026-07-06T07:15:00Z",
        "ses-0706-tooling",
        "As of this sprint dispatch-api requires Python 3.12 at minimum; the new typing syntax "
        "won't run on anything older.",
        updates="py-min-old",
    ),
    Memory(
        "pool-2",
        "2026-07-06T07:40:00Z",
        "ses-0706-tooling",
        "Build agent pool 2 handles the Android builds.",
    ),
    Memory(
        "pool-4",
        "2026-07-06T07:42:00Z",
        "ses-0706-tooling",
        "Pool 4 is the macOS pool; it only runs iOS builds and is usually the bottleneck on release days.",
    ),
    Memory(
        "tobias-leave",
        "2026-07-06T08:00:00Z",
        "ses-0706-tooling",
        "Tobias is on parental leave July 7 through August 15. Priya covers his reviews meanwhile.",
    ),
    Memory(
        "lakeshore-golive-new",
        "2026-07-09T12:00:00Z",
        "ses-0709-customers",
        "Lakeshore Utilities asked to push the pilot go-live to August 3; their field crews are "
        "tied up with storm repairs.",
        updates="lakeshore-golive-old",
    ),
    Memory(
        "brightwater-start",
        "2026-07-09T12:20:00Z",
        "ses-0709-customers",
        "Brightwater Transit's pilot is pencilled in to start September 8.",
    ),
    Memory(
        "squash-merges",
        "2026-07-09T12:30:00Z",
        "ses-0709-customers",
        "Priya prefers squash merges for feature branches but plain merge commits for release branches.",
    ),
    Memory(
        "tw412-fixed",
        "2026-07-14T09:00:00Z",
        "ses-0714-bugs",
        "TW-412 is fixed. The duplicate reminders came from notify-gw retrying sends the SMS "
        "provider had already accepted with a 202; the fix shipped in 3.8.2.",
        updates="tw412-open",
    ),
    Memory(
        "tw415",
        "2026-07-14T09:15:00Z",
        "ses-0714-bugs",
        "Filed TW-415 today: after a cold start the technician app shows yesterday's route until "
        "you pull to refresh.",
    ),
    Memory(
        "lunch-learn",
        "2026-07-14T09:30:00Z",
        "ses-0714-bugs",
        "Lunch-and-learn on Postgres partitioning is on September 10, with Priya presenting.",
    ),
    Memory(
        "kafka-location",
        "2026-07-16T08:00:00Z",
        "ses-0716-platform",
        "Kafka now also carries the technician location pings, on their own topic tech-location.v1.",
    ),
    Memory(
        "metrics-port",
        "2026-07-16T08:20:00Z",
        "ses-0716-platform",
        "Every service exposes Prometheus metrics on port 9102 at /metrics.",
    ),
    Memory(
        "seed-tenants",
        "2026-07-16T08:40:00Z",
        "ses-0716-platform",
        "The staging seed script creates three demo tenants: Alder, Birch and Cedar.",
    ),
    Memory(
        "notify-port-new",
        "2026-07-21T13:00:00Z",
        "ses-0721-mesh",
        "Since the 3.8 release notify-gw's listener sits on port 9120, which keeps it clear of the "
        "mesh sidecar's admin endpoint.",
        updates="notify-port-old",
    ),
    Memory(
        "ledgerd-port",
        "2026-07-21T13:20:00Z",
        "ses-0721-mesh",
        "ledgerd listens on 7300 and answers health checks on 7301.",
    ),
    Memory(
        "no-customer-names",
        "2026-07-21T13:40:00Z",
        "ses-0721-mesh",
        "No customer names in branch names or commit messages; use the tenant ID instead.",
    ),
    Memory(
        "roster-owner-new",
        "2026-07-27T08:00:00Z",
        "ses-0727-handover",
        "Ines Barros has taken over roster-sync from Kwame, who moved to the data platform team. "
        "Calendar sync failures go to her.",
        updates="roster-owner-old",
    ),
    Memory(
        "kwame-warehouse",
        "2026-07-27T08:15:00Z",
        "ses-0727-handover",
        "On the data platform side, Kwame looks after the weekly warehouse sync job.",
    ),
    Memory(
        "mobile-sprints",
        "2026-07-27T08:30:00Z",
        "ses-0727-handover",
        "Mobile sprints are two weeks long and run one week offset from the backend sprints.",
    ),
    # --- August -----------------------------------------------------------------------------
    Memory(
        "release-captain-new",
        "2026-08-04T07:30:00Z",
        "ses-0804-release",
        "Release captain for 3.9 and the trains after it: Lucia Ferreyra.",
        updates="release-captain-old",
    ),
    Memory(
        "code-freeze",
        "2026-08-04T07:45:00Z",
        "ses-0804-release",
        "Code freeze for 3.9 is August 19.",
    ),
    Memory(
        "lakeshore-seats-new",
        "2026-08-04T08:00:00Z",
        "ses-0804-release",
        "Lakeshore expanded their contract to 400 technician seats after the pilot went well; "
        "this replaces the seat count I noted in June.",
        updates="lakeshore-seats-old",
        explicit=True,
    ),
    Memory(
        "brightwater-seats",
        "2026-08-04T08:10:00Z",
        "ses-0804-release",
        "Brightwater Transit's pilot is capped at 60 technician seats.",
    ),
    Memory(
        "logs-shipper-new",
        "2026-08-11T12:00:00Z",
        "ses-0811-observability",
        "Log shipping switched to Vector this week, mainly because it can strip PII fields on the "
        "node before anything reaches Loki.",
        updates="logs-shipper-old",
    ),
    Memory(
        "hackathon",
        "2026-08-11T12:20:00Z",
        "ses-0811-observability",
        "Quarterly hackathon is the week of August 24. Pitch ideas in the hackathon doc by the 20th.",
    ),
    Memory(
        "recon-time-new",
        "2026-08-18T09:00:00Z",
        "ses-0818-ops",
        "Nightly reconciliation for ledgerd fires at 02:15 UTC these days, clear of the backup "
        "window it used to overlap.",
        updates="recon-time-old",
    ),
    Memory(
        "ledgerd-backups",
        "2026-08-18T09:20:00Z",
        "ses-0818-ops",
        "ledgerd's Postgres backups start at 00:00 UTC and take roughly ninety minutes.",
    ),
    Memory(
        "grpc-reversed",
        "2026-08-25T08:00:00Z",
        "ses-0825-archreview",
        "We're not moving dispatch-api and roster-sync to gRPC after all. They stay on JSON over "
        "HTTP; the codegen and proto toolchain cost more than the latency we'd win.",
        updates="grpc-decision",
    ),
    Memory(
        "lint-settings",
        "2026-08-25T08:20:00Z",
        "ses-0825-archreview",
        "Lint settings: line length 100 for Python, 120 for TypeScript.",
    ),
    # --- September --------------------------------------------------------------------------
    Memory(
        "token-expiry-new",
        "2026-09-02T11:00:00Z",
        "ses-0902-mobile",
        "Technician app logins now last 7 days. Techs kept getting kicked out halfway through long shifts.",
        updates="token-expiry-old",
    ),
    Memory(
        "db-pool-envs",
        "2026-09-02T11:15:00Z",
        "ses-0902-mobile",
        "ledgerd's connection pool is 80 in production; staging is capped at 20.",
    ),
    Memory(
        "jobs-page-size-new",
        "2026-09-02T11:30:00Z",
        "ses-0902-mobile",
        "/jobs defaults to 100 results per page since 3.9, superseding my June note about its page size.",
        updates="jobs-page-size-old",
        explicit=True,
    ),
    Memory(
        "marketing-site",
        "2026-09-15T08:00:00Z",
        "ses-0915-misc",
        "The marketing site is a separate Astro project owned by the growth team; backend never deploys it.",
    ),
    Memory(
        "retro-rollback-note",
        "2026-09-28T07:00:00Z",
        "ses-0928-retro",
        "Retro action item: any deploy PR that touches a migration gets a short rollback note in "
        "its description.",
    ),
]

QUESTIONS: list[Question] = [
    Question("canary-new", "How much traffic does a dispatch-api canary get in its first hour?", "10%", "2%"),
    Question(
        "escalation-new",
        "How long before an unacknowledged page escalates to the secondary?",
        "15 minutes",
        "30 minutes",
    ),
    Question("guild-meeting-new", "When does the backend guild meet?", "Wednesday", "Thursdays"),
    Question(
        "py-min-new",
        "What is the minimum Python version for building dispatch-api?",
        "Python 3.12",
        "Python 3.10",
    ),
    Question(
        "lakeshore-golive-new", "When does Lakeshore Utilities go live on the pilot?", "August 3", "July 20"
    ),
    Question(
        "tw412-fixed",
        "What's the status of TW-412, the duplicate SMS reminders bug?",
        "is fixed",
        "still open",
    ),
    Question("notify-port-new", "Which port does notify-gw listen on?", "9120", "8085"),
    Question("roster-owner-new", "Who owns roster-sync?", "Ines Barros", "Kwame Asante"),
    Question("release-captain-new", "Who is our release captain?", "Lucia Ferreyra", "Dara Whitfield"),
    Question(
        "lakeshore-seats-new",
        "How many technician seats does Lakeshore's contract cover?",
        "400 technician seats",
        "250 technician seats",
    ),
    Question("logs-shipper-new", "What ships our container logs to Loki?", "Vector", "Fluent Bit"),
    Question(
        "recon-time-new", "What time does ledgerd's nightly reconciliation start?", "02:15 UTC", "23:30 UTC"
    ),
    Question(
        "grpc-reversed",
        "What protocol do dispatch-api and roster-sync use to talk to each other?",
        "JSON over HTTP",
        "adopt gRPC",
    ),
    Question(
        "token-expiry-new",
        "How long does a technician app login last before it expires?",
        "7 days",
        "12 hours",
    ),
    Question(
        "jobs-page-size-new",
        "What is the default page size of the /jobs endpoint?",
        "100 results",
        "50 results",
    ),
]

ORDINARY_KEYS: tuple[str, ...] = tuple(m.key for m in MEMORIES if m.updates is None)

LOOKALIKE_KEYS: tuple[str, ...] = (
    "dispatch-port",
    "roster-port",
    "node-min-console",
    "hana-billing",
    "sched-flag-rollout",
    "error-budget",
    "traces-path",
    "dw-sync",
    "status-page-deadline",
    "openapi-decision",
    "kafka-job-status",
    "room-314",
    "room-316",
    "password-reset",
    "tw411",
    "tw413",
    "tw414",
    "docs-owner",
    "oskar-mobile",
    "invoices-page-size",
    "prod-replicas",
    "staging-replicas",
    "rate-limit-default",
    "rate-limit-enterprise",
    "pool-2",
    "pool-4",
    "brightwater-start",
    "tw415",
    "kafka-location",
    "metrics-port",
    "ledgerd-port",
    "kwame-warehouse",
    "brightwater-seats",
    "ledgerd-backups",
    "db-pool-envs",
)

FOREIGN: list[Memory] = [
    Memory(
        "de-export-port-old",
        "2026-10-05T08:10:00Z",
        "ses-1005-export",
        "Der Export-Dienst tw-export lauscht auf Port 7500; die Firewall-Freigabe ist beantragt.",
    ),
    Memory(
        "es-audit-date-old",
        "2026-10-06T10:00:00Z",
        "ses-1006-brightwater",
        "La auditoría de seguridad de Brightwater está programada para el 15 de octubre.",
    ),
    Memory(
        "de-export-port-new",
        "2026-10-12T09:30:00Z",
        "ses-1012-export",
        "tw-export wurde auf Port 7600 verlegt, weil der alte Port auf den neuen Knoten schon belegt ist.",
        updates="de-export-port-old",
    ),
    Memory(
        "es-audit-date-new",
        "2026-10-14T15:20:00Z",
        "ses-1014-brightwater",
        "Brightwater nos pidió aplazar la auditoría de seguridad hasta el 29 de octubre.",
        updates="es-audit-date-old",
    ),
]

FOREIGN_QUESTIONS: list[Question] = [
    Question("de-export-port-new", "Auf welchem Port läuft der Export-Dienst?", "7600", "7500"),
    Question(
        "es-audit-date-new",
        "¿Cuándo es la auditoría de seguridad de Brightwater?",
        "29 de octubre",
        "15 de octubre",
    ),
]


def _check() -> None:
    """Assert the set's own invariants; runs at import."""
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    everything = MEMORIES + FOREIGN
    keys = [m.key for m in everything]
    assert len(keys) == len(set(keys)), "keys must be unique"
    by_key = {m.key: m for m in everything}

    for group in (MEMORIES, FOREIGN):
        stamps = [datetime.strptime(m.timestamp, fmt) for m in group]
        assert all(m.timestamp.endswith("Z") for m in group)
        assert all(a < b for a, b in itertools.pairwise(stamps)), "timestamps must increase"
    assert FOREIGN[0].timestamp > MEMORIES[-1].timestamp, "FOREIGN comes after MEMORIES"

    for group in (MEMORIES, FOREIGN):
        seen: set[str] = set()
        for m in group:
            if m.updates is not None:
                assert m.updates in seen, f"{m.key} must update an earlier key in its list"
                assert by_key[m.updates].updates is None, f"{m.key} updates an update"
            seen.add(m.key)

    updates = [m for m in MEMORIES if m.updates is not None]
    implicit = [m for m in updates if not m.explicit]
    explicit = [m for m in updates if m.explicit]
    assert len(implicit) == 12 and len(explicit) == 3
    assert len({m.updates for m in updates}) == len(updates), "one update per old memory"
    now_word = re.compile(r"\bnow\b", re.IGNORECASE)
    assert sum(1 for m in implicit if now_word.search(m.text)) <= 4

    def gap(m: Memory) -> timedelta:
        old = by_key[m.updates or ""]
        return datetime.strptime(m.timestamp, fmt) - datetime.strptime(old.timestamp, fmt)

    later = [
        m for m in updates if m.session != by_key[m.updates or ""].session and gap(m) >= timedelta(days=14)
    ]
    same = [m for m in updates if m.session == by_key[m.updates or ""].session]
    assert len(later) >= 3 and len(same) >= 2

    texts = [m.text for m in MEMORIES]
    for questions, group, expected in (
        (QUESTIONS, MEMORIES, updates),
        (FOREIGN_QUESTIONS, FOREIGN, [f for f in FOREIGN if f.updates]),
    ):
        assert sorted(q.key for q in questions) == sorted(m.key for m in expected)
        for q in questions:
            new = by_key[q.key]
            old = by_key[new.updates or ""]
            assert q.fresh in new.text and q.fresh not in old.text, q.key
            assert q.stale in old.text and q.stale not in new.text, q.key
            assert q.question.endswith("?")
            if group is MEMORIES:
                # stronger than required: the stale value is found nowhere but in the old memory
                assert sum(q.stale in t for t in texts) == 1, q.key

    ordinary = set(ORDINARY_KEYS)
    assert ordinary == {m.key for m in MEMORIES if m.updates is None}
    assert len(LOOKALIKE_KEYS) == len(set(LOOKALIKE_KEYS))
    assert set(LOOKALIKE_KEYS) <= ordinary, "look-alikes must be ordinary memories"
    old_keys = {m.updates for m in updates}
    unrelated = ordinary - set(LOOKALIKE_KEYS) - old_keys
    assert len(MEMORIES) >= 60
    assert len(LOOKALIKE_KEYS) >= 20
    assert len(unrelated) >= 15
    assert len(FOREIGN) == 4 and sum(1 for f in FOREIGN if f.updates) == 2


_check()

"""Labelled pairs of memories: does a later memory update an earlier one? The dev set of the update
candidates ``remember`` offers (``core/ranking/candidates.py``, measured by ``candidates.py``; the
held-out pairs are ``pairs_heldout.py``).

Everything here was written for the update rule that judged pairs until issue 39 (issue 26, part 3):
short facts of the kind an agent stores, in many domains (infrastructure, people and roles,
schedules, product plans, bugs, versions, prices, addresses, preferences, personal life as told in a
chat). Each pair is an earlier memory, a later one, whether the later one **updates** the earlier
(it changes what the earlier said about the same subject, so the earlier is no longer the current
truth) and a ``kind`` that says what sort of pair it is:

- updates (``update=True``): ``value`` (only a value differs, no cue word), ``value-cue`` (a
  value changes and the text says so: "now", "raised", "moved"…), ``reworded`` (the same subject
  said in other words, the value changed), ``name`` (another person or product holds the role),
  ``status`` (open → resolved, planned → shipped…), ``negation`` ("no longer", "not … anymore"),
  ``version``, ``moved`` (a place or address changed), ``renamed``;
- not updates (``update=False``): ``lookalike-*`` (a fact of the same shape about another
  environment, place, version, platform, person, team, plan, service, customer, day), ``addition``
  (a second fact about the same thing that does not contradict the first, often with "also"),
  ``shared-words`` (an unrelated fact that shares words), ``restated`` (the same value said again,
  no change), ``mechanism`` (a change of how something is done that leaves an earlier value
  untouched), ``question`` (the later memory asks about the fact: a question states nothing),
  ``small-talk`` (greetings, thanks, reactions).

The last pairs are told in chat form ('Alice said, "…"', "User: …"), as a conversation's turns
are stored; ``lookalike-speaker`` there is the same fact said by another speaker of themselves.

``DEV`` and ``HELD_OUT`` split the pairs: every third pair (index 2, 5, 8…) is held out, the
rule was tuned on ``DEV`` only. ``python bench/update_pairs.py`` checks the data and prints counts.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple


class Pair(NamedTuple):
    kind: str
    update: bool
    older: str
    newer: str


U, N = True, False

PAIRS: list[Pair] = [
    # --- updates: a value changes, no cue word ---
    Pair("value", U, "The daily standup is at 9:30 CET.", "The daily standup is at 10:15 CET."),
    Pair(
        "value", U, "The monthly cloud budget is 12,000 euros.", "The monthly cloud budget is 15,000 euros."
    ),
    Pair("value", U, "Logs are kept for 14 days.", "Logs are kept for 30 days."),
    Pair(
        "value",
        U,
        "The API rate limit is 100 requests per minute.",
        "The API rate limit is 300 requests per minute.",
    ),
    Pair("value", U, "My gym membership costs $45 a month.", "My gym membership costs $52 a month."),
    Pair("value", U, "The session cache TTL is 30 minutes.", "The session cache TTL is 2 hours."),
    Pair(
        "value",
        U,
        "Sprint planning happens every other Monday at 14:00.",
        "Sprint planning happens every other Monday at 15:30.",
    ),
    Pair("value", U, "The minimum supported iOS version is 15.", "The minimum supported iOS version is 16."),
    Pair(
        "value",
        U,
        "The wifi password at the office is tangerine42.",
        "The wifi password at the office is mango77.",
    ),
    Pair("value", U, "Our team has 6 engineers.", "Our team has 8 engineers."),
    Pair("value", U, "The build takes about 12 minutes on CI.", "The build takes about 7 minutes on CI."),
    Pair(
        "value",
        U,
        "The payouts batch runs nightly at 02:00 UTC.",
        "The payouts batch runs nightly at 04:30 UTC.",
    ),
    Pair("value", U, "The database is Postgres on port 5432.", "The database is Postgres on port 6432."),
    Pair(
        "value",
        U,
        "The deadline for the tax return is April 15.",
        "The deadline for the tax return is May 1.",
    ),
    # --- updates: a value changes and the text says so ---
    Pair(
        "value-cue",
        U,
        "The staging database is Postgres 16 on port 5432.",
        "Staging Postgres now listens on 5433 after the migration.",
    ),
    Pair(
        "value-cue",
        U,
        "The API rate limit is 100 requests per minute.",
        "We raised the API rate limit to 300 requests per minute.",
    ),
    Pair(
        "value-cue",
        U,
        "The session cache TTL is 30 minutes.",
        "We bumped the session cache TTL to 2 hours because people kept getting logged out.",
    ),
    Pair(
        "value-cue",
        U,
        "Log retention in Loki is 14 days.",
        "Loki log retention was raised to 30 days for the audit.",
    ),
    Pair(
        "value-cue",
        U,
        "The daily standup is at 9:30.",
        "The daily standup now starts at 10:15 instead of 9:30.",
    ),
    Pair(
        "value-cue",
        U,
        "The gateway answers on port 8080.",
        "We moved the gateway off 8080; it answers on 9443 now.",
    ),
    Pair(
        "value-cue",
        U,
        "My rent is 1,200 euros a month.",
        "The landlord increased my rent to 1,350 euros a month.",
    ),
    Pair("value-cue", U, "The free tier allows 3 projects.", "The free tier now allows 5 projects."),
    Pair(
        "value-cue",
        U,
        "Checkout times out after 30 seconds.",
        "We lowered the checkout timeout to 20 seconds.",
    ),
    Pair("value-cue", U, "The office opens at 8:00.", "The office opens at 7:30 now."),
    Pair("value-cue", U, "Max upload size is 10 MB.", "Max upload size was increased to 25 MB."),
    Pair("value-cue", U, "The Pro plan costs $20 per month.", "The Pro plan price went up to $24 per month."),
    Pair("value-cue", U, "I run 10 km every Sunday.", "I now run 15 km every Sunday."),
    Pair(
        "value-cue",
        U,
        "The replica count for the web service is 3.",
        "We scaled the web service to 5 replicas.",
    ),
    Pair(
        "value-cue", U, "The release is planned for March 3.", "The release has been postponed to March 17."
    ),
    Pair("value-cue", U, "Connection pool size is 20.", "Connection pool size is 50 since the load test."),
    # --- updates: the same subject in other words ---
    Pair(
        "reworded",
        U,
        "The minimum OS version for the app is Android 10.",
        "The app now requires at least Android 12.",
    ),
    Pair(
        "reworded",
        U,
        "We deploy to production every Tuesday and Thursday.",
        "From now on we ship to production once a week, on Wednesdays.",
    ),
    Pair("reworded", U, "Backups run every 6 hours.", "We now back up every hour."),
    Pair(
        "reworded",
        U,
        "The user prefers code examples in TypeScript.",
        "The user now wants code examples in Python instead of TypeScript.",
    ),
    Pair("reworded", U, "I weigh 82 kg.", "Down to 78 kg this month!"),
    Pair(
        "reworded",
        U,
        "The CI pipeline runs on GitHub Actions.",
        "The pipelines were migrated from GitHub Actions to Buildkite.",
    ),
    Pair(
        "reworded",
        U,
        "The team chose React for the merchant dashboard.",
        "We dropped React for the merchant dashboard and are rewriting it in SvelteKit.",
    ),
    Pair(
        "reworded",
        U,
        "Transactional emails are sent through Postmark.",
        "Transactional emails go out via Amazon SES since we dropped Postmark.",
    ),
    Pair("reworded", U, "Deploys need two approvals.", "One approval is now enough to deploy."),
    Pair(
        "reworded", U, "The user's editor is Neovim.", "These days the user codes in Zed instead of Neovim."
    ),
    # --- updates: another person or product holds the role ---
    Pair("name", U, "The on-call engineer this week is Priya.", "The on-call engineer this week is now Tom."),
    Pair("name", U, "Maya Okafor leads the backend team.", "Tomasz Wrobel now leads the backend team."),
    Pair(
        "name",
        U,
        "Our account manager at the bank is Mr. Keller.",
        "Our account manager at the bank is Ms. Novak.",
    ),
    Pair("name", U, "The release manager for 4.2 is Dana.", "Sam took over as release manager for 4.2."),
    Pair("name", U, "Bugs are tracked in Jira.", "Bugs are tracked in Linear now."),
    Pair("name", U, "The team chat runs on Slack.", "The team chat moved to Discord."),
    Pair("name", U, "My dentist is Dr. Alvarez.", "My new dentist is Dr. Chen."),
    Pair("name", U, "Lena owns QA for the checkout flow.", "QA for the checkout flow is now owned by Marco."),
    Pair(
        "name",
        U,
        "Feature flags are managed with Unleash.",
        "Feature flags are managed with LaunchDarkly since the switch.",
    ),
    Pair(
        "name",
        U,
        "The product owner of search is Chloe.",
        "Chloe left; Ahmed is the product owner of search.",
    ),
    Pair("name", U, "The CEO is Laura Smith.", "The CEO is Martin Brandt."),
    Pair("name", U, "Our hosting provider is Hetzner.", "Our hosting provider is OVH."),
    # --- updates: a status changes ---
    Pair(
        "status",
        U,
        "ORION-160, the JPY rounding bug, is open.",
        "ORION-160, the JPY rounding bug, is resolved.",
    ),
    Pair(
        "status",
        U,
        "The login redirect loop in Safari is still open.",
        "The Safari login redirect loop was fixed in 2.2.4.",
    ),
    Pair("status", U, "Dark mode is planned for the next quarter.", "Dark mode shipped today."),
    Pair("status", U, "The invoice export bug is being investigated.", "The invoice export bug is fixed."),
    Pair(
        "status",
        U,
        "ORION-172: webhook retries can fire twice when the gateway times out.",
        "ORION-172 was closed as won't fix.",
    ),
    Pair("status", U, "The SSO integration is in beta.", "The SSO integration is generally available."),
    Pair(
        "status", U, "The migration to Kubernetes is in progress.", "The migration to Kubernetes is complete."
    ),
    Pair("status", U, "My passport renewal is pending.", "My passport renewal was approved."),
    Pair("status", U, "The offer from Acme is still under negotiation.", "We signed the offer from Acme."),
    Pair(
        "status",
        U,
        "Issue #412, the memory leak in the worker, is open.",
        "Issue #412 is closed: the memory leak in the worker is fixed.",
    ),
    Pair(
        "status",
        U,
        "The mobile redesign is blocked on design review.",
        "The mobile redesign is unblocked and in development.",
    ),
    Pair("status", U, "The API v1 endpoints are deprecated.", "The API v1 endpoints were removed."),
    # --- updates: negation ---
    Pair("negation", U, "The user drinks coffee every morning.", "The user no longer drinks coffee."),
    Pair(
        "negation", U, "GraphQL is used for the public API.", "GraphQL is no longer used for the public API."
    ),
    Pair("negation", U, "I am vegetarian.", "I'm not vegetarian anymore."),
    Pair(
        "negation", U, "The nightly export job runs at 3:00.", "The nightly export job does not run anymore."
    ),
    Pair("negation", U, "Maya is on the platform team.", "Maya is no longer on the platform team."),
    Pair("negation", U, "We support Internet Explorer 11.", "We no longer support Internet Explorer 11."),
    Pair(
        "negation",
        U,
        "The staging cluster uses spot instances.",
        "The staging cluster stopped using spot instances.",
    ),
    Pair("negation", U, "Friday is a remote work day.", "Friday is not a remote work day anymore."),
    # --- updates: versions ---
    Pair("version", U, "Orion runs on Kubernetes 1.29.", "Orion runs on Kubernetes 1.30."),
    Pair("version", U, "The backend uses Python 3.11.", "The backend was upgraded to Python 3.12."),
    Pair(
        "version", U, "The current release of the app is 2.3.1.", "The current release of the app is 2.4.0."
    ),
    Pair(
        "version",
        U,
        "The search cluster runs OpenSearch 2.11.",
        "The search cluster now runs OpenSearch 2.13.",
    ),
    Pair("version", U, "We pin Node 18 in the Dockerfile.", "We pin Node 20 in the Dockerfile now."),
    Pair("version", U, "The minimum macOS version is 12.", "We raised the minimum macOS version to 13."),
    Pair("version", U, "The mobile SDK is at v4.2.", "The mobile SDK is at v5.0 after the rewrite."),
    # --- updates: a place or address moves ---
    Pair("moved", U, "I live at 14 Rue Oberkampf in Paris.", "I moved to 3 Calle Mayor in Madrid."),
    Pair(
        "moved",
        U,
        "The production database is in eu-west-1.",
        "The production database was migrated to eu-central-1.",
    ),
    Pair("moved", U, "The team offsite is in Lisbon.", "The team offsite moved to Porto."),
    Pair("moved", U, "The weekly sync is in room 4B.", "The weekly sync is in room 2A now."),
    Pair("moved", U, "Design docs live in Confluence.", "Design docs now live in Notion."),
    Pair("moved", U, "The user is based in Lisbon.", "The user relocated to Berlin."),
    Pair("moved", U, "My sister lives in Toronto.", "My sister moved to Vancouver last month."),
    Pair(
        "moved",
        U,
        "Rate limiting is done in the application code.",
        "Rate limiting moved to the API gateway.",
    ),
    # --- updates: renamed ---
    Pair("renamed", U, "The internal CLI is called orionctl.", "The internal CLI was renamed to orion."),
    Pair(
        "renamed",
        U,
        "The Slack channel for incidents is #ops-alerts.",
        "The incidents Slack channel is now #incidents.",
    ),
    Pair("renamed", U, "Our product is called Taskly.", "Taskly has been renamed to Flowboard."),
    Pair(
        "renamed",
        U,
        "The payments service is named ledger.",
        "The payments service is now named billing-core.",
    ),
    # --- look-alikes: another environment ---
    Pair(
        "lookalike-env",
        N,
        "The staging Redis runs on port 6379.",
        "The production Redis now runs on port 6380.",
    ),
    Pair(
        "lookalike-env",
        N,
        "The staging database is Postgres 16 on port 5432.",
        "The production database is Postgres 16 on port 5432.",
    ),
    Pair("lookalike-env", N, "The dev cluster has 3 nodes.", "The prod cluster has 12 nodes."),
    Pair(
        "lookalike-env",
        N,
        "Staging deploys happen on every merge.",
        "Production deploys happen every Tuesday.",
    ),
    Pair(
        "lookalike-env",
        N,
        "The staging API is at api.staging.orion.dev.",
        "The production API is at api.orion.dev.",
    ),
    Pair(
        "lookalike-env",
        N,
        "The test environment uses a 5-minute cache TTL.",
        "The live environment now uses a 1-hour cache TTL.",
    ),
    Pair("lookalike-env", N, "Debug logging is on in staging.", "Debug logging is off in production."),
    # --- look-alikes: another place ---
    Pair("lookalike-place", N, "The Berlin office opens at 8:00.", "The Lisbon office opens at 9:00."),
    Pair("lookalike-place", N, "The Paris store closes at 19:00.", "The Lyon store now closes at 20:00."),
    Pair(
        "lookalike-place",
        N,
        "Rent in the Munich flat is 1,400 euros.",
        "Rent in the Hamburg flat is 1,100 euros.",
    ),
    Pair(
        "lookalike-place", N, "The eu-west-1 region has 4 replicas.", "The us-east-1 region has 6 replicas."
    ),
    Pair(
        "lookalike-place",
        N,
        "The kitchen light is on the left switch.",
        "The bathroom light is on the right switch.",
    ),
    Pair(
        "lookalike-place",
        N,
        "The weekly sync is in room 4B on Mondays.",
        "The design review is in room 4B on Thursdays.",
    ),
    # --- look-alikes: another version ---
    Pair(
        "lookalike-version",
        N,
        "Python 3.11 support ends in October 2027.",
        "Python 3.12 support ends in October 2028.",
    ),
    Pair("lookalike-version", N, "Version 2.3 fixed the login bug.", "Version 2.4 fixed the export bug."),
    Pair("lookalike-version", N, "API v1 returns XML by default.", "API v2 returns JSON by default."),
    Pair(
        "lookalike-version",
        N,
        "Postgres 15 is used by the reporting service.",
        "Postgres 16 is used by the ledger service.",
    ),
    Pair(
        "lookalike-version",
        N,
        "Release 4.1 is supported until June.",
        "Release 4.2 is supported until December.",
    ),
    # --- look-alikes: another platform ---
    Pair(
        "lookalike-platform",
        N,
        "The iOS app requires iOS 16 or later.",
        "The Android app now requires Android 12 or later.",
    ),
    Pair("lookalike-platform", N, "The iOS app is at version 3.2.", "The Android app is at version 3.3."),
    Pair("lookalike-platform", N, "The Windows installer is 80 MB.", "The macOS installer is 95 MB."),
    Pair(
        "lookalike-platform",
        N,
        "The web client supports dark mode.",
        "The desktop client now supports dark mode.",
    ),
    Pair("lookalike-platform", N, "Linux builds run on GitHub Actions.", "Mac builds run on Buildkite."),
    Pair(
        "lookalike-platform",
        N,
        "Push notifications on iOS go through APNs.",
        "Push notifications on Android go through FCM.",
    ),
    # --- look-alikes: another person ---
    Pair("lookalike-person", N, "Alice's laptop is a MacBook Pro.", "Bob's laptop is a ThinkPad."),
    Pair(
        "lookalike-person",
        N,
        "Priya is on vacation from May 3 to May 10.",
        "Tom is on vacation from May 12 to May 20.",
    ),
    Pair(
        "lookalike-person",
        N,
        "My brother's birthday is on June 4.",
        "My sister's birthday is on September 12.",
    ),
    Pair(
        "lookalike-person",
        N,
        "Maya prefers meetings in the morning.",
        "Daniel prefers meetings in the afternoon.",
    ),
    Pair("lookalike-person", N, "Lena works from Hamburg.", "Marco works from Milan."),
    Pair(
        "lookalike-person",
        N,
        "My mother's phone number is 555-0142.",
        "My father's phone number is 555-0199.",
    ),
    Pair("lookalike-person", N, "Sam's manager is Dana.", "Alex's manager is Dana."),
    # --- look-alikes: another team ---
    Pair(
        "lookalike-team",
        N,
        "The backend team has standup at 9:30.",
        "The frontend team has standup at 10:00.",
    ),
    Pair("lookalike-team", N, "The mobile team uses Jira.", "The web team uses Linear."),
    Pair(
        "lookalike-team",
        N,
        "The data team's budget is 50,000 euros.",
        "The security team's budget is 80,000 euros.",
    ),
    Pair("lookalike-team", N, "The platform team is led by Maya.", "The payments team is led by Tomasz."),
    Pair(
        "lookalike-team", N, "The support team works in two shifts.", "The sales team now works in one shift."
    ),
    # --- look-alikes: another plan ---
    Pair("lookalike-plan", N, "The Pro plan costs $20 per month.", "The Team plan costs $45 per month."),
    Pair(
        "lookalike-plan",
        N,
        "The free plan includes 5 projects.",
        "The business plan includes unlimited projects.",
    ),
    Pair(
        "lookalike-plan",
        N,
        "The Basic tier has a 10 GB storage limit.",
        "The Premium tier now has a 1 TB storage limit.",
    ),
    Pair("lookalike-plan", N, "The starter plan allows 3 seats.", "The growth plan allows 25 seats."),
    # --- look-alikes: another service ---
    Pair(
        "lookalike-service",
        N,
        "The ledger service exposes gRPC on port 7070.",
        "The invoice service exposes gRPC on port 7071.",
    ),
    Pair(
        "lookalike-service", N, "The auth service is written in Go.", "The search service is written in Rust."
    ),
    Pair(
        "lookalike-service",
        N,
        "The notification service sends emails through Postmark.",
        "The billing service sends emails through SES.",
    ),
    Pair("lookalike-service", N, "The web service has 3 replicas.", "The worker service now has 5 replicas."),
    Pair(
        "lookalike-service",
        N,
        "The orders queue has a 5-minute visibility timeout.",
        "The refunds queue has a 15-minute visibility timeout.",
    ),
    # --- look-alikes: another customer ---
    Pair("lookalike-customer", N, "Acme's contract renews on May 1.", "Globex's contract renews on June 1."),
    Pair("lookalike-customer", N, "Acme pays $500 a month.", "Initech pays $700 a month."),
    Pair("lookalike-customer", N, "The contact at Acme is Jane Doe.", "The contact at Globex is John Roe."),
    Pair(
        "lookalike-customer",
        N,
        "Customer Acme is on the Enterprise plan.",
        "Customer Umbrella is on the Pro plan.",
    ),
    # --- look-alikes: another day or period ---
    Pair("lookalike-day", N, "On Mondays the standup is at 9:30.", "On Fridays the standup is at 10:00."),
    Pair(
        "lookalike-day",
        N,
        "The gym is open until 22:00 on weekdays.",
        "The gym is open until 18:00 on weekends.",
    ),
    Pair("lookalike-day", N, "Q1 revenue was 1.2 million.", "Q2 revenue was 1.5 million."),
    Pair(
        "lookalike-day",
        N,
        "The January electricity bill was 84 euros.",
        "The February electricity bill was 97 euros.",
    ),
    Pair("lookalike-day", N, "Last year's offsite was in Lisbon.", "This year's offsite is in Porto."),
    Pair(
        "lookalike-day",
        N,
        "The Tuesday deploy window opens at 14:00.",
        "The Thursday deploy window opens at 15:00.",
    ),
    # --- additions: a second fact about the same thing ---
    Pair("addition", N, "The team chat runs on Slack.", "The team also uses Zoom for calls."),
    Pair("addition", N, "The user likes hiking.", "The user also enjoys painting."),
    Pair("addition", N, "Orion runs on Kubernetes 1.29.", "Orion's Kubernetes cluster has 12 nodes."),
    Pair(
        "addition", N, "The ledger service is written in Go.", "The ledger service exposes gRPC on port 7070."
    ),
    Pair("addition", N, "My sister lives in Toronto.", "My sister works as a nurse."),
    Pair(
        "addition",
        N,
        "The API rate limit is 100 requests per minute.",
        "The API also has a burst limit of 20 requests per second.",
    ),
    Pair(
        "addition",
        N,
        "Dark mode is planned for the next quarter.",
        "Offline mode is also planned for the next quarter.",
    ),
    Pair("addition", N, "Maya leads the backend team.", "Maya also mentors two junior engineers."),
    Pair(
        "addition",
        N,
        "The staging database is Postgres 16.",
        "The staging database is backed up every night.",
    ),
    Pair("addition", N, "I have a dog named Max.", "I also have a cat named Luna."),
    # --- unrelated facts that share words ---
    Pair(
        "shared-words", N, "The daily standup is at 9:30 CET.", "The daily report email is sent at 18:00 CET."
    ),
    Pair(
        "shared-words",
        N,
        "The staging database is Postgres 16 on port 5432.",
        "Postgres 16 added logical replication from standbys.",
    ),
    Pair("shared-words", N, "The user prefers tabs over spaces.", "The user prefers dark themes."),
    Pair(
        "shared-words",
        N,
        "Money amounts are stored as integer minor units.",
        "Timestamps are stored as UTC integers.",
    ),
    Pair("shared-words", N, "The gateway times out after 30 seconds.", "The gateway logs every request."),
    Pair(
        "shared-words", N, "My flight to Tokyo leaves at 7:40.", "My flight to Tokyo has a layover in Doha."
    ),
    Pair(
        "shared-words",
        N,
        "The checkout test fails one CI run in ten.",
        "The checkout page loads in 1.2 seconds.",
    ),
    # --- the same value restated ---
    Pair("restated", N, "The daily standup is at 9:30 CET.", "Reminder: standup is still at 9:30 CET."),
    Pair(
        "restated", N, "The staging database listens on port 5432.", "Staging Postgres listens on port 5432."
    ),
    Pair("restated", N, "The Pro plan costs $20 per month.", "The Pro plan is $20 a month."),
    Pair("restated", N, "Maya leads the backend team.", "The backend team is led by Maya."),
    Pair("restated", N, "Logs are kept for 14 days.", "We keep logs for 14 days."),
    Pair("restated", N, "My rent is 1,200 euros a month.", "I pay 1,200 euros of rent each month."),
    # --- a change of mechanism that leaves an earlier value untouched ---
    Pair(
        "mechanism",
        N,
        "The API rate limit was raised to 300 requests per minute.",
        "Rate limiting moves to the API gateway.",
    ),
    Pair(
        "mechanism",
        N,
        "The session cache TTL is 2 hours.",
        "Session data is now cached in Redis instead of memcached.",
    ),
    Pair("mechanism", N, "Backups are kept for 30 days.", "Backups now go to S3 instead of the NAS."),
    Pair(
        "mechanism",
        N,
        "The nightly payouts batch handles about 4,000 merchants.",
        "The payouts batch now runs on Airflow.",
    ),
    Pair(
        "mechanism",
        N,
        "The rent is 1,200 euros a month.",
        "I now pay the rent by bank transfer instead of by cheque.",
    ),
    Pair("mechanism", N, "The build takes about 12 minutes.", "The build now uses Bazel instead of Make."),
    # --- added later (issue 26, part 4), appended so that the pairs above keep their split ---
    Pair("lookalike-env", N, "Staging Redis runs on port 6379.", "Production Redis now runs on port 6379."),
    Pair(
        "lookalike-env",
        N,
        "The Redis for staging runs on port 6379.",
        "The Redis for production now runs on port 6379.",
    ),
    Pair("lookalike-person", N, "Alice works on the billing team.", "Bob now works on the billing team."),
    Pair(
        "value",
        U,
        "Password reset links expire after 15 minutes.",
        "Password reset links expire after 1 hour.",
    ),
    Pair(
        "lookalike-place",
        N,
        "Customer data in the EU is stored in Frankfurt.",
        "Customer data in the US is now stored in Virginia.",
    ),
    Pair(
        "value-cue",
        U,
        "The health check interval is 10 seconds.",
        "We raised the health check interval to 1 minute.",
    ),
    Pair(
        "lookalike-env",
        N,
        "Logs for the dev cluster are kept for 7 days.",
        "Logs for the prod cluster are kept for 90 days.",
    ),
    Pair("status", U, "BUG-88: the CSV export drops the header row.", "BUG-88 is fixed in release 5.4."),
    Pair(
        "restated",
        N,
        "The VPN gateway listens on port 1194.",
        "The VPN gateway still listens on port 1194 after the upgrade.",
    ),
    Pair("status", U, "#731 tracks the flaky login test.", "#731 was closed after the test was rewritten."),
    Pair("restated", N, "The build cache is kept for 7 days.", "We now keep the build cache for 7 days."),
    Pair(
        "status",
        U,
        "INC-42: checkout latency spiked in the EU region.",
        "INC-42 is resolved: a bad cache config was rolled back.",
    ),
    Pair("lookalike-person", N, "Priya Shah is on call this weekend.", "Tom Berg is on call next weekend."),
    Pair("name", U, "Jonas leads the infrastructure team.", "Elena now leads the infrastructure team."),
    Pair(
        "lookalike-person",
        N,
        "Jonas reviews all database migrations.",
        "Elena now reviews all frontend changes.",
    ),
    Pair(
        "name", U, "Dana manages the support rota.", "Sam has replaced Dana as manager of the support rota."
    ),
    Pair("addition", N, "Our office is in Lisbon.", "We now also have an office in Porto."),
    Pair(
        "renamed",
        U,
        "The staging bucket is called orion-assets-dev.",
        "The staging bucket was renamed to orion-static-dev.",
    ),
    Pair("lookalike-version", N, "ORION-201 is fixed in 3.1.", "ORION-202 is fixed in 3.2."),
    Pair(
        "value-cue",
        U,
        "We pay 49 dollars a month for the error tracker.",
        "The error tracker now costs us 79 dollars a month.",
    ),
    Pair(
        "addition",
        N,
        "ORION-190: exports time out for large merchants.",
        "ORION-190 was discussed in the planning meeting.",
    ),
    Pair(
        "version",
        U,
        "The docs site runs Docusaurus 2.",
        "The docs site runs Docusaurus 3 since the redesign.",
    ),
    Pair("restated", N, "ORION-205: refunds fail for partial captures.", "ORION-205 is not fixed yet."),
    Pair("name", U, "Our accountant is Mrs. Patel.", "Our new accountant is Mr. Osei."),
    Pair(
        "mechanism",
        N,
        "The nightly backup takes 40 minutes.",
        "The nightly backup now runs on a dedicated replica.",
    ),
    Pair("moved", U, "The standup call uses Zoom.", "The standup call now uses Google Meet instead of Zoom."),
    Pair(
        "lookalike-day",
        N,
        "Monday's deploy window is 10:00 to 12:00.",
        "Friday's deploy window is now 14:00 to 15:00.",
    ),
    Pair("value", U, "The cafeteria closes at 15:00.", "The cafeteria closes at 16:30 after the renovation."),
    Pair(
        "lookalike-team",
        N,
        "Design reviews for the web team happen on Tuesdays.",
        "Design reviews for the mobile team now happen on Thursdays.",
    ),
    Pair("negation", U, "We send a weekly newsletter.", "We don't send the weekly newsletter anymore."),
    Pair(
        "lookalike-plan", N, "The Team plan includes 10 seats.", "The Enterprise plan now includes 50 seats."
    ),
    Pair(
        "moved",
        U,
        "The metrics service listens on port 9100.",
        "We moved the metrics service off 9100; it uses 9200 now.",
    ),
    Pair("lookalike-person", N, "Chen's flight lands at 18:20.", "Maria's flight now lands at 19:05."),
    Pair("value", U, "The trial lasts 14 days.", "The trial lasts one month."),
    Pair("addition", N, "The API returns JSON.", "The API can now also return CSV."),
    # --- chat: what someone said, as a conversation stores it ('<Name> said, "…"', "User: …") ---
    Pair(
        "value",
        U,
        'Priya said, "My rent is 950 euros a month."',
        'Priya said, "My rent is 1,100 euros a month."',
    ),
    Pair(
        "question",
        N,
        'Ben said, "Alice works at the bakery on Main Street."',
        'Ben said, "Does Alice still work at the bakery on Main Street?"',
    ),
    Pair(
        "lookalike-speaker",
        N,
        'Alice said, "I moved to Paris last year."',
        'Bob said, "I moved to Berlin last year."',
    ),
    Pair(
        "negation",
        U,
        'Sam said, "I drink coffee every morning."',
        'Sam said, "I don\'t drink coffee anymore."',
    ),
    Pair(
        "small-talk",
        N,
        'Omar said, "I am still looking for a flat near the river."',
        'Omar said, "Hey Jess! Long time no see, so much has changed since then!"',
    ),
    Pair(
        "value-cue",
        U,
        'Tom said, "I run 10 km every Sunday."',
        'Tom said, "I now run 15 km every Sunday."',
    ),
    Pair(
        "small-talk",
        N,
        'Omar said, "Wow, that sounds amazing! Enjoy the trip!"',
        'Omar said, "Wow, that sounds great! Have fun at the concert!"',
    ),
    Pair(
        "name",
        U,
        'Maria said, "My piano teacher is Mrs. Dubois."',
        'Maria said, "My new piano teacher is Mr. Haddad."',
    ),
    Pair(
        "question",
        N,
        'Lena said, "We are still deciding where to go in August."',
        'Lena said, "Any ideas where we should go in August now?"',
    ),
    Pair(
        "status",
        U,
        'Kofi said, "The kitchen renovation is planned for June."',
        'Kofi said, "The kitchen renovation is finished!"',
    ),
    Pair(
        "lookalike-speaker",
        N,
        'Nina said, "My daughter is 7 now."',
        'Raj said, "My daughter is 9 now."',
    ),
    Pair(
        "negation",
        U,
        'Alice said, "I work at the bakery on Main Street."',
        'Alice said, "I no longer work at the bakery on Main Street."',
    ),
    Pair(
        "small-talk",
        N,
        'Jess said, "Thanks, Omar! I finally found a flat near the river."',
        'Jess said, "Thanks, Omar! That means a lot."',
    ),
    Pair(
        "value",
        U,
        "Assistant: Your dentist appointment is on Tuesday at 3 pm.",
        "Assistant: Your dentist appointment is on Thursday at 3 pm.",
    ),
    Pair(
        "restated",
        N,
        'Tom said, "I run 10 km every Sunday."',
        'Tom said, "Yep, still doing my 10 km every Sunday!"',
    ),
    Pair(
        "moved",
        U,
        "User: My home office is in Leeds.",
        "User: My home office moved to Bristol.",
    ),
    Pair(
        "addition",
        N,
        'Priya said, "I play the violin in a quartet."',
        'Priya said, "I also started playing the cello."',
    ),
    Pair(
        "reworded",
        U,
        'Alice said, "I work at the bakery on Main Street."',
        'Alice said, "I finally quit my job at the bakery."',
    ),
    Pair(
        "small-talk",
        N,
        'Kofi said, "See you next week!"',
        'Kofi said, "Talk soon, I\'m off now!"',
    ),
]

DEV = [pair for i, pair in enumerate(PAIRS) if i % 3 != 2]
HELD_OUT = [pair for i, pair in enumerate(PAIRS) if i % 3 == 2]


def check() -> None:
    """Every pair is distinct, has two different texts and a known kind; both labels are well represented."""
    assert len(PAIRS) >= 150, len(PAIRS)
    assert len(set(PAIRS)) == len(PAIRS), "a pair is listed twice"
    assert all(p.older != p.newer for p in PAIRS)
    assert all(p.kind.startswith("lookalike-") or p.kind in KINDS for p in PAIRS), {p.kind for p in PAIRS}
    for pair in PAIRS:
        assert pair.update == (pair.kind in UPDATE_KINDS), pair
    updates = sum(p.update for p in PAIRS)
    assert 0.4 <= updates / len(PAIRS) <= 0.6, updates


UPDATE_KINDS = frozenset(
    {"value", "value-cue", "reworded", "name", "status", "negation", "version", "moved", "renamed"}
)
KINDS = UPDATE_KINDS | {"addition", "shared-words", "restated", "mechanism", "question", "small-talk"}

if __name__ == "__main__":
    check()
    print(
        f"{len(PAIRS)} pairs: {sum(p.update for p in PAIRS)} updates; "
        f"dev {len(DEV)}, held out {len(HELD_OUT)}"
    )
    for kind, count in sorted(Counter(p.kind for p in PAIRS).items()):
        print(f"  {kind}: {count}")

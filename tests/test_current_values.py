"""Summaries and navigation state the current value: a memory a later one updates is not stated
as current by ``summarize`` (whole, node, subject) nor by ``navigate`` (node texts, labels, the
agent's found lines), while a period summary still tells what happened in its period."""

from __future__ import annotations

# A small project memory: a first period of facts, then a later one in which six of them change.
FACTS = [
    ("2025-02-03T09:00:00Z", "a1", "The Heron ingest service listens on port 7070."),
    ("2025-02-03T09:02:00Z", "a1", "Ines Duarte owns the Heron billing module."),
    ("2025-02-03T09:04:00Z", "a1", "Heron's mobile app requires Android 10 or later."),
    ("2025-02-03T09:06:00Z", "a1", "HERON-88, the CSV export timeout, is still open."),
    ("2025-02-03T09:08:00Z", "a1", "The Heron web client is pinned to React 17."),
    ("2025-02-03T09:10:00Z", "a1", "Heron's nightly backups are kept for 7 days."),
    ("2025-02-04T10:00:00Z", "a2", "Heron's design reviews happen on Thursdays at 14:00."),
    ("2025-02-04T10:02:00Z", "a2", "Heron uses Sentry for error tracking."),
    ("2025-02-04T10:04:00Z", "a2", "The user prefers short pull requests with one change each."),
    ("2025-02-04T10:06:00Z", "a2", "Heron's staging cluster runs in the eu-west-1 region."),
    ("2025-02-04T10:08:00Z", "a2", "Invoices are rendered to PDF with WeasyPrint."),
    ("2025-04-14T09:00:00Z", "b1", "The Heron ingest service now listens on port 7443."),
    ("2025-04-14T09:02:00Z", "b1", "Karl Weber now owns the Heron billing module."),
    ("2025-04-14T09:04:00Z", "b1", "Heron's mobile app now requires Android 12 or later."),
    ("2025-04-15T10:00:00Z", "b2", "HERON-88 is resolved: CSV exports now stream in chunks."),
    ("2025-04-15T10:02:00Z", "b2", "The Heron web client was upgraded to React 18."),
    ("2025-04-15T10:04:00Z", "b2", "Heron's nightly backups are now kept for 30 days."),
    ("2025-04-15T10:06:00Z", "b2", "The Heron team moved its chat to Zulip."),
]

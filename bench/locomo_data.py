"""The LoCoMo protocol shared by the benchmarks: loading conversations, normalising evidence, recall@k.

Protocol (``shared/bench/locomo/README.md``): every turn is one memory, text
``<speaker> said, "<text>"`` plus `` and shared <blip_caption>`` for image turns, timestamped with its
session's date. Evidence ids are normalised with ``D:?(\\d+):0*(\\d+)`` (an entry may hold several),
ids matching no turn are dropped and questions left without evidence are skipped. Recall@k of a
question is the share of its evidence turns among the first k leaves returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

KS = (5, 10, 25)
SESSION_KS = (5, 10)
K_MAX = max(KS)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EVIDENCE_ID = re.compile(r"D:?(\d+):0*(\d+)")
SESSION_KEY = re.compile(r"session_(\d+)")
DATE_FORMAT = "%I:%M %p on %d %B, %Y"


# -- data ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Turn:
    id: str
    text: str
    timestamp: float
    session: str


@dataclass(slots=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(slots=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped_questions: int
    dropped_ids: int


def normalise_id(raw: str) -> str | None:
    """``D<session>:<turn>`` without leading zeros, or None if ``raw`` is not a dialogue id."""
    match = EVIDENCE_ID.fullmatch(raw.strip())
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def evidence_ids(entries: Sequence[str]) -> list[str]:
    """Every dialogue id in ``entries``; one entry may hold several, separated by ';' or spaces."""
    return [f"D{int(s)}:{int(t)}" for entry in entries for s, t in EVIDENCE_ID.findall(entry)]


def turn_text(turn: dict[str, Any]) -> str:
    text = f'{turn["speaker"]} said, "{turn["text"]}"'
    caption = turn.get("blip_caption")
    if caption:
        text += f" and shared {caption}"
    return text


def parse_date(value: str) -> float:
    """Seconds since the epoch (UTC) of a LoCoMo date such as "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(value.strip(), DATE_FORMAT).replace(tzinfo=UTC).timestamp()


def load_conversations(path: Path, limit: int | None) -> list[Conversation]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if limit is not None:
        raw = raw[:limit]
    conversations: list[Conversation] = []
    for item in raw:
        conv = item["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in conv if (m := SESSION_KEY.fullmatch(key)) is not None
        )
        turns: list[Turn] = []
        for number, key in sessions:
            timestamp = parse_date(conv[f"{key}_date_time"])
            for turn in conv[key]:
                turn_id = normalise_id(turn["dia_id"])
                if turn_id is None:
                    raise ValueError(f"{item['sample_id']}: malformed turn id {turn['dia_id']!r}")
                turns.append(Turn(turn_id, turn_text(turn), timestamp, f"session_{number}"))
        known = {t.id for t in turns}
        if len(known) != len(turns):
            raise ValueError(f"{item['sample_id']}: duplicate turn ids")
        questions: list[Question] = []
        skipped = dropped = 0
        for qa in item["qa"]:
            ids = evidence_ids(qa.get("evidence", []))
            kept = frozenset(i for i in ids if i in known)
            dropped += sum(1 for i in ids if i not in known)
            if not kept:
                skipped += 1
                continue
            questions.append(Question(qa["question"], int(qa["category"]), kept))
        conversations.append(Conversation(item["sample_id"], turns, questions, skipped, dropped))
    return conversations


# -- scoring ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Scores:
    """Per-question recall@k for one method, in question order across conversations."""

    per_k: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    categories: list[int] = field(default_factory=list)

    def add(self, question: Question, ranked_by_k: dict[int, Sequence[str]]) -> None:
        for k in KS:
            taken = set(ranked_by_k[k][:k])
            self.per_k[k].append(len(taken & question.evidence) / len(question.evidence))
        self.categories.append(question.category)

    def summary(self) -> dict[str, Any]:
        cats = np.asarray(self.categories)
        out: dict[str, Any] = {"overall": {}, "per_category": {}}
        for k in KS:
            values = np.asarray(self.per_k[k])
            out["overall"][f"R@{k}"] = round(100 * float(values.mean()), 2)
        for cat, name in CATEGORIES.items():
            mask = cats == cat
            entry: dict[str, Any] = {"n": int(mask.sum())}
            for k in KS:
                values = np.asarray(self.per_k[k])[mask]
                entry[f"R@{k}"] = round(100 * float(values.mean()), 2) if mask.any() else None
            out["per_category"][f"{cat} {name}"] = entry
        return out


class SessionScores:
    """engram-search's metric: any evidence session among the first n distinct sessions."""

    def __init__(self) -> None:
        self.hits: dict[int, list[float]] = {n: [] for n in SESSION_KS}
        self.categories: list[int] = []

    def add(self, question: Question, turns: Sequence[str]) -> None:
        wanted = {e.split(":")[0] for e in question.evidence}
        sessions = list(dict.fromkeys(t.split(":")[0] for t in turns))
        for n in SESSION_KS:
            self.hits[n].append(float(bool(wanted & set(sessions[:n]))))
        self.categories.append(question.category)

    def summary(self) -> dict[str, Any]:
        cats = np.asarray(self.categories)
        out: dict[str, Any] = {f"S@{n}": round(100 * float(np.mean(self.hits[n])), 2) for n in SESSION_KS}
        for cat, name in CATEGORIES.items():
            mask = cats == cat
            out[f"{cat} {name}"] = {
                f"S@{n}": round(100 * float(np.asarray(self.hits[n])[mask].mean()), 2) for n in SESSION_KS
            }
        return out

"""The pieces of ``gather`` recall that are not in ``hybrid``: authors and dates named in a
query, and segments of the conversation scored as a whole.

A question about a person's activities ("Which cities has John been to?") is answered by what
that person said, often in several sessions, in words other than the question's. Two things
get in the way of plain dense + BM25 scoring, measured on the LoCoMo dev split
(``bench/locomo_sweep.py``, ``docs/findings/recall-quality.md``):

- the author's name. Every memory of a conversation starts with its speaker's name, so the name
  in the question pulls the question's embedding towards whatever that person said, on any
  subject, and as a BM25 term it matches half the memories. ``gather`` matches the name against
  the memories' *author* (their ``role``) instead: memories by an author the query names get a
  fixed lift (``author_weight`` standard deviations, a field of ``core/ranking/recall.py``'s ``Weights``),
  the BM25 query leaves the name out, and the dense score is the mean of the query's cosine and
  that of the query with the names replaced by "they" (:func:`without_names`), which the service
  embeds in the same batch as the query.
- one turn rarely holds all the words of the answer; the stretch of conversation around it does.
  ``gather`` scores each segment of the timeline (a session, or a run without a long silence) as
  one document with BM25 (:meth:`LexicalIndex.group_score_array`, the same formula as over single
  memories) and lifts every memory by its segment's standardised score: the temporal hierarchy as
  a first stage, as SegTreeMem's segment scores (seed 001 §4.3), but ranking leaves inside it
  instead of leaving the memories of a weak segment out.
- a date. "What did Tim say about his injury on 16 November, 2023?" asks about what was said that
  day; the words "16 November" are rarely in the memory, its timestamp is. Memories dated within
  a day or month the query names with its year (:func:`dated_spans`) get ``date_weight`` more.

The weights are in standard deviations of scores standardised over the memory, so they mean the
same in any memory and with any embedder.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Iterable
from datetime import datetime

import numpy as np

from memtree_mcp.core.trees.calendar import Calendar

# Stand-in for a name in the query embedded without it, so the sentence stays a question about
# someone; deleting the name instead scores the same (R@10 79.9 against 79.8 before the date lift,
# ``bench/locomo_probes.py``, retired: ``git show 4868398:bench/locomo_probes.py``).
STAND_IN = "they"


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern[str]:
    # Whole word, any case, with or without a possessive ("Caroline's").
    return re.compile(r"(?<![\w])" + re.escape(name) + r"(?:['\u2019]s)?(?![\w])", re.IGNORECASE)


def named_authors(text: str, authors: Iterable[str]) -> list[str]:
    """The authors (roles of stored memories) that ``text`` names, longest first.

    A name is found as a whole word in any case, but only where ``text`` writes it with a capital
    initial, as a name is written: roles that are common nouns ("user", "assistant") are not
    taken for a person in "the user table" (every name in the LoCoMo questions is capitalised).
    """
    found = [
        author
        for author in authors
        if author.strip() and any(m.group(0)[:1].isupper() for m in _name_pattern(author).finditer(text))
    ]
    return sorted(found, key=lambda a: (-len(a), a))


def without_names(text: str, names: Iterable[str], stand_in: str = STAND_IN) -> str:
    """``text`` with every whole-word occurrence of each name (and its possessive) replaced."""
    for name in sorted(names, key=len, reverse=True):
        text = _name_pattern(name).sub(stand_in, text)
    return re.sub(r"\s{2,}", " ", text).strip()


_MONTH_NUMBER = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTH_NUMBER.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
# Most specific first: a day, then a month of a year. A bare year or month is left alone ("the
# 2024 budget" is about 2024, not necessarily said then).
_DATES = [
    re.compile(rf"\b{_YEAR}-(?P<num>\d{{2}})-(?P<day>\d{{2}})\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s*{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s*{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_YEAR}-(?P<num>\d{{2}})\b(?!-)"),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
]


def dated_spans(text: str, calendar: Calendar) -> list[tuple[float, float]]:
    """The periods ``text`` names by an explicit date with its year, as [start, end) in seconds
    since the epoch (days of the namespace's ``calendar``): a day ("21 November, 2023", "November 6, 2023",
    "2023-11-21") or a month ("December 2023", "2023-12"). A date inside a longer one counts once."""
    spans: list[tuple[float, float]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATES:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            found = match.groupdict()
            month = int(found["num"]) if found.get("num") else _MONTH_NUMBER[found["month"].lower()]
            year = int(found["year"])
            try:
                if found.get("day"):
                    start = datetime(year, month, int(found["day"]), tzinfo=calendar.zone)
                    end = start.timestamp() + 86400.0
                else:
                    start = datetime(year, month, 1, tzinfo=calendar.zone)
                    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=calendar.zone).timestamp()
            except (ValueError, OverflowError):  # "31 February", month 13, year 1 east of UTC
                continue
            taken.append((match.start(), match.end()))
            spans.append((start.timestamp(), end))
    return spans


def standardised(values: np.ndarray) -> np.ndarray:
    """``values`` as z-scores (mean 0, standard deviation 1), in float64; all zeros when they are
    all equal (to rounding: equal float32 cosines must not become noise divided by nothing)."""
    exact = np.asarray(values, dtype=np.float64)
    mean = float(exact.mean()) if len(exact) else 0.0
    spread = float(exact.std()) if len(exact) else 0.0
    if spread <= 1e-6 * max(1.0, abs(mean)):
        return np.zeros(len(exact))
    return (exact - mean) / spread

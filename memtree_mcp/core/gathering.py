"""The pieces of ``gather`` recall that are not in ``hybrid``: authors named in a query, and
segments of the conversation scored as a whole.

A question about a person's activities ("Which cities has John been to?") is answered by what
that person said, often in several sessions, in words other than the question's. Two things
get in the way of plain dense + BM25 scoring, measured on the LoCoMo dev split
(``bench/locomo_sweep.py``, ``docs/benchmarks.md``):

- the author's name. Every memory of a conversation starts with its speaker's name, so the name
  in the question pulls the question's embedding towards whatever that person said, on any
  subject, and as a BM25 term it matches half the memories. ``gather`` matches the name against
  the memories' *author* (their ``role``) instead: memories by an author the query names get a
  fixed lift (``AUTHOR_WEIGHT`` standard deviations), the BM25 query leaves the name out, and the
  dense score is the mean of the query's cosine and that of the query with the names replaced by
  "they" (:func:`without_names`), which the service embeds in the same batch as the query.
- one turn rarely holds all the words of the answer; the stretch of conversation around it does.
  ``gather`` scores each segment of the timeline (a session, or a run without a long silence) as
  one document with BM25 (:meth:`LexicalIndex.group_score_array`, the same formula as over single
  memories) and lifts every memory by its segment's standardised score: the temporal hierarchy as
  a first stage, as SegTreeMem's segment scores (seed 001 §4.3), but ranking leaves inside it
  instead of leaving the memories of a weak segment out.

Both weights are in standard deviations of scores standardised over the memory, so they mean the
same in any memory and with any embedder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

# Stand-in for a name in the query embedded without it: a pronoun keeps the sentence a question
# about someone (``bench/locomo_probes.py`` compares it with leaving a gap).
STAND_IN = "they"


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


def standardised(values: np.ndarray) -> np.ndarray:
    """``values`` as z-scores (mean 0, standard deviation 1; all zeros when they are all equal)."""
    return (values - values.mean()) / (float(values.std()) + 1e-6)

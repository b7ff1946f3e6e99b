"""Extractive representatives: a branch's text and label built from its children, no LLM needed."""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Sequence

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z][a-z'\-]{2,}")

# Words that say nothing about a subject; kept short on purpose (labels only need a few content words).
STOPWORDS = frozenset(
    """
    about above after again against all also and any are aren't because been before being below between
    both but can cannot could couldn't did didn't does doesn't doing don't down during each few for from
    further had hadn't has hasn't have haven't having her here here's hers herself him himself his how
    how's i'd i'll i'm i've into isn't it's its itself just let's like more most mustn't myself nor not now
    off once only other ought our ours ourselves out over own really said same say says shan't she she'd
    she'll she's should shouldn't some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through too under until very was wasn't
    we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom
    why why's will with won't would wouldn't yeah yes you you'd you'll you're you've your yours yourself
    yourselves thing things get got going gonna one two lot lots much many well sure think know
    """.split()
)

SUMMARY_CHARS = 400
# Between the gists a summary joins; recall splits a summary on it to leave out parts already shown.
PART_SEPARATOR = " · "
GIST_CHARS = 160
LABEL_WORDS = 3


def gist(text: str, limit: int = GIST_CHARS) -> str:
    """The first sentence of ``text``, clipped to ``limit`` characters at a word boundary."""
    first = _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    if len(first) <= limit:
        return first
    clipped = first[:limit].rsplit(" ", 1)[0]
    return clipped + "…"


def summarize_children(texts_by_centrality: Sequence[str], limit: int = SUMMARY_CHARS) -> str:
    """Join the gists of children, most central first, until ``limit`` characters are used.

    The most central child always contributes, so a branch never has an empty text.
    """
    parts: list[str] = []
    used = 0
    for text in texts_by_centrality:
        piece = gist(text)
        if not piece or piece in parts:
            continue
        if parts and used + len(piece) + 3 > limit:
            break
        parts.append(piece)
        used += len(piece) + 3
    return PART_SEPARATOR.join(parts)


def label_for(texts_by_centrality: Sequence[str], words: int = LABEL_WORDS) -> str:
    """A few content words that recur among the children, for breadcrumbs and outlines."""
    counts: dict[str, float] = {}  # in order of first appearance, which breaks ties
    get = counts.get
    for rank, text in enumerate(texts_by_centrality):
        # The most central children weigh more, so the label follows the branch's centre.
        weight = 1.0 / (1 + rank)
        for word in content_words(text):
            counts[word] = get(word, 0.0) + weight
    # nsmallest is sorted()[:words], stable: equal counts keep their order of first appearance.
    ranked = heapq.nsmallest(words, counts, key=lambda w: -counts[w])
    return ", ".join(ranked)


@functools.lru_cache(maxsize=1 << 14)  # the children of the branches one insertion refreshes
def content_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` a label may use: lower-cased, each once, in order, stopwords dropped.

    Cached: a branch's label is recomputed from all its children's texts whenever one of them
    changes, and most of those texts have not changed since the last time.
    """
    return tuple(word for word in dict.fromkeys(_WORD.findall(text.lower())) if word not in STOPWORDS)

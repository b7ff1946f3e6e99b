"""Extractive representatives: a branch's text and label built from its children, no LLM needed.

A label names a branch in breadcrumbs, outlines, the explorer's rows and its timeline, where a
person reads it beside its siblings. So it is the few words that *distinguish* the branch from
its siblings, not the words it repeats most: under a parent about Postgres, two children labelled
"postgres, database, staging" and "postgres, database, production" say one thing three times, and
the labels "staging, 5433, backups" and "production, frankfurt, replicas" tell them apart. The
score is class-based TF-IDF (c-TF-IDF, as topic models label clusters), with the siblings as the
other classes: a word's weight among the branch's children times log((s + 1) / (s_w + 1)), where s
is the number of siblings and s_w how many of them use the word. A word every sibling uses scores
0, and words only rank by frequency where nothing distinguishes them (a root has no siblings).

The siblings' words come from their current texts and labels when the branch is refreshed (cached
word sets, looked up by each sibling's own strings), so an insertion refreshes only its own path,
as before; a sibling keeps the label it got when it was last refreshed, which may weigh against a
sibling set that has grown since (the temporal tree labels a segment once more when the next one
starts). Measured on a 10k-memory store (``bench/scale.py --core``, this code against the one
before it, alternated on a loaded machine): ``Memory.add_leaf`` p50 8.9 / 9.5 / 11.9 ms against
8.7 / 8.9 / 15.2 ms, within noise. Stored labels of an older store stay as they were until their
branch is refreshed by an insertion or a forget below it (or by a ``reindex``).

Words are whole: letters, digits and underscores joined by internal apostrophes, hyphens or dots,
so "orion-160", "5433", "max_connections" and "changelog.md" stay one word; a possessive "'s" is
dropped ("user's" counts as "user"); acronyms keep their capitals ("CI", "HTTP").
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from collections.abc import Iterable, Sequence

MARKER = re.compile(r"\[redacted: [a-z0-9-]+\]")
"""What redaction (``memtree_mcp/secrets``) puts in a secret's place in a memory's text, never a
credential itself: defined here, where stored text is read, so that labels leave its words out."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+(?:['\u2019.\-]\w+)*")
_ACRONYM = re.compile(r"[A-Z][A-Z0-9]{1,5}")

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
    e.g i.e etc
    """.split()
)

SUMMARY_CHARS = 400
# Between the gists a summary joins; recall splits a summary on it to leave out parts already shown.
PART_SEPARATOR = " · "
GIST_CHARS = 160
LABEL_WORDS = 3
# A label reads the most central children only: the root's fan-out grows with the memory (160 at
# 10k memories), and a child ranked below 32 would weigh under a sixth of the first one anyway.
LABEL_CHILDREN = 32


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


# What a label reads of a node: a memory's text, or a branch's ``(label, text)``. A pair of the
# branch's own strings, not their concatenation: its hash comes from hashes the strings keep, so
# looking up the words of the semantic root's 160 children costs no new string each insertion.
Wording = str | tuple[str, str]


def label_for(
    texts_by_centrality: Sequence[Wording], siblings: Iterable[Wording] = (), words: int = LABEL_WORDS
) -> str:
    """The few words that best tell this branch from its ``siblings``, for breadcrumbs and outlines.

    ``texts_by_centrality`` are the texts of the branch's children, most central first (a child
    branch as its ``(label, text)``); ``siblings`` those of the other children of its parent.
    A word scores its weight among the first :data:`LABEL_CHILDREN` children (1/sqrt(1 + rank) each:
    the most central weigh more, so the label follows the branch's centre) times
    log((s + 1) / (s_w + 1)) over the s siblings, s_w of which use it (see the module docstring).
    Words every sibling uses fill the label last, by weight; ties keep the order of first
    appearance. Returns the words joined by ", " (empty for no content words).
    """
    weights: dict[str, float] = {}  # in order of first appearance, which breaks ties
    get = weights.get
    for rank, text in enumerate(texts_by_centrality[:LABEL_CHILDREN]):
        weight = 1.0 / math.sqrt(1 + rank)
        for word in _words(text):
            weights[word] = get(word, 0.0) + weight
    # By weight, then first appearance (sorted is stable): the order ties are broken in.
    by_weight = sorted(weights, key=weights.__getitem__, reverse=True)
    used = [_word_set(text) for text in siblings]
    if not used:
        return ", ".join(by_weight[:words])
    # Counting which siblings use a word is the cost (the semantic root has 160 children at 10k
    # memories), so words are scored heaviest first and the scan stops once no word left can
    # enter: none scores more than its weight times the rarity of a word no sibling uses.
    top_rarity = math.log(len(used) + 1)
    best: list[tuple[float, float, int, str]] = []  # (score, weight, -position, word), a min-heap
    for position, word in enumerate(by_weight):
        weight = weights[word]
        if len(best) == words and weight * top_rarity <= best[0][0]:
            break  # a later word ties at best, and loses the tie by weight or position
        users = sum(1 for seen in used if word in seen)
        entry = (weight * math.log((len(used) + 1) / (users + 1)), weight, -position, word)
        if len(best) < words:
            heapq.heappush(best, entry)
        elif entry > best[0]:
            heapq.heapreplace(best, entry)
    return ", ".join(entry[3] for entry in sorted(best, reverse=True))


@functools.lru_cache(maxsize=1 << 14)  # the children and siblings of the branches one insertion refreshes
def content_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` a label may use, each once, in order: lower-cased but for acronyms,
    without a possessive "'s", stopwords and words under three characters (acronyms excepted) dropped.

    Cached: a branch's label is recomputed from all its children's texts (and its siblings') whenever
    one of them changes, and most of those texts have not changed since the last time.
    """
    found: dict[str, None] = {}
    for raw in _WORD.findall(MARKER.sub(" ", text)):  # "[redacted: password]" is no subject
        word = raw.replace("\u2019", "'")
        if word.endswith("'s"):
            word = word[:-2]
        if _ACRONYM.fullmatch(word):
            if word.lower() not in STOPWORDS:
                found[word] = None
            continue
        word = word.lower()
        if len(word) >= 3 and word not in STOPWORDS:
            found[word] = None
    return tuple(found)


@functools.lru_cache(maxsize=1 << 14)
def _words(wording: Wording) -> tuple[str, ...]:
    """:func:`content_words` of a text, or of a branch's label and text together."""
    if isinstance(wording, str):
        return content_words(wording)
    label, text = wording
    return tuple(dict.fromkeys(content_words(label) + content_words(text)))


@functools.lru_cache(maxsize=1 << 14)
def _word_set(wording: Wording) -> frozenset[str]:
    """The words of a text or a branch as a set, to ask whether a sibling uses a word."""
    return frozenset(_words(wording))

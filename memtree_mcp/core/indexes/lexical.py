"""An incremental BM25 index over short texts, for exact-word recall that embeddings miss.

Dense vectors blur names, numbers and rare words ("Caroline", "2022", "pottery"); BM25 rewards
exactly those, and on the LoCoMo dev split it beats the dense baseline at k = 5 and 10 (README of
the benchmark data). Memories change one leaf at a time, so the index is incremental: adding or
removing a document updates the postings, document frequencies, lengths and the average length in
place, in time proportional to that document's length, never rebuilding the index.

Scoring is Okapi BM25 with the idf of Lucene and rank_bm25's ``BM25Okapi`` without its epsilon
floor, ``log(1 + (N - df + 0.5) / (df + 0.5))``, which is always positive, so every document that
shares a word with the query scores above zero and no other document does. A query word that
occurs twice counts twice, as in rank_bm25.

Tokenizer choices, measured on the LoCoMo dev split (one index per conversation, every turn one
document, 997 questions with evidence; R@5 / R@10 / R@25 in %, k1 = 1.5, b = 0.75):

============================================  =====  =====  =====
tokenizer                                     R@5    R@10   R@25
============================================  =====  =====  =====
regex word split, lower-cased, no stopwords   47.0   54.8   64.8
ours, no stopwords, no stemming               47.0   55.0   65.0
ours, no stopwords, stemming                  49.1   57.3   68.4
ours, ``extractive.STOPWORDS``, no stemming   51.4   58.2   67.4
ours, ``extractive.STOPWORDS``, stemming      53.1   61.0   71.2
ours, :data:`STOPWORDS`, no stemming          52.3   58.6   66.9
ours, :data:`STOPWORDS`, stemming (default)   55.1   62.1   70.5
============================================  =====  =====  =====

(the first row matches the benchmark README's BM25 baseline, 47.1 / 55.3 / 64.9.)

- words are maximal runs of Unicode letters and digits, joined by internal apostrophes or hyphens
  ("don't", "self-care", "2022"); a possessive "'s" is dropped so "Caroline's" finds "Caroline"
  (keeping it costs 0.5 points of R@5); a hyphenated word also yields its parts, so "self-care" is
  found by "care" and by "self-care" (whole word only, or parts only: within 0.2 points);
- :data:`STOPWORDS` is a short English list of function words, including the question words
  ("what", "when", "who": every question has one and no answer needs it). ``extractive.STOPWORDS``
  was written for labels: it drops content words a question may hinge on ("one", "two", "like",
  "know", "think") and lacks the one- and two-letter function words ("a", "i", "is", "in", "my")
  that its three-letter regex never sees;
- :func:`stem`, a light suffix stripper of our own (plurals, "-ing", "-ed"), adds about 3 points at
  every k, so :data:`STEM_BY_DEFAULT` is on;
- Chinese and Japanese are written without spaces, so a sentence would be one "word" that no
  question shares: a run of Han, kana or Hangul characters yields its overlapping character pairs
  instead (a lone character yields itself), the usual way of indexing CJK text without a
  dictionary ("看護師" → "看護", "護師"). English text never meets this rule; what it gives on
  Japanese memories is measured by ``bench/run.py multilingual``.

One module, not several: one BM25 index with its packed postings and its tokeniser; they are tuned
together (docs/findings/recall-quality.md) and read together.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

import numpy as np

# Runs of letters/digits (``[^\W_]`` is \w without the underscore), joined by single internal
# apostrophes or hyphens; curly apostrophes and the Unicode hyphens are normalised first.
_WORD = re.compile(r"[^\W_]+(?:['\-][^\W_]+)*")
# Scripts written without spaces between words: Han (with extension A and compatibility
# ideographs), hiragana, katakana (with its phonetic extensions) and Hangul syllables.
_CJK = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2010": "-", "\u2011": "-"})
_VOWELS = frozenset("aeiouy")

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
    down during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's
    her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it
    it's its itself let's me more most mustn't my myself no nor not of off on once only or other ought
    our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such
    than that that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's will with
    won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    """.split()
)
"""English function words: frequent everywhere, so they only add noise and cost to BM25."""

STEM_BY_DEFAULT = True
"""Whether :func:`tokenize` stems unless told otherwise (set from the LoCoMo measurement)."""


@functools.lru_cache(maxsize=1 << 16)  # a conversation reuses few distinct words
def stem(word: str) -> str:
    """Strip one common English inflection, conservatively, so "hikes"/"hiking"/"hiked" meet.

    Rules, first match wins; words of three letters or fewer and words with a digit are kept:

    - "-ies" → "-y" (stories → story), "-sses" → "-ss" (classes → class);
    - "-es" after s, x, z, ch, sh → drop "es" (boxes → box, churches → church);
    - "-s" → drop, unless the word ends in "ss", "us" or "is" (cats → cat; glass, bus, this kept);
    - "-ing" / "-ed" → drop when at least three letters with a vowel remain (painting → paint,
      "sing", "red", "bed" kept), "-eed" kept (need, speed); a doubled final consonant is then
      undoubled except l, s, z (running → run, stopped → stop, falling → fall).

    It does not restore a silent "e" (making → mak, make → make): doing so guesses wrong as often
    as right, and a stemmer only needs to send both sides of a match to the same string.
    """
    if len(word) <= 3 or any(c.isdigit() for c in word):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")) and len(word) > 4:
        return word[:-2]
    if word.endswith("s"):
        return word if word.endswith(("ss", "us", "is")) else word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            if word.endswith("eed"):
                return word
            base = word[: -len(suffix)]
            if len(base) < 3 or not any(c in _VOWELS for c in base):
                return word
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "aeiouylsz":
                base = base[:-1]
            return base
    return word


def tokenize(text: str, *, stemming: bool | None = None, stopwords: Collection[str] = STOPWORDS) -> list[str]:
    """The BM25 terms of ``text``: case-folded Unicode words, stopwords dropped, optionally stemmed.

    Case folding (not just lower-casing) makes "Straße" match "STRASSE"; NFKC makes full-width
    and composed/decomposed forms match. ``stemming`` defaults to :data:`STEM_BY_DEFAULT`.
    """
    do_stem = STEM_BY_DEFAULT if stemming is None else stemming
    if text.isascii():
        normal = text.lower()  # what NFKC, the apostrophe table and casefold make of ASCII
    else:
        normal = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).casefold()
    if stopwords is STOPWORDS:
        # Most words recur: what one word yields is looked up instead of recomputed (a reload
        # tokenizes every memory, so this is most of its lexical cost).
        terms_of = _word_terms_stemmed if do_stem else _word_terms_plain
        return [term for word in _WORD.findall(normal) for term in terms_of(word)]
    return [term for word in _WORD.findall(normal) for term in _terms(word, do_stem, stopwords)]


def _terms(word: str, do_stem: bool, stopwords: Collection[str]) -> tuple[str, ...]:
    """The terms one word of a case-folded text yields (itself, and its parts when hyphenated)."""
    if not word.isascii() and _CJK.search(word):
        return _cjk_terms(word, do_stem, stopwords)
    if word.endswith("'s"):
        word = word[:-2]
    if word in stopwords:
        return ()
    parts = word.split("-") if "-" in word else []
    return tuple(stem(piece) if do_stem else piece for piece in [word, *parts] if piece not in stopwords)


def _cjk_terms(word: str, do_stem: bool, stopwords: Collection[str]) -> tuple[str, ...]:
    """The terms of a word holding CJK characters: each run of them as overlapping pairs (a lone
    character as itself), the letters and digits between the runs as words of their own."""
    terms: list[str] = []
    start = 0
    for run in _CJK.finditer(word):
        if between := word[start : run.start()].strip("'-"):
            terms.extend(_terms(between, do_stem, stopwords))
        chars = run.group()
        terms.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
        start = run.end()
    if rest := word[start:].strip("'-"):
        terms.extend(_terms(rest, do_stem, stopwords))
    return tuple(terms)


@functools.lru_cache(maxsize=1 << 18)
def _word_terms_stemmed(word: str) -> tuple[str, ...]:
    return _terms(word, True, STOPWORDS)


@functools.lru_cache(maxsize=1 << 18)
def _word_terms_plain(word: str) -> tuple[str, ...]:
    return _terms(word, False, STOPWORDS)


class LexicalIndex:
    """Okapi BM25 over documents added and removed one at a time.

    Each document gets an integer slot; an inverted index maps a term to its :class:`_Postings`,
    numpy arrays of slots and term frequencies that grow by doubling and fill a hole by moving the
    last entry into it, so adding or removing a document is O(its length) and a query costs numpy
    work proportional to the postings of its terms plus one dense score array, never a Python loop
    over the documents, and never a rebuild after a change. Freed slots are reused, lowest first,
    so the arrays do not grow under churn.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, tokenizer: Callable[[str], list[str]] = tokenize):
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer
        self._slot_of: dict[str, int] = {}
        self._id_of: list[str | None] = []
        self._free: list[int] = []  # a min-heap, so slots are reused lowest first
        # A document's distinct terms and their frequencies, as two tuples: a dict per document
        # took ~1 KB, a tenth of a memory's resident size at 100k memories.
        self._terms_of: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}
        self._lengths = np.zeros(16, dtype=np.float64)
        self._total_length = 0
        self._postings: dict[str, _Postings] = {}
        self._idf: dict[str, float] = {}
        # The last query :meth:`coverage` tokenized: recall asks for one query's coverage of each
        # candidate memory in turn.
        self._covered: tuple[str, set[str]] = ("", set())

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    def add(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id``; an id already present is replaced."""
        slot, counts = self._place(doc_id, text)
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.add(slot, tf)

    def add_many(self, documents: Iterable[tuple[str, str]]) -> None:
        """Index many ``(doc_id, text)`` at once: the same index as ``add`` one by one, built faster.

        Each term's postings grow once by all its new entries instead of one entry at a time. An id
        given twice is indexed with its last text.
        """
        terms: list[str] = []
        slots: list[int] = []
        tfs: list[int] = []
        for doc_id, text in dict(documents).items():
            slot, counts = self._place(doc_id, text)
            terms.extend(counts)
            tfs.extend(counts.values())
            slots.extend(itertools.repeat(slot, len(counts)))
        if not terms:
            return
        # Group the (term, slot, tf) triples by term with one stable sort, in document order.
        code_of: dict[str, int] = {}
        codes = np.fromiter((code_of.setdefault(t, len(code_of)) for t in terms), np.int64, len(terms))
        order = np.argsort(codes, kind="stable")
        bounds = np.flatnonzero(np.diff(codes[order])) + 1
        slot_groups = np.split(np.asarray(slots, dtype=np.int64)[order], bounds)
        tf_groups = np.split(np.asarray(tfs, dtype=np.float64)[order], bounds)
        # Codes run from 0 without gaps, so the groups come in code order, one per term.
        for term, term_slots, term_tfs in zip(code_of, slot_groups, tf_groups, strict=True):
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.extend(term_slots, term_tfs)

    @property
    def capacity(self) -> int:
        """How many slots there are, free ones included."""
        return len(self._id_of)

    def documents(self) -> Iterator[tuple[int, str, tuple[str, ...], tuple[int, ...]]]:
        """Every document as ``(slot, doc_id, terms, frequencies)``, what :meth:`restored` takes back."""
        for doc_id, slot in self._slot_of.items():
            terms, tfs = self._terms_of[slot]
            yield slot, doc_id, terms, tfs

    @classmethod
    def restored(
        cls,
        doc_ids: Sequence[str],
        slots: np.ndarray,
        offsets: np.ndarray,
        term_codes: np.ndarray,
        tfs: np.ndarray,
        vocabulary: Sequence[str],
        capacity: int,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        tokenizer: Callable[[str], list[str]] = tokenize,
    ) -> LexicalIndex:
        """The index :meth:`documents` described, without tokenizing anything again: document
        ``doc_ids[i]`` in slot ``slots[i]`` with the terms ``vocabulary[term_codes[j]]`` and
        frequencies ``tfs[j]`` for ``j`` in ``offsets[i]:offsets[i + 1]``, out of ``capacity``
        slots. The terms must be what this module's tokenizer makes of the texts (the caller
        knows they were, see ``store/snapshot.py``); scores equal those of an index built by
        :meth:`add_many`; ``k1``, ``b`` and ``tokenizer`` are the constructor's. Raises ValueError
        for arrays that do not fit together.
        """
        index = cls(k1=k1, b=b, tokenizer=tokenizer)
        n = len(doc_ids)
        slots = np.asarray(slots, dtype=np.int64)
        offsets = np.asarray(offsets, dtype=np.int64)
        # Copies of their own (the caller's may be views of a file), in the integer type given:
        # int32, as a snapshot stores them, is half of int64's 24 MB at 100k memories.
        term_codes, tfs = (np.array(x) if len(x) else np.zeros(0, np.int64) for x in (term_codes, tfs))
        if term_codes.dtype.kind not in "iu" or tfs.dtype.kind not in "iu":
            raise ValueError("the stored lexical index does not hold together")
        if (
            len(slots) != n
            or len(offsets) != n + 1
            or (n and (offsets[0] != 0 or offsets[-1] != len(term_codes) or np.any(np.diff(offsets) < 0)))
            or len(tfs) != len(term_codes)
            or (n and (slots.min() < 0 or slots.max() >= capacity))
            or (len(term_codes) and (term_codes.min() < 0 or term_codes.max() >= len(vocabulary)))
            or np.any(tfs <= 0)
        ):
            raise ValueError("the stored lexical index does not hold together")
        slot_list = slots.tolist()
        index._slot_of = dict(zip(doc_ids, slot_list, strict=True))
        if len(index._slot_of) != n:
            raise ValueError("the stored lexical index names a document twice")
        taken = np.zeros(capacity, dtype=bool)
        taken[slots] = True
        free = np.flatnonzero(~taken)
        if len(free) != capacity - n:
            raise ValueError("the stored lexical index gives two documents one slot")
        id_of = np.full(capacity, None, dtype=object)
        id_of[slots] = doc_ids
        index._id_of = id_of.tolist()
        index._free = free.tolist()  # sorted: a heap
        summed = np.concatenate([[0], np.cumsum(tfs)])
        lengths = summed[offsets[1:]] - summed[offsets[:-1]]
        index._lengths = np.zeros(max(16, capacity), dtype=np.float64)
        index._lengths[slots] = lengths
        index._total_length = int(lengths.sum())
        index._terms_of = _PackedTerms(slot_list, term_codes, offsets.tolist(), tfs, vocabulary)
        if len(term_codes):
            # Slots in 32 bits where they fit (every one, short of 2 billion memories): each
            # posting holds one.
            narrow = np.int32 if capacity < np.iinfo(np.int32).max else np.int64
            owner = np.repeat(slots.astype(narrow), np.diff(offsets))
            # A stable sort of codes that fit in 16 bits is a radix sort: 25 ms instead of 120 ms
            # for the 1.5M terms of 100k memories.
            small = len(vocabulary) <= 1 << 16
            order = np.argsort(term_codes.astype(np.uint16) if small else term_codes, kind="stable")
            codes = term_codes[order]
            cuts = np.flatnonzero(np.diff(codes)) + 1
            starts = np.concatenate([[0], cuts]).tolist()
            ends = np.concatenate([cuts, [len(codes)]]).tolist()
            owners, freqs = owner[order], tfs[order].astype(np.float64)
            for start, end in zip(starts, ends, strict=True):
                # Views into one array per column: a posting list copies itself before it grows,
                # and a removal writes only inside its own entries.
                index._postings[vocabulary[int(codes[start])]] = _Postings.over(
                    owners[start:end], freqs[start:end]
                )
        return index

    def _place(self, doc_id: str, text: str) -> tuple[int, dict[str, int]]:
        """Give ``doc_id`` a slot and record its length; its postings are the caller's to add."""
        if doc_id in self._slot_of:
            self.remove(doc_id)
        self._idf.clear()
        counts: dict[str, int] = Counter(self._tokenize(text))
        if self._free:
            slot = heapq.heappop(self._free)
            self._id_of[slot] = doc_id
        else:
            slot = len(self._id_of)
            self._id_of.append(doc_id)
            if slot >= len(self._lengths):
                self._lengths = np.concatenate([self._lengths, np.zeros_like(self._lengths)])
        self._slot_of[doc_id] = slot
        self._terms_of[slot] = (tuple(counts), tuple(counts.values()))
        length = sum(counts.values())
        self._lengths[slot] = length
        self._total_length += length
        return slot, counts

    def slot(self, doc_id: str) -> int:
        """The slot of ``doc_id`` in the arrays ``score_array`` returns; raises KeyError."""
        return self._slot_of[doc_id]

    def remove(self, doc_id: str) -> None:
        """Forget ``doc_id`` entirely (its words no longer count towards any idf); unknown ids are ignored."""
        slot = self._slot_of.pop(doc_id, None)
        if slot is None:
            return
        self._idf.clear()
        terms = self._terms_of[slot][0]
        del self._terms_of[slot]
        for term in terms:
            postings = self._postings[term]
            postings.remove(slot)
            if not postings.size:
                del self._postings[term]
        self._total_length -= int(self._lengths[slot])
        self._lengths[slot] = 0.0
        self._id_of[slot] = None
        heapq.heappush(self._free, slot)

    def score_array(self, query: str) -> np.ndarray | None:
        """Dense BM25 scores by slot (``slot``), or None when no query term occurs in the index.

        Free slots score zero, and so does every document sharing no term with the query.
        """
        query_counts = self._query_counts(query)
        if not query_counts:
            return None
        n = len(self._slot_of)
        avgdl = self._total_length / n
        scores = np.zeros(len(self._id_of), dtype=np.float64)
        for term, qtf in query_counts.items():
            postings = self._postings[term]
            df = postings.size
            slots, tfs = postings.slots[:df], postings.tfs[:df]
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            norm = self.k1 * (1.0 - self.b + self.b * self._lengths[slots] / avgdl)
            scores[slots] += (qtf * idf) * tfs * (self.k1 + 1.0) / (tfs + norm)
        return scores

    def group_score_array(self, query: str, group_of_slot: np.ndarray, groups: int) -> np.ndarray | None:
        """BM25 scores of groups of documents, each group scored as one document made of its
        members' texts (the same as an index of the groups' joined texts would give), by group
        number; None when no query term occurs in the index.

        ``group_of_slot`` holds the group (0 to ``groups`` - 1) of the document in each slot
        (``slot``), -1 for a slot left out (a free one, or a document in no group); it must cover
        every slot. Groups without a member score zero and do not count as documents.
        """
        query_counts = self._query_counts(query)
        if not query_counts:
            return None
        size = len(self._id_of)
        member = group_of_slot[:size]
        kept = member >= 0
        lengths = np.bincount(member[kept], weights=self._lengths[:size][kept], minlength=groups)
        present = np.bincount(member[kept], minlength=groups) > 0
        n = int(present.sum())
        scores = np.zeros(groups, dtype=np.float64)
        if n == 0 or not lengths.any():  # no group, or no word in any: every score is zero
            return scores
        norm = self.k1 * (1.0 - self.b + self.b * lengths / (float(lengths.sum()) / n))
        for term, qtf in query_counts.items():
            postings = self._postings[term]
            slots, tfs = postings.slots[: postings.size], postings.tfs[: postings.size]
            where = group_of_slot[slots]
            inside = where >= 0
            tf = np.bincount(where[inside], weights=tfs[inside], minlength=groups)
            df = int(np.count_nonzero(tf))
            if df == 0:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            # Empty groups (tf 0) add nothing, even where their norm is 0 (b = 1, no words).
            scores += (qtf * idf) * tf * (self.k1 + 1.0) / np.maximum(tf + norm, 1e-12)
        return scores

    def _query_counts(self, query: str) -> dict[str, int]:
        """The query's terms that occur in the index, each with how often the query has it."""
        counts: dict[str, int] = {}
        for term in self._tokenize(query):
            if term in self._postings:
                counts[term] = counts.get(term, 0) + 1
        return counts

    def coverage(self, query: str, doc_id: str) -> float:
        """The share of ``query``'s distinct terms that ``doc_id`` contains, each weighted by its idf.

        In [0, 1]: 1 when the document has every term of the query, 0 when it shares none (or the
        query has no term). A term no document has weighs the most, so a query about something
        never stored stays low however many of its common words match. Unlike a BM25 score it
        means the same in any index, which is what recall's relevance needs. KeyError for an
        unknown ``doc_id``.
        """
        if query != self._covered[0]:
            self._covered = (query, set(self._tokenize(query)))
        terms = self._covered[1]
        if not terms:
            return 0.0
        present = self._terms_of[self._slot_of[doc_id]][0]
        total = found = 0.0
        for term in terms:
            weight = self.idf(term)
            total += weight
            if term in present:
                found += weight
        return found / total if total > 0 else 0.0

    def terms(self, doc_id: str) -> dict[str, int]:
        """The terms of ``doc_id`` and how often each occurs; KeyError for an unknown id."""
        terms, counts = self._terms_of[self._slot_of[doc_id]]
        return dict(zip(terms, counts, strict=True))

    def document_frequency(self, term: str) -> int:
        """How many documents hold ``term``."""
        postings = self._postings.get(term)
        return postings.size if postings is not None else 0

    def idf(self, term: str) -> float:
        """The inverse document frequency of ``term`` (highest for a term no document has).

        Remembered until the next change of the index: recall asks for the same terms' idf many
        times while it judges which memories update which.
        """
        known = self._idf.get(term)
        if known is None:
            postings = self._postings.get(term)
            df = postings.size if postings is not None else 0
            n = len(self._slot_of)
            known = self._idf[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return known

    def scores(self, query: str) -> dict[str, float]:
        """BM25 score of every document sharing a term with ``query`` (all others score zero)."""
        array = self.score_array(query)
        if array is None:
            return {}
        hits = np.flatnonzero(array > 0.0)
        return {self._doc_id(int(s)): float(array[s]) for s in hits}

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` best documents as ``(doc_id, score)``, best first, equal scores by id."""
        array = self.score_array(query)
        if array is None or k <= 0:
            return []
        hits = np.flatnonzero(array > 0.0)
        if len(hits) > k:
            # Keep everything scoring at least the k-th best, so ties at the cut are settled by id.
            kth = np.partition(array[hits], len(hits) - k)[len(hits) - k]
            hits = hits[array[hits] >= kth]
        ranked = sorted(((self._doc_id(int(s)), float(array[s])) for s in hits), key=_best_first)
        return ranked[:k]

    def _doc_id(self, slot: int) -> str:
        doc_id = self._id_of[slot]
        assert doc_id is not None, "a positive score on a free slot"
        return doc_id


class _Postings:
    """One term's postings: parallel numpy arrays of slots and term frequencies, unordered.

    ``position`` finds a slot's entry, so removal moves the last entry into the hole in O(1);
    the arrays double when full, so additions are O(1) amortised. ``position`` is built at the
    first removal, not before: a dict entry per posting was ~100 MB of the resident memory and
    0.5 s of a load at 100k memories, and most terms never lose a document.
    """

    __slots__ = ("position", "size", "slots", "tfs")

    def __init__(self) -> None:
        self.slots = np.empty(2, dtype=np.int64)
        self.tfs = np.empty(2, dtype=np.float64)
        self.position: dict[int, int] | None = None
        self.size = 0

    @classmethod
    def over(cls, slots: np.ndarray, tfs: np.ndarray) -> _Postings:
        """Postings that are exactly ``slots`` and ``tfs`` (full, so the next addition copies them)."""
        postings = cls()
        postings.slots, postings.tfs, postings.size = slots, tfs, len(slots)
        return postings

    def add(self, slot: int, tf: int) -> None:
        if self.size == len(self.slots):
            self.slots = np.concatenate([self.slots, np.empty_like(self.slots)])
            self.tfs = np.concatenate([self.tfs, np.empty_like(self.tfs)])
        self.slots[self.size] = slot
        self.tfs[self.size] = tf
        if self.position is not None:
            self.position[slot] = self.size
        self.size += 1

    def extend(self, slots: np.ndarray, tfs: np.ndarray) -> None:
        start, end = self.size, self.size + len(slots)
        if end > len(self.slots):
            capacity = max(end, 2 * len(self.slots))
            self.slots = np.concatenate([self.slots[: self.size], np.empty(capacity - self.size, np.int64)])
            self.tfs = np.concatenate([self.tfs[: self.size], np.empty(capacity - self.size, np.float64)])
        self.slots[start:end] = slots
        self.tfs[start:end] = tfs
        if self.position is not None:
            self.position.update(zip(slots.tolist(), range(start, end), strict=True))
        self.size = end

    def remove(self, slot: int) -> None:
        if self.position is None:
            self.position = {int(s): i for i, s in enumerate(self.slots[: self.size].tolist())}
        hole = self.position.pop(slot)
        last = self.size - 1
        if hole != last:
            moved = int(self.slots[last])
            self.slots[hole] = moved
            self.tfs[hole] = self.tfs[last]
            self.position[moved] = hole
        self.size = last


class _PackedTerms(dict[int, tuple[tuple[str, ...], tuple[int, ...]]]):
    """Each slot's distinct terms and frequencies, as :attr:`LexicalIndex._terms_of` holds them, for
    an index restored from arrays: a restored slot's pair of tuples is made from the arrays each
    time it is asked for (a removal, :meth:`LexicalIndex.coverage`, a snapshot's
    :meth:`LexicalIndex.documents`), not for every document at load (80 ms of a 640 ms reopen at
    10k memories) nor kept (their memory is what the arrays save). A slot set anew (a document
    added after the load) is an ordinary entry; deleting a restored slot forgets it."""

    __slots__ = ("_at", "_bounds", "_codes", "_tfs", "_vocabulary")

    def __init__(
        self,
        slots: list[int],
        codes: np.ndarray,
        bounds: list[int],
        tfs: np.ndarray,
        vocabulary: Sequence[str],
    ) -> None:
        """Slot ``slots[i]`` has the terms ``vocabulary[codes[j]]`` with the frequencies ``tfs[j]``
        for ``j`` in ``bounds[i]:bounds[i + 1]``."""
        super().__init__()
        self._at = dict(zip(slots, range(len(slots)), strict=True))
        self._codes, self._bounds, self._tfs, self._vocabulary = codes, bounds, tfs, vocabulary

    def __missing__(self, slot: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
        i = self._at[slot]  # KeyError for a slot it does not hold, as a dict raises
        start, end = self._bounds[i], self._bounds[i + 1]
        # Made, not kept: a snapshot asks for every document, and keeping them all would put the
        # whole cost back in memory (300 MB at 100k memories).
        terms = tuple(map(self._vocabulary.__getitem__, self._codes[start:end].tolist()))
        return (terms, tuple(self._tfs[start:end].tolist()))

    def __delitem__(self, slot: int) -> None:
        if self._at.pop(slot, None) is None:
            super().__delitem__(slot)

    def __contains__(self, slot: object) -> bool:
        return super().__contains__(slot) or slot in self._at

    def __len__(self) -> int:
        return super().__len__() + len(self._at)


def _best_first(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])

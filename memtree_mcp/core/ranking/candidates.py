"""Which older memories a new one may update: candidates offered to whoever can tell, never a mark.

Telling a changed fact from a second fact about a different thing needs to understand what the
sentences are about; the agent that calls ``remember`` does (it knows what it just learned), and
so does an LLM judge. This module only proposes: when a memory is remembered, the older memories
it is most likely to update are named in ``remember``'s result, and the agent links the ones it
means by calling ``remember`` again with ``supersedes``. Nothing here marks anything.

A candidate is one of the few memories closest in meaning to the new one (:data:`CONSIDERED`),
earlier than it, not yet updated by another, stating something (not a question), not the same
words again, and about the same subject by one of these signs:

- very close in meaning (:data:`CLOSE`), whatever the words;
- close (:data:`NEAR`) and sharing the words that say what it is about: the idf-weighted share
  of the content words that are not values (numbers, names, identifiers), in either memory;
- close enough (:data:`NAMED`) and naming the same rare value or identifier ("8080" in "we moved
  the gateway off 8080", "ORION-172"): the new memory speaks of the old value;
- the nearest memory by far (:data:`MARGIN` over the next one) in a store large enough for that
  to mean something: an update phrased in other words is still the old fact's nearest neighbour.

Measured with ``bench/candidates.py`` (tuned on the pairs of ``bench/update_pairs.py``, the project
memory of ``bench/updates_data.py`` and LoCoMo dev; held out: ``bench/heldout_project.py`` and
``bench/pairs_heldout.py``, written apart from this module).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from memtree_mcp.core.indexes.lexical import LexicalIndex, tokenize
from memtree_mcp.core.trees.model import Leaf

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory

CONSIDERED = 5
"""How many of the memories closest in meaning to a new one are looked at."""
MOST = 3
"""The most candidates offered for one memory."""
CLOSE = 0.85
NEAR = 0.6
AGREEMENT = 0.55
NAMED = 0.35
LONE = 0.45
MARGIN = 0.15
LONE_STORE = 5
"""The nearest-by-far sign counts only with at least this many older memories to compare."""
RARE = 3
"""A value names the same thing when at most this many memories hold it."""

# "Alice said, "…"": a conversation's turn as stored; the speaker's name is no value of the fact.
_SPEAKER = re.compile(r'^\s*([A-Z][\w.-]*(?: [A-Z][\w.-]*)?) said, ["“]')
_TOKEN = re.compile(r"[#\w][\w'.:/@#-]*\w|\w")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Candidate(NamedTuple):
    """An older memory the new one may update, and how close in meaning they are."""

    leaf: Leaf
    cosine: float


def states_something(text: str) -> bool:
    """Whether ``text`` can hold a fact to update or be updated: a question states nothing."""
    return not text.rstrip("\"'” \n").endswith("?")


def _speaker_and_body(text: str) -> tuple[set[str], str]:
    found = _SPEAKER.match(text)
    return (set(found.group(1).split()), text[found.end() :]) if found else (set(), text)


def value_terms(text: str) -> set[str]:
    """The terms (as :func:`~memtree_mcp.core.indexes.lexical.tokenize` makes them) of ``text``'s values:
    numbers and identifiers (a token with a digit), and names (a capitalised word inside a
    sentence, or two at its start), the speaker of a told turn left out."""
    speaker, body = _speaker_and_body(text)
    found: set[str] = set()
    for sentence in _SENTENCE.split(body):
        tokens = _TOKEN.findall(sentence)
        for at, token in enumerate(tokens):
            if token in speaker:
                continue
            named = token[:1].isupper() and (
                at > 0 or (at + 1 < len(tokens) and tokens[at + 1][:1].isupper())
            )
            if named or any(c.isdigit() for c in token):
                found.update(tokenize(token))
    return found


def subject_agreement(lexical: LexicalIndex, older: str, newer: str) -> float:
    """How much of what one memory is about the other says too: the idf-weighted share of the
    content words that are no values, the larger of the two directions (0 to 1)."""
    a = set(tokenize(older)) - value_terms(older)
    b = set(tokenize(newer)) - value_terms(newer)
    if not a or not b:
        return 0.0
    shared = sum(lexical.idf(term) for term in a & b)
    return min(1.0, max(shared / sum(lexical.idf(t) for t in a), shared / sum(lexical.idf(t) for t in b)))


def update_candidates(memory: Memory, leaf: Leaf, exclude: Collection[str] = ()) -> list[Candidate]:
    """The older memories of ``memory`` that ``leaf`` (held, or about to be) may update, the most
    likely first, at most :data:`MOST`; ``exclude``: ids not to offer (those it links already).

    One matrix product over the memories' vectors and a few word checks: about a millisecond at
    10,000 memories (``bench/candidates.py`` measures it inside ``remember``).
    """
    index = memory.leaf_index
    if len(index) == 0 or not states_something(leaf.text):
        return []
    cosines = index.vectors() @ leaf.vector
    take = min(CONSIDERED + 2, len(cosines))
    top = np.argpartition(-cosines, take - 1)[:take] if take < len(cosines) else np.arange(len(cosines))
    ranked = [(index.id_at(int(row)), float(cosines[row])) for row in top[np.argsort(-cosines[top])]]
    older = [
        (node_id, cosine)
        for node_id, cosine in ranked
        if node_id != leaf.id and _earlier(memory.leaves[node_id], leaf)
    ]
    lone = len(index) > LONE_STORE
    mine = value_terms(leaf.text)
    words = set(tokenize(leaf.text))
    out: list[Candidate] = []
    for rank, (node_id, cosine) in enumerate(older[:CONSIDERED]):
        if cosine < min(NAMED, LONE, NEAR):
            break
        other = memory.leaves[node_id]
        if (
            node_id in exclude
            or memory.links.current_of(node_id) is not None
            or not states_something(other.text)
            or set(tokenize(other.text)) == words
        ):
            continue
        following = older[rank + 1][1] if rank + 1 < len(older) else 0.0
        if _same_subject(memory.lexical, other, leaf, cosine, mine) or (
            rank == 0 and lone and cosine >= LONE and cosine - following >= MARGIN
        ):
            out.append(Candidate(other, cosine))
            if len(out) == MOST:
                break
    return out


def _same_subject(lexical: LexicalIndex, older: Leaf, newer: Leaf, cosine: float, values: set[str]) -> bool:
    if cosine >= CLOSE:
        return True
    if cosine >= NEAR and subject_agreement(lexical, older.text, newer.text) >= AGREEMENT:
        return True
    if cosine < NAMED:
        return False
    shared = value_terms(older.text) & values
    return any(lexical.document_frequency(term) <= RARE for term in shared)


def _earlier(older: Leaf, newer: Leaf) -> bool:
    return (older.timestamp, older.seq) < (newer.timestamp, newer.seq)


def related(first: Leaf, second: Leaf) -> bool:
    """Whether one of two memories names the other as a candidate it may update (stored when it
    was remembered, :attr:`~memtree_mcp.core.trees.model.Leaf.may_update`), or they say nearly the same
    (:data:`CLOSE`): the pairs whose newer memory goes first wherever both are shown."""
    if first.id in second.may_update or second.id in first.may_update:
        return True
    return float(np.dot(first.vector, second.vector)) >= CLOSE


def newer_first(leaves: Sequence[Leaf]) -> list[Leaf]:
    """``leaves`` in their order, except that of two :func:`related` memories the newer comes
    first: it moves up to just before the first older one it is related to. Ordering is not a
    claim: a look-alike (staging beside production) loses nothing by it, and an update that was
    never linked is read before what it replaced."""
    order = list(leaves)
    for leaf in sorted(leaves, key=lambda item: (item.timestamp, item.seq)):
        at = order.index(leaf)
        before = next(
            (i for i, other in enumerate(order[:at]) if _earlier(other, leaf) and related(other, leaf)),
            None,
        )
        if before is not None:
            order.insert(before, order.pop(at))
    return order

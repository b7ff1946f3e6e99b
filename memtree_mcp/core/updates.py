"""Which memories a later one updates.

A later memory supersedes an earlier one when they speak of the same subject and the
later one changes it, judged without an LLM from the two memories (:class:`UpdateJudge`), and,
in a store of many memories, how rare their shared words are: close in meaning and sharing words
(or naming the replaced value again, or the same issue id reaching a closing state); aligned
token by token, no word that tells subjects apart (which environment, platform, person, plan… —
"the *staging* Redis", "Staging Redis", "the Redis *for staging*", "*Alice's* laptop", "*Bob*
now works on…") may differ, nor may two separate slots (who *and* when); and the later one
negates the earlier, says that it changed ("now", "moved", "resolved", "no longer") and replaces
something, or differs in one value (a number with its unit), name or state only; the same value
said again changes nothing, even with "now". What a memory reports someone said
('Alice said, "…"', "User: …") is read for what was said; questions, greetings and thanks state
nothing; and the change must be said in a sentence of both memories on the shared subject, most
of both being aligned. A false mark tells the model to trust the wrong fact, a missed one still
shows both memories with their dates, so the rule errs towards missing: ``bench/update_rule.py``
measures it on the labelled pairs of ``bench/update_pairs.py``, ``bench/update_chat.py`` counts
its marks on real conversations (LoCoMo), where almost no turn updates another.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from memtree_mcp.core.lexical import LexicalIndex, stem
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.update_reading import (
    CONTENT,
    Reading,
    Token,
    read,
)

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory

# An update speaks of the same subject (similar meaning, and a good share of the earlier memory's
# content words, each above its floor and together above UPDATE_SUBJECT), no word that qualifies
# the subject differs, and it changes a value: it says so, or only a value differs (supersedes).
UPDATE_MEANING = 0.45
UPDATE_SHARED_WORDS = 0.2
UPDATE_SUBJECT = 0.9
# The two must be parallel: this share of the content tokens of each (and of each sentence that
# tells the change) aligned with the other's; for a negation, the same fact said again negated.
PARALLEL = 0.25
NEGATED_PARALLEL = 0.5
# From this many memories in the store on, the idf-weighted share of shared words counts too.
IDF_MIN_MEMORIES = 20
# Cues that say so little alone ("I started writing", "she joined us for dinner") that the later memory must
# also name a value, a name or a state in place of the earlier one's.
WEAK_CUES = frozenset("start started starts became becomes joined resumed".split())
# Verbs of a role one person holds at a time: "Tomasz now leads the team" hands the role over,
# "Bob now works on the team" does not say Alice left it.
ROLE_VERBS = frozenset(
    """
    lead leads led head heads headed own owns owned manage manages managed run runs chair chairs
    chaired coordinate coordinates coordinated
    """.split()
)
# Cues that say someone or something took another's place.
HANDOVER_CUES = frozenset(
    "took taken takes taking replaced replaces instead left succeeded succeeds new".split()
)
# Words that open a clause giving the reason or time of a change ("v5.0 after the rewrite").
REASON_WORDS = frozenset("after since because following due".split())
# Prepositions that attach a qualifier to the head noun ("the Redis for staging").
QUALIFYING_PREPOSITIONS = frozenset("for in on at of from".split())
DETERMINERS = frozenset("the a an my our your his her their its this that these those".split())


def supersedes(newer: Leaf, older: Leaf, lexical: LexicalIndex) -> bool:
    """Whether ``newer`` updates what ``older`` said: later, on the same subject, and changing it.

    See :class:`UpdateJudge` for the rule. ``lexical`` is the memories' index; the rule reads the
    two texts and vectors and, from :data:`IDF_MIN_MEMORIES` memories on, the idf of the words.
    """
    return UpdateJudge(lexical).supersedes(newer, older)


_ROLE_KEYS = frozenset(stem(word) for word in ROLE_VERBS)
_HANDOVER_KEYS = frozenset(stem(word) for word in HANDOVER_CUES)
_WEAK_KEYS = frozenset(stem(word) for word in WEAK_CUES)


def _aligned(old: Sequence[Token], new: Sequence[Token]) -> list[tuple[int, int]]:
    """The pairs of positions of a longest common subsequence of the two token keys, a content
    token counting twice a stopword's, in order."""
    n, m = len(old), len(new)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        key = old[i].key
        weight = 2 if old[i].kind in CONTENT else 1
        for j in range(m - 1, -1, -1):
            if key == new[j].key:
                row[j] = below[j + 1] + weight
            else:
                row[j] = max(below[j], row[j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if old[i].key == new[j].key and table[i][j] == table[i + 1][j + 1] + (
            2 if old[i].kind in CONTENT else 1
        ):
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


class _Gap(NamedTuple):
    old: list[int]  # positions of the differing content tokens of the older memory
    new: list[int]
    lead: bool  # before the first shared content token: where the subject and its qualifiers stand


class UpdateJudge:
    """:func:`supersedes` for many pairs of memories: what it reads of each memory (its tokens and
    their kinds, its cue words) is read once: a recall judges about fifty pairs among a few dozen
    memories.

    The rule, judged without an LLM; the store is read only for the idf of the earlier memory's
    words, and only from :data:`IDF_MIN_MEMORIES` memories on (a store of two memories is judged
    from the two texts alone):

    Reading (:func:`read`): a memory that reports speech ('Alice said, "I moved to Berlin."',
    "User: I moved to Berlin.", :func:`speech`) is read for what was said, the speaker kept apart;
    its sentences that end with "?" (a question states no fact) and those of greetings, thanks
    and reactions only (:data:`SMALL_TALK`, and the names of those spoken to: "Hey Tim!",
    "Thanks, Maria, means a lot!") are left out; in reported speech, the name of the one spoken to
    ("Sure thing, *Gina*!") and the words of :data:`SMALL_TALK` tell no subject; the words of
    :data:`WEAK_WORDS` ("since", "anything") are function words.

    0. An issue or task named by its id among the first words of both ("ORION-172", "#412") is
       updated when the later memory gives it a state of :data:`TERMINAL_STATES` ("closed",
       "fixed") that is not negated and that the earlier did not say (:func:`closes_item`).
    1. ``newer`` is later and its text differs; the cosine of the two is at least
       :data:`UPDATE_MEANING`; at least :data:`UPDATE_SHARED_WORDS` of ``older``'s words, names,
       states and units (stemmed, stopwords left out; uniformly weighted, or by idf when that is
       higher in a large store) are in ``newer``, and that share and the cosine add up to
       :data:`UPDATE_SUBJECT`; or ``newer`` names a value or name of ``older`` again, gives one of
       its own and says it changed ("moved the gateway off 8080; it answers on 9443"). ``newer``
       does not add a fact beside the first ("also", "too", "another").
    2. Two memories reporting what two speakers said, of whom one says "I", "my", "you"
       (:data:`PERSONAL`), speak of two people ("Alice said she moved…" / "Bob said he moved…"):
       no update. The two token sequences are aligned (a longest common subsequence, content tokens weighing
       twice a stopword); tokens that differ but appear on both sides were only moved. What is
       left are gaps: between two aligned tokens, the older memory's differing tokens against the
       newer one's. A gap with differing tokens on both sides is a *substitution*. A number and
       the unit after it are one value ("30 minutes" → "2 hours"); "new" inserted before a shared
       word ("my *new* dentist") and a closing clause of reason or time after the last shared word
       ("v5.0 *after the rewrite*") change nothing, and "new" says that something changed.
    3. The subject must agree: no substitution may change what qualifies the subject. A word is a
       qualifier when it is possessive ("Alice's laptop"), when it stands before the first shared
       content word after a determiner and modifies a shared word (it is followed by one: "the
       *staging* Redis", "the *iOS* app"), when it is a lower-case word in that lead position at
       all, when it is capitalised and followed by a shared name ("*Staging* Redis"), or when a
       preposition ties it to the first word of the sentence ("the Redis *for staging*"). Another
       capitalised first word ("*Alice* works on…" / "*Bob* now works on…") is another subject,
       unless the later memory says the role changed hands (:data:`HANDOVER_CUES`) or its verb is
       that of a role one holds at a time (:data:`ROLE_VERBS`: "*Elena* now leads the team").
       Two substitutions of the same kind of token (value for value, word for word, name for
       name) mean two things differ, of which only one can be the value: the other says which
       thing ("Priya is away May 3" / "Tom is away May 12").
       And the two must be parallel: at least :data:`PARALLEL` of the content tokens of each are
       aligned with the other's (not merely found somewhere in it).
    4. And the later memory must change a value. It negates what the earlier said ("no longer", "not …
       anymore": at least :data:`NEGATED_PARALLEL` of each aligned, and the content word after the
       negation, in its sentence, an aligned one); or it says it changed (a word of
       :data:`UPDATE_CUES`, "took over", or a new state of :data:`STATE_WORDS` said in place of
       another state, or in a sentence that says nothing but the earlier subject and its state: "We
       signed the offer from Acme"; "done" and "finished" are one state) and something was replaced (a
       substitution, or a new state); a cue of :data:`WEAK_CUES` ("started", "joined") or "new" before
       a shared word counts only when a value, name or state takes another's place; "now" after
       "right" or "for" says no change. Or, without a cue, exactly one substitution of values, names
       or states, after the lead, is all that differs ("Standup is at 9:30" → "… at 10:15"). What
       changed and the cue that says so count only in the sentences of each memory that speak of what
       the other says (at least :data:`PARALLEL` of their content aligned): the other sentences of a
       longer memory tell other facts.
       The earlier memory's values said again, with no value, name or state of the later one's
       own, change nothing, even with "now" ("Production Redis now runs on port 6379"). A value of
       the earlier memory that the later one drops without giving another value or a new state
       is not changed: the later speaks of something else ("raised to 300 requests per minute" is
       not retired by "rate limiting moves to the API gateway").

    Valid while the index does not change (the idf weights of each memory are read once).
    """

    def __init__(self, lexical: LexicalIndex) -> None:
        self._lexical = lexical
        self._read: dict[str, Reading] = {}
        self._weights: dict[str, dict[str, float]] = {}

    def supersedes(self, newer: Leaf, older: Leaf) -> bool:
        """See :func:`supersedes`."""
        if (newer.timestamp, newer.seq) <= (older.timestamp, older.seq) or newer.text == older.text:
            return False
        cosine = float(newer.vector @ older.vector)
        if cosine < UPDATE_MEANING:
            return False
        old, new = self.reading(older), self.reading(newer)
        if new.adds and not old.adds:
            return False
        if closes_item(old, new):
            return True
        if not same_subject(old, new, cosine, self.weighted_share(older, old, new)):
            return False
        return changes_value(old, new)

    def weighted_share(self, older: Leaf, old: Reading, new: Reading) -> float | None:
        """The idf-weighted share of ``older``'s subject words that ``newer`` has, or None in a
        store of fewer than :data:`IDF_MIN_MEMORIES` memories (where idf means nothing)."""
        if len(self._lexical) < IDF_MIN_MEMORIES or not old.subject:
            return None
        weights = self._weights.get(older.id)
        if weights is None:
            weights = self._weights[older.id] = {key: self._lexical.idf(key) for key in old.subject}
        total = sum(weights.values())
        return sum(w for key, w in weights.items() if key in new.content) / total if total else 0.0

    def reading(self, leaf: Leaf) -> Reading:
        """:func:`read` of ``leaf``'s text, read once per memory."""
        known = self._read.get(leaf.id)
        if known is None:
            known = self._read[leaf.id] = read(leaf.text)
        return known


def closes_item(old: Reading, new: Reading) -> bool:
    """Whether ``new`` says that an issue or task ``old`` named by its id among its first words
    ("ORION-172", "#412") reached a state that ends it ("closed", "fixed", "shipped"), which
    ``old`` did not say: whatever ``old`` said about the item, its state is no longer current."""
    return bool(old.identifiers & new.identifiers) and bool(new.terminal - old.content)


def same_subject(old: Reading, new: Reading, cosine: float, weighted: float | None = None) -> bool:
    """Step 1 of the rule of :class:`UpdateJudge`: whether two memories close in meaning share
    enough words to speak of the same subject.

    The share is that of ``old``'s words, names and states found in ``new``, uniformly weighted,
    or idf-weighted (``weighted``) when that is higher: in a store of many memories, sharing its
    rare words says more than sharing as many common ones. Or ``new`` names a value or name of
    ``old`` again and, saying that it changed, gives one of its own ("moved the gateway off 8080;
    it answers on 9443", "Taskly has been renamed to Flowboard")."""
    shared = len(old.subject & new.content) / len(old.subject) if old.subject else 0.0
    if weighted is not None:
        shared = max(shared, weighted)
    if shared >= UPDATE_SHARED_WORDS and cosine + shared >= UPDATE_SUBJECT:
        return True
    named = {t.key for t in old.tokens if t.kind in {"value", "name"}}
    own = {t.key for t in new.tokens if t.kind in {"value", "name"}} - old.content
    return bool(named & new.content) and bool(own) and bool(new.cues - old.cues)


def differences(old: Sequence[Token], new: Sequence[Token]) -> tuple[list[_Gap], set[int], set[int]]:
    """The gaps between the aligned tokens of two memories, and the aligned positions of each."""
    pairs = _aligned(old, new)
    matched_old = {i for i, _ in pairs}
    matched_new = {j for _, j in pairs}
    unmatched_old = {old[i].key for i in range(len(old)) if i not in matched_old and old[i].kind in CONTENT}
    unmatched_new = {new[j].key for j in range(len(new)) if j not in matched_new and new[j].kind in CONTENT}
    moved = unmatched_old & unmatched_new
    found: list[_Gap] = []
    lead = True
    previous = (-1, -1)
    for i, j in [*pairs, (len(old), len(new))]:
        old_diff = [
            k for k in range(previous[0] + 1, i) if old[k].kind in CONTENT and old[k].key not in moved
        ]
        new_diff = [
            k for k in range(previous[1] + 1, j) if new[k].kind in CONTENT and new[k].key not in moved
        ]
        if old_diff or new_diff:
            found.append(_Gap(old_diff, new_diff, lead))
        if i < len(old) and old[i].kind in CONTENT:
            lead = False
        previous = (i, j)
    return found, matched_old, matched_new


def _qualifies(tokens: Sequence[Token], at: int, matched: set[int], lead: bool) -> bool:
    """Whether the differing token at ``at`` qualifies the subject (see :class:`UpdateJudge`)."""
    token = tokens[at]
    if token.possessive:
        return True
    if not lead or token.kind not in {"word", "name"}:
        return False
    if token.kind == "word" and not token.capital:
        return True
    follows = at + 1
    return (
        follows in matched
        and tokens[follows].kind in CONTENT
        and any(t.key in DETERMINERS for t in tokens[:at])
    )


def _value_like(token: Token) -> bool:
    return token.kind in {"value", "name", "state"} or (token.kind == "word" and token.capital)


def _first_content(tokens: Sequence[Token]) -> int:
    return next((k for k, t in enumerate(tokens) if t.kind in CONTENT), len(tokens))


def _after_head(tokens: Sequence[Token], at: int, matched: set[int]) -> bool:
    """Whether the word at ``at`` is attached by a preposition to the first word of the sentence,
    a shared one: a qualifier after the head noun ("the Redis *for staging*")."""
    k = at - 1
    while k >= 0 and tokens[k].key in DETERMINERS:
        k -= 1
    return (
        k >= 1
        and tokens[k].key in QUALIFYING_PREPOSITIONS
        and k - 1 in matched
        and _first_content(tokens) == k - 1
    )


def _modifies_a_name(tokens: Sequence[Token], gap: list[int], matched: set[int]) -> bool:
    """Whether a capitalised differing word of ``gap`` is followed by a shared name or value that
    it qualifies ("*Staging* Redis", "*Production* Postgres")."""
    follows = gap[-1] + 1
    return (
        follows in matched
        and tokens[follows].kind in {"name", "value"}
        and any(tokens[k].capital or tokens[k].kind == "name" for k in gap)
    )


def _other_holder(old: Reading, new: Reading, gap: _Gap, matched_new: set[int]) -> bool:
    """Whether a substitution of the capitalised first words of both memories (who or what the
    sentence is about: "*Alice* works on…" / "*Bob* now works on…") names another subject rather
    than a new holder of the same role. It is a new holder when the later memory says so (a
    word of :data:`HANDOVER_CUES`: "took over", "instead", "new") or the shared verb after the
    names is that of a role held by one at a time (:data:`ROLE_VERBS`: "now *leads* the team")."""
    if _first_content(old.tokens) not in gap.old or _first_content(new.tokens) not in gap.new:
        return False
    tokens = [*(old.tokens[k] for k in gap.old), *(new.tokens[k] for k in gap.new)]
    if not all(t.capital or t.kind == "name" for t in tokens):
        return False
    if any(t.key in _HANDOVER_KEYS for t in new.tokens):
        return False
    after = next((k for k in range(gap.new[-1] + 1, len(new.tokens)) if new.tokens[k].kind in CONTENT), None)
    return not (after is not None and after in matched_new and new.tokens[after].key in _ROLE_KEYS)


def _asides(new: Reading, matched_new: set[int], old: Reading) -> tuple[set[int], bool]:
    """Positions of ``new``'s differing words that change nothing, and whether it calls its
    subject new: "new" before a shared word ("my *new* dentist", when ``old`` has no "new"),
    and a closing clause of reason or time after the last shared word ("at v5.0 *after the
    rewrite*", "*since the load test*")."""
    tokens = new.tokens
    aside: set[int] = set()
    renewed = False
    if "new" not in old.content:
        for k, t in enumerate(tokens[:-1]):
            if t.key == "new" and k not in matched_new and k + 1 in matched_new:
                aside.add(k)
                renewed = True
    last = max(matched_new, default=-1)
    tail = next((k for k in range(last + 1, len(tokens)) if tokens[k].key in REASON_WORDS), None)
    if tail is not None:
        aside.update(range(tail, len(tokens)))
    return aside, renewed


def _own_values(new: Reading, old: Reading) -> bool:
    """Whether ``new`` has a value, a name, a state or a capitalised word that ``old`` has not."""
    return any(
        (t.kind in {"value", "name", "state"} or t.capital) and t.key not in old.content for t in new.tokens
    )


def _aligned_share(tokens: Sequence[Token], matched: set[int], aside: Collection[int] = ()) -> float:
    """The share of the content tokens of one memory (but those ``aside``) that are aligned with
    the other's."""
    content = [k for k, t in enumerate(tokens) if t.kind in CONTENT and k not in aside]
    return sum(k in matched for k in content) / len(content) if content else 0.0


def _negates_shared(
    old: Reading, new: Reading, matched_old: set[int], matched_new: set[int], aside: set[int]
) -> bool:
    """Whether the negation of the one memory that negates is said of what both say: most of the
    content of each is aligned, and the first content word after a negation is an aligned one
    ("no longer *drinks* coffee", not "Keep going and never *give* up" against "Keep going")."""
    if (
        min(_aligned_share(old.tokens, matched_old), _aligned_share(new.tokens, matched_new, aside))
        < NEGATED_PARALLEL
    ):
        return False
    tokens, matched = (new.tokens, matched_new) if new.negated else (old.tokens, matched_old)
    for k, t in enumerate(tokens):
        if t.kind == "negation":
            after = next(
                (
                    j
                    for j in range(k + 1, len(tokens))
                    if tokens[j].kind in CONTENT and tokens[j].sentence == t.sentence
                ),
                None,
            )
            if after is not None and after in matched:
                return True
    return False


def _parallel_sentences(tokens: Sequence[Token], matched: set[int], aside: Collection[int] = ()) -> set[int]:
    """The sentences of one memory that speak of what the other says: at least :data:`PARALLEL`
    of their content tokens (but those ``aside``) are aligned with the other memory's."""
    counts: dict[int, list[int]] = {}
    for k, t in enumerate(tokens):
        if t.kind in CONTENT and k not in aside:
            count = counts.setdefault(t.sentence, [0, 0])
            count[0] += k in matched
            count[1] += 1
    return {sentence for sentence, (aligned, total) in counts.items() if aligned >= PARALLEL * total}


def _only_state(new: Reading, sentence: int, old: Reading) -> bool:
    """Whether a sentence of ``new`` says nothing but the earlier memory's subject and states and
    values ("We signed the offer from Acme" after "The offer from Acme is under negotiation")."""
    return all(
        t.kind in {"state", "value", "unit"} or t.key in old.content
        for t in new.tokens
        if t.sentence == sentence and t.kind in CONTENT
    )


def changes_value(old: Reading, new: Reading) -> bool:
    """Steps 2 to 4 of the rule of :class:`UpdateJudge`, for two memories on a shared subject."""
    if old.speaker != new.speaker and (old.personal or new.personal):
        return False  # "I", "my", "you" said by two speakers: two people
    found, matched_old, matched_new = differences(old.tokens, new.tokens)
    aside, renewed = _asides(new, matched_new, old)
    if (
        min(_aligned_share(old.tokens, matched_old), _aligned_share(new.tokens, matched_new, aside))
        < PARALLEL
    ):
        return False
    if aside:
        found = [
            _Gap(gap.old, [k for k in gap.new if k not in aside], gap.lead)
            for gap in found
            if gap.old or any(k not in aside for k in gap.new)
        ]
    substitutions = [gap for gap in found if gap.old and gap.new]
    parallel = 0
    for gap in substitutions:
        if any(_qualifies(old.tokens, k, matched_old, gap.lead) for k in gap.old) or any(
            _qualifies(new.tokens, k, matched_new, gap.lead) for k in gap.new
        ):
            return False
        if gap.lead and (
            _modifies_a_name(old.tokens, gap.old, matched_old)
            or _modifies_a_name(new.tokens, gap.new, matched_new)
            or _other_holder(old, new, gap, matched_new)
        ):
            return False
        if any(
            old.tokens[k].kind in {"word", "name"} and _after_head(old.tokens, k, matched_old)
            for k in gap.old
        ) or any(
            new.tokens[k].kind in {"word", "name"} and _after_head(new.tokens, k, matched_new)
            for k in gap.new
        ):
            return False
        parallel += bool({old.tokens[k].kind for k in gap.old} & {new.tokens[k].kind for k in gap.new})
    if parallel >= 2:
        return False
    if (
        new.negated != old.negated
        and not parallel
        and _negates_shared(old, new, matched_old, matched_new, aside)
    ):
        return True  # the same fact, negated or no longer negated
    numbers = {t.key for t in old.tokens if t.kind == "value"}
    if numbers and numbers <= new.content and not _own_values(new, old):
        return False  # every value said again, and no value, name or state of its own: no change
    # What changed, and what says so, is said in a sentence on the shared subject: another
    # sentence of a longer memory tells another fact.
    old_said = _parallel_sentences(old.tokens, matched_old)
    new_said = _parallel_sentences(new.tokens, matched_new, aside)
    found = [
        _Gap(
            [k for k in gap.old if old.tokens[k].sentence in old_said],
            [k for k in gap.new if new.tokens[k].sentence in new_said],
            gap.lead,
        )
        for gap in found
    ]
    substitutions = [gap for gap in found if gap.old and gap.new]
    # a state said in place of another state ("planned" -> "shipped", "in beta" -> "available")
    replacing = {
        k for gap in substitutions if any(old.tokens[i].kind == "state" for i in gap.old) for k in gap.new
    }
    old_kinds = {old.tokens[k].kind for gap in found for k in gap.old}
    new_tokens = [new.tokens[k] for gap in found for k in gap.new]
    new_state = any(
        t.kind == "state"
        and t.key not in old.content
        and (k in replacing or _only_state(new, t.sentence, old))
        for k, t in ((k, new.tokens[k]) for gap in found for k in gap.new)
    )
    if "value" in old_kinds and not new_state and all(t.kind != "value" for t in new_tokens):
        return False
    cues = {t.key for t in new.tokens if t.kind == "cue" and t.sentence in new_said} | {
        cue for cue in new.cues if " " in cue
    }
    if (cues - old.cues) - _WEAK_KEYS or new_state:
        # something was replaced, or the later memory brings a value, a name or a state of its own
        return bool(substitutions) or any(_value_like(t) for t in new_tokens)
    if cues - old.cues:  # a weak cue: a value, a name or a state said in place of another
        return any(
            any(_value_like(old.tokens[k]) for k in gap.old)
            and any(_value_like(new.tokens[k]) for k in gap.new)
            for gap in substitutions
        )
    if renewed:  # "my new dentist": another holds the role, named in place of the earlier one
        return any(
            any(_value_like(old.tokens[k]) for k in gap.old)
            and any(_value_like(new.tokens[k]) for k in gap.new)
            for gap in substitutions
        )
    new_kinds = {t.kind for t in new_tokens}
    return (
        len(substitutions) == 1
        and parallel == 1
        and not substitutions[0].lead
        and (old_kinds | new_kinds) <= {"value", "name", "state", "unit"}
    )


class Updates:
    """Which memories update which (:func:`~memtree_mcp.core.recall.newest_update`) for the hits
    of one recall, all hits at once, among the ``candidates`` and the first ``siblings`` semantic
    siblings of each hit (the latest ``judged`` of those close in meaning are judged word by word):
    the candidates they share and their semantic siblings are gathered once, ordered latest first
    once, compared in meaning with every hit in one matrix product, and what the judge reads of
    each memory is read once. Done hit by hit, with each pair's words read afresh, this took about
    2 ms of the 6 to 9 ms of CPU of a recall at 10k memories (``bench/recall_ab.py``, retired; in
    git at 4868398)."""

    def __init__(self, memory: Memory, candidates: Iterable[str], siblings: int, judged: int) -> None:
        self._memory = memory
        self._candidates = list(dict.fromkeys(candidates))
        self._siblings = siblings
        self._judged = judged
        self._judge = UpdateJudge(memory.lexical)

    def newest(self, older: Leaf) -> Leaf | None:
        """The memory that updates ``older``: where its explicit links lead when a memory says it
        updates it (``Memory.current_of``: whoever stored it knew), whatever the rule would say;
        otherwise the latest memory among the candidates and ``older``'s semantic siblings that
        updates it by the rule (:class:`UpdateJudge`), or where that one's explicit links lead."""
        return self.newest_of([older])[0]

    def newest_of(self, olders: Sequence[Leaf]) -> list[Leaf | None]:
        """:meth:`newest` of each of ``olders``."""
        memory = self._memory
        explicit = [memory.current_of(older.id) for older in olders]
        ruled = [older for older, linked in zip(olders, explicit, strict=True) if linked is None]
        by_rule = iter(self._by_rule(ruled) if ruled else [])
        out: list[Leaf | None] = []
        for older, linked in zip(olders, explicit, strict=True):
            if linked is None:
                found = next(by_rule)
                linked = memory.current_of(found.id) if found is not None else None
                if found is None or linked == older.id:
                    out.append(None)  # no update, or one that the older's own links name back
                    continue
                if linked is None:
                    out.append(found)
                    continue
            out.append(memory.leaves[linked])
        return out

    def _by_rule(self, olders: Sequence[Leaf]) -> list[Leaf | None]:
        """The latest memory that updates each of ``olders`` by the rule, or None."""
        memory = self._memory
        parents = [memory.semantic.parent_of.get(older.id) for older in olders]
        siblings = {
            parent: memory.semantic.branches[parent].children[: self._siblings]
            for parent in dict.fromkeys(parents)
            if parent is not None
        }
        ids = dict.fromkeys(self._candidates)
        for children in siblings.values():
            ids.update(dict.fromkeys(children))
        found = [leaf for leaf in map(memory.leaves.get, ids) if leaf is not None]
        if not found or not olders:
            return [None] * len(olders)
        stamps = np.fromiter((leaf.timestamp for leaf in found), dtype=np.float64, count=len(found))
        seqs = np.fromiter((leaf.seq for leaf in found), dtype=np.int64, count=len(found))
        latest_first = np.lexsort((seqs, stamps))[::-1]
        pool = [found[i] for i in latest_first]
        stamps, seqs = stamps[latest_first], seqs[latest_first]
        place = {leaf.id: i for i, leaf in enumerate(pool)}
        shared = np.zeros(len(pool), dtype=bool)
        shared[[place[c] for c in self._candidates if c in place]] = True
        among: dict[str | None, np.ndarray] = {None: shared}
        for parent, children in siblings.items():
            among[parent] = shared.copy()
            among[parent][[place[c] for c in children if c in place]] = True
        row_of = memory.leaf_index.row_of
        rows = np.fromiter((row_of[leaf.id] for leaf in pool), dtype=np.int64, count=len(pool))
        cosines = memory.leaf_index.vectors()[rows] @ np.stack([older.vector for older in olders]).T
        close = cosines >= UPDATE_MEANING
        out: list[Leaf | None] = []
        for j, older in enumerate(olders):
            later = (stamps > older.timestamp) | ((stamps == older.timestamp) & (seqs > older.seq))
            judged = np.flatnonzero(among[parents[j]] & later & close[:, j])[: self._judged]
            out.append(next((pool[i] for i in judged if self._judge.supersedes(pool[i], older)), None))
        return out

"""What the update rule (:mod:`memtree_mcp.core.updates`) reads of one memory: its tokens, each
with its kind (a word, a name, a value, a state, a change cue, a negation…) and its sentence, and
what it says of itself (who said it, its cues, whether it negates).

A memory that reports speech ('Alice said, "I moved to Berlin."', "User: I moved to Berlin.") is
read for what was said, the speaker kept apart; its questions and its sentences of greetings,
thanks and reactions only state no fact and are left out; in reported speech, the name of the one
spoken to and the words of greetings and reactions tell no subject.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from memtree_mcp.core.lexical import STOPWORDS, stem

# Words that say a state changed: English change verbs and adverbs of time.
UPDATE_CUES = frozenset(
    """
    now anymore longer instead currently moved moves changed changes switched replaced
    replaces fixed resolved closed reopened updated renamed became becomes promoted left joined
    cancelled canceled reverted dropped migrated deprecated retired stopped started resumed
    postponed rescheduled raised lowered increased decreased bumped cut reduced extended shortened
    upgraded downgraded rewrote rewriting rewritten relocated scaled
    """.split()
)
# Words that say nothing of what a memory is about: "since" (that something changed, or only
# when: "since we last talked") and the indefinite pronouns ("anything", "something").
WEAK_WORDS = frozenset(
    """
    since anything something everything anyone someone everyone anybody somebody everybody
    anywhere somewhere everywhere
    """.split()
)
# Words before "now" that make it "at this moment", not "unlike before" ("right now", "for now").
_AT_PRESENT = frozenset("right for until till by just".split())
# Words that name a state a thing is in: a change to one of them is a change of value.
STATE_WORDS = frozenset(
    """
    open opened resolved fixed closed done complete completed finished shipped released launched
    planned pending approved rejected accepted declined blocked unblocked cancelled canceled
    deprecated removed available unavailable beta alpha deployed merged signed investigating
    progress active inactive enabled disabled paused suspended expired valid invalid
    """.split()
)
# States that are one state said in other words ("when you're done" / "when you're finished").
_SAME_STATE = {
    word: same
    for same, words in {"done": "done complete completed finished"}.items()
    for word in words.split()
}
# States that end what an issue, a task or a plan was: an identified item ("ORION-172",
# "#412") that reaches one of them is updated whatever its earlier memory said about it.
TERMINAL_STATES = frozenset(
    """
    resolved fixed closed done complete completed finished shipped released merged cancelled
    canceled rejected declined removed
    """.split()
)
# Units: a number and its unit are one value ("30 minutes" -> "2 hours" changes one slot).
UNITS = frozenset(
    """
    ms millisecond milliseconds s sec secs second seconds min mins minute minutes h hr hrs hour
    hours day days week weeks month months year years kb mb gb tb pb kib mib gib tib km m cm mm mi
    kg g lb lbs mph kmh rpm rps qps percent euro euros eur usd dollar dollars gbp pound pounds chf
    """.split()
)
# Words that add a second fact beside the first instead of replacing it.
ADDITION_CUES = frozenset("also too additionally another besides".split())
NEGATIONS = frozenset("no not never nor cannot anymore".split())
NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve once twice half dozen".split()
)
# Change cues of several words, each of which means little alone.
_PHRASE_CUES = re.compile(
    r"\b(?:took|taken|takes|taking) over\b|\bfrom now on\b|\bthese days\b|\bnot any more\b"
    r"|\bwent (?:up|down)\b"
)
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*-\d+|#\d+")
_TOKEN = re.compile(r"[#$\u20ac\u00a3]?[^\W_]+(?:['\u2019.,:/\-][^\W_]+)*%?")
_SENTENCE_BREAK = re.compile(r"[.!?:;]")
_SENTENCE_END = re.compile(r"[.!?]")
# Abbreviations whose full stop ends no sentence: the name after "Dr." is not a sentence's first word.
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st mt jr sr vs".split())
# Reported speech: who spoke is attribution, what they said is the memory's content
# ('Alice said, "I moved to Berlin."'; "User: I moved to Berlin."). Narration after the quote
# ('… and shared a photo of …') is not what was said.
_SPEECH = re.compile(
    r"\s*(?P<who>[A-Z][\w'\u2019.\-]*(?:\s+[A-Z][\w'\u2019.\-]*){0,2})\s+"
    r"(?:said|says|asked|asks|replied|replies|answered|answers|wrote|writes|added|adds|texted|"
    r"told\s+[\w'\u2019]+)\s*[,:]?\s*[\"\u201c]"
)
_ROLE = re.compile(r"\s*(?P<who>user|assistant|human|ai|bot)\s*:\s*", re.IGNORECASE)
_CLOSING_QUOTES = '"\u201d'
# Words that refer to the speaker or the one spoken to: two speakers saying them speak of two people.
PERSONAL = frozenset(
    """
    i me my mine myself i'm i've i'd i'll we us our ours ourselves we're we've we'd we'll let's you your
    yours yourself you're you've you'd you'll
    """.split()
)
# Words of greetings, thanks, farewells and reactions: a sentence of these alone (and of the
# names of those spoken to) states no fact ("Hey Tim!", "Thanks, Maria, that's so sweet!").
SMALL_TALK = frozenset(
    """
    hi hey hello hiya howdy yo thanks thank thx bye goodbye cya cheers congrats congratulations wow
    whoa yay yes yeah yep yup nope ok okay sure cool awesome great nice glad lol haha oh ah aw aww
    ooh omg hmm sorry please welcome amazing wonderful fantastic lovely sweet good luck care soon
    later see talk talking chat chatting catch hear long time day definitely totally absolutely
    exactly really true right fun happy agree agreed indeed incredible impressive beautiful super
    perfect worry worries problem wait lot mean means appreciate appreciated support kind word words
    keep going go let know thing bet sound sounds look looks hope enjoy blast safe proud excited
    thrilled love plan idea
    """.split()
)


class Token(NamedTuple):
    key: str  # lower-cased, stemmed unless it holds a digit
    kind: str  # one of CONTENT, or "stop", "talk", "cue", "negation", "addition"
    capital: bool  # written with a capital letter
    possessive: bool  # "Alice's"
    sentence: int = 0  # which sentence of the memory it is in


CONTENT = frozenset({"word", "name", "value", "state", "unit"})
# Kinds of the tokens that say what a memory is about (its values change, the subject stays).
SUBJECT = frozenset({"word", "name", "state", "unit"})
TERMINAL_KEYS = frozenset(stem(word) for word in TERMINAL_STATES)
SMALL_TALK_KEYS = frozenset(stem(word) for word in SMALL_TALK)


class Reading(NamedTuple):
    """What the rule reads of one memory, once."""

    speaker: str  # who said it, lower-cased, when the memory reports speech; else ""
    personal: bool  # what was said names the speaker or the one spoken to ("I", "my", "you")
    tokens: tuple[Token, ...]  # of the sentences that state something (no questions, no small talk)
    cues: frozenset[str]  # change cues present (words and phrases)
    negated: bool
    adds: bool  # says "also", "too"…
    subject: frozenset[str]  # keys of its words, names, states and units (not values)
    content: frozenset[str]  # keys of every content token
    identifiers: frozenset[str]  # issue or ticket ids among its first words ("orion-172", "#412")
    terminal: frozenset[str]  # keys of the TERMINAL_STATES it reaches (not negated)


def speech(text: str) -> tuple[str, str]:
    """Who ``text`` reports as speaking (lower-cased; "" when it reports no speech) and what
    they said: 'Alice said, "I moved to Berlin." and shared a photo' → ("alice", "I moved to
    Berlin."); "User: I moved to Berlin." → ("user", "I moved to Berlin.")."""
    quoted = _SPEECH.match(text)
    if quoted is not None:
        body = text[quoted.end() :]
        close = max(body.rfind(q) for q in _CLOSING_QUOTES)
        return quoted.group("who").lower(), body[:close] if close >= 0 else body
    role = _ROLE.match(text)
    if role is not None:
        return role.group("who").lower(), text[role.end() :]
    return "", text


def _small_talk(words: Sequence[Token]) -> bool:
    """Whether a sentence is a greeting, thanks, a farewell or a reaction: words of
    :data:`SMALL_TALK`, and else only function words and the names of those spoken to."""
    talk = False
    for t in words:
        if t.kind in {"word", "cue", "talk"} and t.key in SMALL_TALK_KEYS:
            talk = True
        elif t.kind not in {"stop", "negation"} and not (t.kind in {"word", "name"} and t.capital):
            return False
    return talk


def _vocative(initial: bool, after_talk: bool, before: str, after: str) -> bool:
    """Whether a capitalised word of reported speech names the one spoken to ("Hey *Tim*!",
    "Thanks, *Maria*.", "Sure thing, *Gina*!", "*John*, since we talked…"): set off by a greeting
    or a comma before and by a comma or the end of the sentence after."""
    if initial or after_talk:
        return any(c in after for c in ",!?.")
    return "," in before and any(c in after for c in "!?")


def read(text: str) -> Reading:
    """The tokens of ``text`` for the update rule, each with its kind (see :class:`UpdateJudge`)."""
    speaker, body = speech(text)
    matches = list(_TOKEN.finditer(body))
    # the text between each token and the one before it (the last: after the last token)
    gaps = [
        body[a.end() if a else 0 : b.start() if b else len(body)]
        for a, b in zip([None, *matches], [*matches, None], strict=True)
    ]
    sentences: list[list[Token]] = []
    questions: list[bool] = []
    cues: set[str] = set()
    personal = False
    previous = ""
    sentence: list[Token] = []
    for n, match in enumerate(matches):
        raw = match.group().replace("\u2019", "'")
        between, after = gaps[n], gaps[n + 1]
        initial = not sentence and not sentences
        if sentence and _SENTENCE_BREAK.search(between) and previous not in _ABBREVIATIONS:
            initial = True
            if _SENTENCE_END.search(between):
                sentences.append(sentence)
                questions.append("?" in between)
                sentence = []
        after_talk = bool(sentence) and sentence[-1].key in SMALL_TALK_KEYS
        lower = previous = raw.lower()
        personal = personal or lower in PERSONAL
        possessive = lower.endswith("'s") and len(lower) > 2
        if possessive:
            lower, raw = lower[:-2], raw[:-2]
        capital = raw[:1].isupper()
        if any(c.isdigit() for c in lower) or lower[:1] in "#$\u20ac\u00a3" or lower in NUMBER_WORDS:
            kind = "value"
        elif lower in UNITS and sentence and sentence[-1].kind == "value":
            kind = "unit"
        elif lower in NEGATIONS or lower.endswith("n't"):
            kind = "negation"
        elif lower in STATE_WORDS:
            kind = "state"
        elif lower in UPDATE_CUES and not (lower == "now" and sentence and sentence[-1].key in _AT_PRESENT):
            kind = "cue"
        elif lower in ADDITION_CUES:
            kind = "addition"
        elif (
            lower in STOPWORDS
            or lower in WEAK_WORDS
            or (speaker and capital and _vocative(initial, after_talk, between, after))
        ):
            kind = "stop"
        elif speaker and stem(lower) in SMALL_TALK_KEYS:
            kind = "talk"  # in a conversation, a word of greetings and reactions tells no subject
        elif any(c.isupper() for c in raw[1:]) or (capital and not initial):
            kind = "name"
        else:
            kind = "word"
        key = lower if kind == "value" else _SAME_STATE.get(lower) or stem(lower)
        sentence.append(Token(key, kind, capital, possessive, len(sentences)))
    if sentence:
        sentences.append(sentence)
        questions.append("?" in gaps[-1])
    tokens: list[Token] = []
    for words, question in zip(sentences, questions, strict=True):
        if question or _small_talk(words):
            continue  # a question or small talk states no fact
        tokens.extend(words)
        cues.update(t.key for t in words if t.kind == "cue")
    if tokens:
        cues.update(_PHRASE_CUES.findall(body.lower()))
    content = frozenset(t.key for t in tokens if t.kind in CONTENT)
    return Reading(
        speaker=speaker,
        personal=personal,
        tokens=tuple(tokens),
        cues=frozenset(cues),
        negated=any(t.kind == "negation" for t in tokens),
        adds=any(t.kind == "addition" for t in tokens),
        subject=frozenset(t.key for t in tokens if t.kind in SUBJECT),
        content=content,
        identifiers=frozenset(t.key for t in tokens[:3] if _IDENTIFIER.fullmatch(t.key)),
        terminal=frozenset(
            t.key
            for k, t in enumerate(tokens)
            if t.kind == "state"
            and t.key in TERMINAL_KEYS
            and all(before.kind != "negation" for before in tokens[max(k - 2, 0) : k])
        ),
    )

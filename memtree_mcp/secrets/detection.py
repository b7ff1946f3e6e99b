"""Secrets found in a memory's text and names, before anything is embedded, indexed or written.

An agent remembers what passes through a conversation, and conversations carry API keys, database
URLs with their passwords, private keys, tokens and the passwords people choose. Every field of a
memory that is stored (its content, role, tags and session) passes one door,
:func:`redact_fields`: ``service/writing.py``'s ``Writer.chunks`` calls it for remember over MCP and
the CLI and for every import source (the hooks' queue is drained through import), ``doctor`` and
``doctor --redact`` read and rewrite stored memories with it, and the hooks' quick path redacts a
turn's record with :func:`redact_record` before it is queued on disk. What MEMTREE_SECRETS says is
then done with them: ``redact`` (the default) replaces each by a marker naming its kind
(``[redacted: aws-access-key]``; in a URL only the password:
``postgres://app:[redacted: password]@db:5432/app``), ``refuse`` fails the call naming the field,
the kind and where it starts, ``keep`` stores them as they are.

Detection reads a normalised view of the text (:func:`normalised`: NFKC, format characters such as
zero-width spaces and soft hyphens dropped, ``\\uXXXX`` and ``\\xXX`` escapes decoded), so a key
written in full-width letters, broken by an invisible character or escaped is found; the marker
then covers the characters of the text itself.

Detection is Yelp's detect-secrets (its plugins for cloud keys, tokens, private keys, JWTs,
passwords in URLs and assignments), with each plugin's own patterns matched here so that a marker
covers the whole secret. Added here, for what it lacks: whole PEM private key blocks, Anthropic,
OpenAI, Google and Hugging Face keys, ``Bearer`` tokens, and the credentials people write by name
(``secrets/passwords.py``): any value assigned to a credential's name (``DB_PASSWORD=sunshine2024``,
``password: hunter2``, ``"password": "iloveyou"``, ``--password X``) that is not a placeholder or
a reference to one (``${DB_PASSWORD}``, ``os.environ["X"]``, ``<your-password>``, ``null``), the
password a command line gives a tool (``secrets/commands.py``'s table: ``mysql -pX``, ``zip -P X``,
``keytool -storepass X``), ``IDENTIFIED BY 'X'``, the places file formats keep one (``.pgpass``,
Kubernetes' env pairs), and a credential named in a sentence ("the wifi password is
bananas4breakfast"). Left out on purpose, for the false alarms they raise in ordinary engineering
text: detect-secrets' high-entropy string plugins (commit hashes, UUIDs, memory ids, base64 data)
and its public IP address plugin (an address is not a secret).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from memtree_mcp.secrets.credentials import MARKER as MARKER  # what redacted() puts in a secret's place
from memtree_mcp.secrets.credentials import bare_end, stand_in
from memtree_mcp.secrets.passwords import named_secrets

MODES = ("redact", "refuse", "keep")

NAME_CHARS: dict[str, int] = {"role": 32, "tags": 64, "session": 128}
"""How long a memory's role, each of its tags and its session may be (``service/inputs.py``'s
MAX_ROLE_CHARS, MAX_TAG_CHARS and MAX_SESSION_CHARS are these): a name redacted stays within them."""

# detect-secrets' plugins used, by module and class, with the kind a marker names.
PLUGINS: dict[tuple[str, str], str] = {
    ("aws", "AWSKeyDetector"): "aws-access-key",
    ("artifactory", "ArtifactoryDetector"): "artifactory-token",
    ("azure_storage_key", "AzureStorageKeyDetector"): "azure-storage-key",
    ("basic_auth", "BasicAuthDetector"): "password",
    ("cloudant", "CloudantDetector"): "cloudant-credential",
    ("discord", "DiscordBotTokenDetector"): "discord-token",
    ("github_token", "GitHubTokenDetector"): "github-token",
    ("gitlab_token", "GitLabTokenDetector"): "gitlab-token",
    ("ibm_cloud_iam", "IbmCloudIamDetector"): "ibm-cloud-key",
    ("ibm_cos_hmac", "IbmCosHmacDetector"): "ibm-cos-key",
    ("jwt", "JwtTokenDetector"): "jwt",
    ("mailchimp", "MailchimpDetector"): "mailchimp-key",
    ("openai", "OpenAIDetector"): "openai-key",
    ("private_key", "PrivateKeyDetector"): "private-key",
    ("pypi_token", "PypiTokenDetector"): "pypi-token",
    ("sendgrid", "SendGridDetector"): "sendgrid-key",
    ("slack", "SlackDetector"): "slack-token",
    ("softlayer", "SoftlayerDetector"): "softlayer-key",
    ("square_oauth", "SquareOAuthDetector"): "square-oauth-secret",
    ("stripe", "StripeDetector"): "stripe-key",
    ("telegram_token", "TelegramBotTokenDetector"): "telegram-token",
    ("twilio", "TwilioKeyDetector"): "twilio-key",
}

# What detect-secrets lacks, added here: (kind, pattern); a pattern's group ``value``, when it has
# one, is the secret, else the whole match.
_PEM_LINE = r"-----{} (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_PEM = re.compile(_PEM_LINE.format("BEGIN") + r".*?(?:" + _PEM_LINE.format("END") + r"|\Z)", re.DOTALL)
EXTRA: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{50,}")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("npm-token", re.compile(r"_authToken\s*=\s*(?P<value>[^\s\"']{16,})")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    (
        "aws-secret-key",
        re.compile(
            r"(?i:aws\w{0,20}?(?:secret|key)\w{0,20})[\"']?\s*[=:]\s*[\"']?"
            r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
    ),
    # A URL's password, with or without a user name (redis://:pw@cache:6379). A scheme is short:
    # unbounded, a long run of "a-a-a-..." was read from each of its words (seconds, not a blink).
    ("password", re.compile(r"\b[a-z][a-z0-9+.-]{0,31}://[^\s:/@]*:(?P<value>[^\s:/@]+)@")),
    ("bearer-token", re.compile(r"(?i:\bbearer)\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")),
)


@dataclass(frozen=True, slots=True)
class Found:
    """One secret in a text: its kind and where it is (``text[start:end]``)."""

    kind: str
    start: int
    end: int

    def where(self, text: str) -> str:
        """Where it starts, as a person counts: ``line 2, column 14``."""
        line = text.count("\n", 0, self.start) + 1
        column = self.start - (text.rfind("\n", 0, self.start) + 1) + 1
        return f"line {line}, column {column}"


# Five of detect-secrets' keyword patterns (IBM Cloud IAM, IBM COS, Cloudant, SoftLayer) join a
# name to its value by spaces, an operator or spaces again, written so that a run of spaces after
# "password" or "key" is tried every way it can be split: 3 s for 1,000 spaces, 29 s for 2,000.
# The same strings, matched without trying them twice:
_SPLIT_SPACES = "(?: *)(?:=|:|:=|=>| +|::)(?: *)"
_SPACES_ONCE = "(?: *(?:=|:=|=>|::|:) *| +)"


PATTERNS_FILE = "plugin_patterns.json"
"""detect-secrets' plugins' patterns as :func:`plugin_patterns` reads them, kept beside this module
with the version of detect-secrets they were read from (``python -m memtree_mcp.secrets.detection``
writes it; a test holds it to the installed plugins): importing the plugins loads ``requests`` and
takes a tenth of a second, which a hook's process would pay on every Stop."""


def plugin_patterns() -> list[tuple[str, list[tuple[str, int]]]]:
    """detect-secrets' plugins' patterns (source and flags), plugin by plugin in PLUGINS' order,
    each with the kind it finds and the spaces before a value read once (_SPACES_ONCE): read from
    the installed plugins."""
    import importlib

    import detect_secrets.plugins  # the package whose modules PLUGINS names

    found = []
    for (module, name), kind in PLUGINS.items():
        plugin = getattr(importlib.import_module(f"{detect_secrets.plugins.__name__}.{module}"), name)()
        patterns = [
            (pattern.pattern.replace(_SPLIT_SPACES, _SPACES_ONCE), int(pattern.flags))
            for pattern in getattr(plugin, "denylist", ())
        ]
        found.append((kind, patterns))
    return found


def installed_version() -> str | None:
    """The version of the installed detect-secrets, read from its ``__version__.py`` without
    importing it (None when it cannot be read)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("detect_secrets")
    if spec is None or spec.origin is None:
        return None
    try:
        text = (Path(spec.origin).parent / "__version__.py").read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r"VERSION\s*=\s*['\"]([^'\"]+)['\"]", text)
    return found.group(1) if found else None


def _kept_patterns() -> list[tuple[str, list[tuple[str, int]]]] | None:
    """The patterns kept in PATTERNS_FILE, when they were read from the installed detect-secrets."""
    import json
    from importlib.resources import files

    try:
        kept = json.loads(files(__package__).joinpath(PATTERNS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("detect_secrets") != installed_version():
        return None
    return [
        (str(kind), [(str(source), int(flags)) for source, flags in patterns])
        for kind, patterns in kept["patterns"]
    ]


@cache
def _detectors() -> list[tuple[str, tuple[re.Pattern[str], ...]]]:
    """detect-secrets' plugins' patterns, by the kind each finds, compiled once: the kept ones
    (PATTERNS_FILE) when they match the installed detect-secrets, else read from its plugins."""
    patterns = _kept_patterns() or plugin_patterns()
    return [(kind, tuple(re.compile(source, flags) for source, flags in found)) for kind, found in patterns]


def write_patterns() -> str:
    """Write PATTERNS_FILE beside this module from the installed plugins; returns its path."""
    import json
    from pathlib import Path

    path = Path(__file__).with_name(PATTERNS_FILE)
    kept = {"detect_secrets": installed_version(), "patterns": plugin_patterns()}
    path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return str(path)


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _space_after(text: str, start: int) -> int:
    found = re.compile(r"\s").search(text, start)
    return found.start() if found else len(text)


def _token_end(text: str, end: int) -> int:
    """Where the token a match ends in really ends: a pattern of a fixed length (Stripe's 24
    characters) must not leave the rest of a longer key behind."""
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return end


def _matches(text: str) -> Iterator[Found]:
    for match in _PEM.finditer(text):
        yield Found("private-key", match.start(), match.end())
    for kind, patterns in _detectors():
        for pattern in patterns:
            for match in pattern.finditer(text):
                # A pattern's group is the secret when it is one (a URL's password, the key after
                # its name); a short group is a prefix (GitHub's "ghp"): then the whole match.
                value = match.group(pattern.groups) if pattern.groups else None
                group = pattern.groups if value and (kind == "password" or len(value) >= 6) else 0
                if match.end(group) > match.start(group):
                    start, end = match.start(group), match.end(group)
                    if kind == "password" and stand_in(text[start:end]):
                        continue  # a URL's template: postgres://USER:PASSWORD@HOST/DB
                    if group == 0 and kind != "private-key":  # a token: no space in it, none cut short
                        end = _token_end(text, min(end, _space_after(text, start)))
                    yield Found(kind, start, end)
    for kind, pattern in EXTRA:
        for match in pattern.finditer(text):
            if "value" not in pattern.groupindex:
                yield Found(kind, match.start(), _token_end(text, match.end()))
                continue
            start, end = match.start("value"), match.start("value") + len(match.group("value").rstrip("."))
            if kind != "password":
                yield Found(kind, start, end)
                continue
            # A URL's password: not a placeholder (postgres://app:${PGPASS}@db).
            end = bare_end(text, start, end)
            if end > start and not stand_in(text[start:end]):
                yield Found(kind, start, end)
    for kind, start, end in named_secrets(text):
        yield Found(kind, start, end)


# -- the normalised view detection reads

_SPECIAL = re.compile(r"[^\x00-\x7f]|\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|x[0-9A-Fa-f]{2})")


@dataclass(frozen=True, slots=True)
class View:
    """A text as detection reads it (:func:`normalised`), and the way back to the text's places."""

    text: str
    # Pieces of the view that changed or stand for other characters, in order: (start in the
    # view, length in the view, start in the text, length in the text).
    pieces: tuple[tuple[int, int, int, int], ...] = ()
    starts: tuple[int, ...] = ()  # each piece's start in the view, to search

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The place in the text of the view's ``text[start:end]``."""
        if not self.pieces:
            return start, end
        return self._at(start, False), self._at(end - 1, True)

    def _at(self, position: int, after: bool) -> int:
        # The last piece that starts at or before ``position``: the position is in it, or in the
        # run of unchanged characters after it.
        at = bisect_right(self.starts, position) - 1
        if at < 0:
            return position + after
        view_start, view_length, text_start, text_length = self.pieces[at]
        if position >= view_start + view_length:
            return text_start + text_length + (position - view_start - view_length) + after
        return text_start + text_length if after else text_start


def normalised(text: str) -> View:
    """``text`` as detection reads it: NFKC (full-width letters and digits, ligatures and non-
    breaking spaces as their plain forms), without format characters (zero-width space, joiners,
    word joiner, byte-order mark, soft hyphen: Unicode's Cf) and with ``\\uXXXX``,
    ``\\UXXXXXXXX`` and ``\\xXX`` escapes decoded."""
    if text.isascii() and "\\" not in text:
        return View(text)
    parts: list[str] = []
    pieces: list[tuple[int, int, int, int]] = []
    at = length = 0
    for match in _SPECIAL.finditer(text):
        if match.start() > at:
            parts.append(text[at : match.start()])
            length += match.start() - at
        raw = match.group()
        char = raw if len(raw) == 1 else _decoded(raw)
        if len(char) != 1:
            shown = raw  # an escape of no character (half of a surrogate pair): left as written
        elif unicodedata.category(char) == "Cf":
            shown = ""
        else:
            shown = unicodedata.normalize("NFKC", char)
        if shown == raw:  # unchanged: part of the run of plain characters
            at = match.end()
            parts.append(raw)
            length += len(raw)
            continue
        pieces.append((length, len(shown), match.start(), len(raw)))
        parts.append(shown)
        length += len(shown)
        at = match.end()
    parts.append(text[at:])
    return View("".join(parts), tuple(pieces), tuple(piece[0] for piece in pieces))


def _decoded(escape: str) -> str:
    code = int(escape[2:], 16)
    return escape if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)


def find_secrets(text: str) -> list[Found]:
    """The secrets in ``text``, in order, none overlapping (of two that overlap, their union),
    found in its normalised view (:func:`normalised`) and placed in ``text`` itself."""
    view = normalised(text)
    placed = [
        Found(secret.kind, *view.span(secret.start, secret.end))
        for secret in _matches(view.text)
        if secret.end > secret.start
    ]
    found = sorted(placed, key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[Found] = []
    for secret in found:
        if kept and secret.start < kept[-1].end:
            if secret.end > kept[-1].end:
                kept[-1] = Found(kept[-1].kind, kept[-1].start, secret.end)
            continue
        kept.append(secret)
    return kept


def redacted(text: str, found: list[Found] | None = None) -> str:
    """``text`` with each secret replaced by ``[redacted: <kind>]``."""
    found = find_secrets(text) if found is None else found
    parts, at = [], 0
    for secret in found:
        parts += [text[at : secret.start], f"[redacted: {secret.kind}]"]
        at = secret.end
    return "".join([*parts, text[at:]])


def quoted(value: object, limit: int = 40) -> str:
    """``value`` as an error message may show it: its ``repr``, cut at ``limit`` characters, with
    each secret found in it replaced by its marker, so that a message never repeats a secret given
    in a bad argument (``timestamp 'password=[redacted: password]' is not ISO 8601``)."""
    text = value if isinstance(value, str) else repr(value)
    found = find_secrets(text)
    if found:
        text = redacted(text, found)
    return repr(text[:limit]) if isinstance(value, str) else text[:limit]


# -- the door every stored field passes


STORED_FIELDS = ("content", "role", "tags", "session")
"""The fields of a memory that hold a caller's text and are stored: what :func:`redact_fields` reads."""


@dataclass(frozen=True, slots=True)
class Held:
    """A secret in one field of a memory: the field, its kind and where it starts
    (``line 2, column 5`` in the content, ``tag 2`` among the tags, else the field's name)."""

    field: str
    kind: str
    where: str


def redact_fields(
    fields: Mapping[str, object], mode: str, limits: Mapping[str, int] = NAME_CHARS
) -> tuple[dict[str, object], list[Held]]:
    """The stored fields of ``fields`` (:data:`STORED_FIELDS`: content, role, tags, session) as
    MEMTREE_SECRETS ``mode`` wants them stored, and the secrets found in them.

    ``redact``: each secret replaced by its marker; a name (role, tag, session) that its markers
    would make longer than ``limits`` allows becomes its markers alone, and tags that become the
    same are kept once. A session id keeps the rest of its text, so the turns of one session still
    group together; it gets no digest of its secret, which would let anyone holding a copy of the
    store test guesses of a password a person chose. ``refuse``: the fields as they are, with what
    was found (the caller refuses). ``keep``: the fields as they are, nothing looked for. A field
    that is not text (or, for tags, a list of text) is left for the input checks to refuse.
    """
    out = {field: fields[field] for field in STORED_FIELDS if field in fields}
    if mode == "keep":
        return out, []
    held: list[Held] = []
    content = out.get("content")
    if isinstance(content, str):
        found = find_secrets(content)
        held += [Held("content", secret.kind, secret.where(content)) for secret in found]
        if found and mode == "redact":
            out["content"] = redacted(content, found)
    for field in ("role", "session"):
        value = out.get(field)
        if isinstance(value, str):
            found = find_secrets(value)
            held += [Held(field, secret.kind, f"the {field}") for secret in found]
            if found and mode == "redact":
                out[field] = _fitted(value, found, limits.get(field))
    tags = out.get("tags")
    if isinstance(tags, Sequence) and not isinstance(tags, str) and all(isinstance(t, str) for t in tags):
        kept: list[str] = []
        for number, tag in enumerate(tags, start=1):
            found = find_secrets(tag)
            held += [Held("tags", secret.kind, f"tag {number}") for secret in found]
            tag = _fitted(tag, found, limits.get("tags")) if found and mode == "redact" else tag
            if tag not in kept:
                kept.append(tag)
        if mode == "redact" and any(h.field == "tags" for h in held):
            out["tags"] = type(tags)(kept) if isinstance(tags, tuple | list) else kept
    return out, held


def _fitted(value: str, found: list[Found], limit: int | None) -> str:
    """``value`` redacted, within ``limit`` characters: its markers alone when the redacted text
    is too long (a marker is never cut: it would no longer read as one)."""
    out = redacted(value, found)
    if limit is None or len(out) <= limit:
        return out
    markers = " ".join(dict.fromkeys(f"[redacted: {secret.kind}]" for secret in found))
    return markers if len(markers) <= limit else f"[redacted: {found[0].kind}]"


def redact_record(record: Mapping[str, Any], mode: str) -> dict[str, Any] | None:
    """``record`` (a memory as import reads it) with its stored fields passed through
    :func:`redact_fields` as MEMTREE_SECRETS ``mode`` says; None when ``mode`` is ``refuse`` and
    one holds a secret. Cheap to import: what the hooks' quick path calls before queueing a turn."""
    fields, held = redact_fields(record, mode)
    if held and mode == "refuse":
        return None
    return {**record, **fields}


if __name__ == "__main__":  # python -m memtree_mcp.secrets.detection: keep the plugins' patterns
    print(f"wrote {write_patterns()}")

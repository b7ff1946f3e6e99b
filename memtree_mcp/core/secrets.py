"""Secrets found in a memory's text, before it is embedded, indexed or written.

An agent remembers what passes through a conversation, and conversations carry API keys, database
URLs with their passwords, private keys and tokens. Every memory passes one door
(``service/writing.py``'s ``Writer.chunks``: remember over MCP and the CLI, the hooks' turns,
every import source) and ``doctor --redact`` passes the stored ones through the same function,
:func:`find_secrets`; the hooks redact a turn before it is queued on disk. What MEMTREE_SECRETS
says is then done with them: ``redact`` (the default) replaces each by a marker naming its kind
(``[redacted: aws-access-key]``; in a URL only the password:
``postgres://app:[redacted: password]@db:5432/app``), ``refuse`` fails the call naming the kind and
where it starts, ``keep`` stores them as they are.

Detection is Yelp's detect-secrets (its plugins for cloud keys, tokens, private keys, JWTs,
passwords in URLs and assignments), with each plugin's own patterns matched here so that a marker
covers the whole secret. Added here, for what it lacks: whole PEM private key blocks, a password,
token or key named in a sentence ("the password is Tr0ub4dor&3"), ``Bearer`` tokens, and the keys
of a few services it does not know (Anthropic and OpenAI ``sk-`` keys, Google API keys, Hugging
Face tokens). Left out on purpose, for the false alarms they raise in ordinary engineering text:
detect-secrets' high-entropy string plugins (commit hashes, UUIDs, memory ids, base64 data) and its
public IP address plugin (an address is not a secret).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

MODES = ("redact", "refuse", "keep")

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

# What detect-secrets lacks, added here: (kind, pattern, the group that is the secret).
_PEM_LINE = r"-----{} (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_PEM = re.compile(_PEM_LINE.format("BEGIN") + r".*?(?:" + _PEM_LINE.format("END") + r"|\Z)", re.DOTALL)
_WORD = (
    r"(?i:(?<![A-Za-z])(?P<word>password|passwd|passphrase|pwd|secret|client[_ -]?secret|api[_ -]?key|apikey"
    r"|access[_ -]?key|secret[_ -]?key|private[_ -]?key|auth[_ -]?token|access[_ -]?token|token))"
)
_MIXED = r"(?=\S*[0-9])(?=\S*[a-z])(?=\S*[A-Z])"  # digits, small and capital letters
_VALUE = r"[\"'`]?(?P<value>[^\s\"'`,;()<>\[\]{}]{8,})"
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
    # A URL's password, with or without a user name (redis://:pw@cache:6379).
    ("password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]*:(?P<value>[^\s:/@]+)@")),
    ("bearer-token", re.compile(r"(?i:\bbearer)\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")),
    # "the password is Tr0ub4dor&3", "api_key: 9f8e…", DB_PASSWORD="…", "password": "…", and a
    # credential right after its name ("log in with password EWE?yCp8h").
    ("named", re.compile(_WORD + r"[\"']?(?:\s+(?:is|was|=|:|to)\s*|\s*[=:]\s*)" + _VALUE)),
    ("named-bare", re.compile(_WORD + r"\s+(?P<value>[^\s\"'`,;()<>\[\]{}]{8,})")),
)
_NAMED_KINDS = (
    ("pass", "password"),
    ("pwd", "password"),
    ("secret", "secret"),
    ("token", "token"),
    ("key", "api-key"),
)
# A value named in a sentence must look like a credential, not a word, a path or a placeholder.
_PLACEHOLDER = re.compile(r"^(?:\$\{?|%|<|\{\{|x{4,}|\*{3,}|\.{3}|your|my|the|env|none|null|redacted)", re.I)


MARKER = re.compile(r"\[redacted: [a-z0-9-]+\]")
"""What :func:`redacted` puts in a secret's place (labels leave its words out)."""


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


@cache
def _detectors() -> list[tuple[str, Any]]:
    """detect-secrets' plugins, loaded once (importing them takes a fifth of a second)."""
    import importlib

    import detect_secrets.plugins  # the package whose modules PLUGINS names

    found = []
    for (module, name), kind in PLUGINS.items():
        plugin = getattr(importlib.import_module(f"{detect_secrets.plugins.__name__}.{module}"), name)()
        found.append((kind, plugin))
    return found


_IDENTIFIER = re.compile(r"v?\d+(?:\.\d+)+[a-z0-9.-]*|[a-z]+(?:[-_.][a-z0-9]+)+|[a-z]+\d{1,4}")
_STRONG = re.compile(_MIXED + r"\S{16,}")
# A credential named without "is" or "=": letters and digits, and both cases or a sign.
_STRONGISH = re.compile(r"(?=\S*[0-9])(?=\S*[A-Za-z])(?:(?=\S*[a-z])(?=\S*[A-Z])|(?=\S*[^\w\s-]))\S{8,}")


def _credential_like(value: str) -> bool:
    """Whether a value named as a password, secret, token or key looks like one: letters with
    digits or signs; not a placeholder, a path, a URL, a version or a name such as billing-2024."""
    if _PLACEHOLDER.match(value) or "://" in value:
        return False
    if "/" in value and not _STRONG.fullmatch(value):
        return False  # a path (secret/data/billing), unless it is a long key of mixed case
    if _IDENTIFIER.fullmatch(value) and not _STRONG.fullmatch(value):
        return False
    has_letter = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    has_sign = any(not c.isalnum() and c not in "-_." for c in value)
    return has_letter and (has_digit or has_sign)


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
    for kind, plugin in _detectors():
        for pattern in getattr(plugin, "denylist", ()):
            for match in pattern.finditer(text):
                # A pattern's group is the secret when it is one (a URL's password, the key after
                # its name); a short group is a prefix (GitHub's "ghp"): then the whole match.
                value = match.group(pattern.groups) if pattern.groups else None
                group = pattern.groups if value and (kind == "password" or len(value) >= 6) else 0
                if match.end(group) > match.start(group):
                    start, end = match.start(group), match.end(group)
                    if group == 0 and kind != "private-key":  # a token: no space in it, none cut short
                        end = _token_end(text, min(end, _space_after(text, start)))
                    yield Found(kind, start, end)
    for kind, pattern in EXTRA:
        for match in pattern.finditer(text):
            if "value" not in pattern.groupindex:
                yield Found(kind, match.start(), _token_end(text, match.end()))
                continue
            value, called = match.group("value").rstrip("."), kind
            if kind.startswith("named"):
                if not _credential_like(value) or (kind == "named-bare" and not _STRONGISH.fullmatch(value)):
                    continue
                word = match.group("word").lower()
                called = next(named for part, named in _NAMED_KINDS if part in word)
            yield Found(called, match.start("value"), match.start("value") + len(value))


def find_secrets(text: str) -> list[Found]:
    """The secrets in ``text``, in order, none overlapping (of two that overlap, the longer)."""
    found = sorted(_matches(text), key=lambda f: (f.start, -(f.end - f.start)))
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

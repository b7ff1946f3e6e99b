"""Passwords a conversation gives apart from the word: a user / password pair, and an answer.

People give a password in a chat or a note without "password is" next to it: a user and a password
after the machine, service or login they open ("mongo on the qa box: root / X", "The old Jenkins
box still uses jenkins / X", "ssh into the pi with pi / X", "Default credentials for the dev stack
are `dev` / `X`"), and an answer on the line after a question about one ("what's the password for
the lab router?" / "it's X", "Jess: X, capital F"). The pair is read where a word of a login,
credentials, ssh or a machine comes before it and a verb or a colon joins them, the answer where
the line before asks for a password; ``secrets/credentials.py`` judges each value, and a plain word
is taken where the user is an account's name (admin, root, pi, a name with a digit or a dot, one
the sentence names before) or the answer says how it is written ("capital F", "all lowercase").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_mcp.secrets.credentials import (
    ADDRESS,
    SIGN_IN_METHODS,
    TECHNICAL,
    VERSION,
    credential_like,
    ends_clause,
    passphrase,
    plain_password,
    sentence_end,
    stand_in,
)

# What a pair opens: a login or credentials (then any user), or a machine or a service's place
# (then the user must be an account's name).
_STRONG = (
    r"log(?:ged|ging|s)?[ -]?(?:in|on)|login|logon|sign(?:ed|ing)?[ -]?in|creds?|credentials|account|user"
    r"|ssh|rdp|vnc|sftp|ftp|telnet|password|passwd|pw|wi-?fi|wlan"
)
_MACHINE = (
    r"box|host|server|vm|machine|bastion|router|nas|printer|pi|switch|firewall|camera|console|ui|panel"
    r"|portal|dashboard|appliance|instance|db|database"
)
_PAIR = re.compile(
    r"(?<![\w:/.@-])(?:(?P<strong>(?i:" + _STRONG + r"))|(?i:" + _MACHINE + r"))(?![\w-])"
    r"(?:\s+[^\s.,;:!?\"'/]+(?:\.[^\s.,;:!?\"'/]+)*){0,8}?"
    r"(?:\s+(?i:is|are|was|were|with|as|using|uses|use|has|have)\s+|\s*(?::|=|->|→|=>|--|—|–)\s+)"
    r"(?P<uq>[`'\"]?)(?P<user>[A-Za-z][\w.@+\\-]{0,63})(?P=uq)[ \t]*/[ \t]*"
    r"(?P<vq>[`'\"]?)(?P<value>[^\s\"'`,;()<>\[\]{}]+)(?P=vq)"
)
# The names accounts are given by default or by habit, which a pair's plain password may follow.
_ACCOUNTS = frozenset(
    """admin administrator root pi dev developer test tester guest user demo ubuntu ec2-user centos
    debian vagrant jenkins postgres mysql sa sys system oracle scott elastic kibana grafana neo4j
    rabbit rabbitmq redis mongo mongodb ftp ftpuser backup deploy deployer git www www-data operator
    support service svc apc cisco ubnt manager tomcat qa staging build ci nagios zabbix sonar nexus
    minio airflow superset keycloak pihole plex kiosk vpnuser breakglass""".split()
)
_MEASURE = re.compile(r"\d+(?:\.\d+)?[A-Za-z%]{1,3}")  # 64GB, 5GHz
_AT_HOST = re.compile(r"@[\w-]+[.:]")
_SHAPES = str.maketrans("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "a" * 52 + "9" * 10)
_KEEPERS = frozenset("1password bitwarden lastpass keepass keepassxc keeper dashlane vault keychain".split())


# A line that names what a pair opens, then gives only the pair: "Confluence admin: confadmin /
# Horizon-22", "Router: admin / X" (then the password must look like one).
_LABELLED = re.compile(
    r"(?m)^[ \t]*(?:[-*•][ \t]*)?[A-Z][\w.-]{0,30}(?:[ \t]+[\w.-]{1,30}){0,3}[ \t]*:[ \t]+"
    r"(?P<uq>[`'\"]?)(?P<user>[A-Za-z][\w.@+\\-]{0,63})(?P=uq)[ \t]*/[ \t]*"
    r"(?P<vq>[`'\"]?)(?P<value>[^\s\"'`,;()<>\[\]{}]+)(?P=vq)[ \t]*(?=$|[(,;—–]|\.(?:\s|$))"
)


# A pair given to use, or a pair whose user is an account every install has, wherever it is said:
# "just use admin / Waffle2023 on the test box", "mongo root / KoalaBear1 on the analytics box".
_GIVEN_PAIR = re.compile(
    r"(?<![\w/.@:-])(?:(?i:use|try|using|with)[ \t]+(?P<uq>[`'\"]?)(?P<user>[A-Za-z][\w.@+\\-]{0,63})(?P=uq)"
    r"|(?P<known>(?i:admin|administrator|root|sa|postgres|mysql|oracle|elastic|ubuntu|vagrant|jenkins|neo4j"
    r"|rabbitmq|grafana|kibana|tomcat|ec2-user|scott)))"
    r"[ \t]*/[ \t]*(?P<vq>[`'\"]?)(?P<value>[^\s\"'`,;()<>\[\]{}]+)(?P=vq)"
)


def pair_passwords(text: str) -> Iterator[tuple[int, int]]:
    """The places (start, end) of the passwords of user / password pairs after what they open."""
    if "/" not in text:
        return
    for match in _GIVEN_PAIR.finditer(text):
        start, end = match.start("value"), match.end("value")
        if not match.group("vq"):
            end = sentence_end(text, start, end)
        user, value = match.group("user") or match.group("known"), text[start:end]
        at = match.start("user") if match.group("user") else match.start("known")
        if not _pair_value(user, value) or not account_name(text, at, user, value) or _AT_HOST.search(value):
            continue  # (scott/X@db01:1521 is a connection string's: secrets/calls.py reads it)
        if credential_like(value, "password", quoted=True) or passphrase(value):
            yield start, end
    for match in _LABELLED.finditer(text):
        start, end = match.start("value"), match.end("value")
        if not match.group("vq"):
            end = sentence_end(text, start, end)
        user, value = match.group("user"), text[start:end]
        if not _pair_value(user, value) or not (
            user.islower() or account_name(text, match.start("user"), user, value)
        ):
            continue
        if credential_like(value, "password", quoted=True) or passphrase(value):
            yield start, end
    for match in _PAIR.finditer(text):
        start, end = match.start("value"), match.end("value")
        if not match.group("vq"):
            end = sentence_end(text, start, end)
        user, value = match.group("user"), text[start:end]
        if not _pair_value(user, value):
            continue
        account = account_name(text, match.start("user"), user, value)
        if credential_like(value, "password", quoted=True):
            found = account or match.group("strong") is not None
        else:
            found = account and (passphrase(value, capital=False) or plain_password(value))
        if found:
            yield start, end


def _pair_value(user: str, value: str) -> bool:
    """Whether ``user`` / ``value`` may be a user and a password: not words of a choice (LDAP /
    SSO, key / agent), a place, a version, a measure or two things of one shape (java8 / java11)."""
    words = {user.lower(), value.lower()}
    if words & SIGN_IN_METHODS or words & _KEEPERS or stand_in(user) or ADDRESS.match(value):
        return False
    if stand_in(value, quoted=True):  # (no YAML here: !QAZxsw2 is a password)
        return False
    if "/" in value or VERSION.match(value) or _MEASURE.fullmatch(value) or TECHNICAL.fullmatch(value):
        return False
    shape = _shape(user)  # (dev / devpass is a pair; enable_x / disable_x and java8 / java11 are not)
    return not (shape == _shape(value) and ("9" in shape or "-" in shape or "_" in shape))


def _shape(word: str) -> str:
    """A word's shape: letters as a, digits as 9, a run of one as one (us-east-1: a-a-9)."""
    return re.sub(r"(.)\1+", r"\1", word.translate(_SHAPES))


def account_name(text: str, at: int, user: str, value: str) -> bool:
    """Whether ``user`` (at ``at``) reads as an account's name: one given by default or habit, one
    with a digit, a dot, an underscore or an @, the start of its password (dev / devpass), or a
    word the text names before it (the pi ... pi / X)."""
    low = user.lower()
    if low in _ACCOUNTS or re.search(r"[\d._@\\-]", user) or value.lower().startswith(low):
        return True
    return (
        re.search(r"(?i)(?<![\w-])" + re.escape(user) + r"(?![\w-])", text[max(0, at - 200) : at]) is not None
    )


# -- an answer on the line after a question about a password

_QUESTION = re.compile(
    r"(?m)^[^\n]{0,160}?(?<![A-Za-z])(?P<word>(?i:password|passwd|passcode|passphrase|pw|pwd|pass|pin"
    r"|login|creds?|credentials|code|wi-?fi|wlan))(?![A-Za-z])[^\n?]{0,120}\?[ \t]*\n"
)
_ANSWER = re.compile(
    r"[ \t]*(?:\[[^\]\n]{1,24}\][ \t]*)?(?:<[^>\n]{1,32}>[ \t]*|>+[ \t]*|[A-Za-z][\w .-]{0,30}?:[ \t]+)?"
    r"(?P<lead>(?i:(?:i\s+think\s+|pretty\s+sure\s+|probably\s+|maybe\s+|perhaps\s+)?(?:it['’]?s|its|it\s+is"
    r"|try|use|should\s+be|it\s+should\s+be|could\s+be)\s+|maybe\s+|perhaps\s+|probably\s+))?"
    r"(?:(?P<user>[A-Za-z][\w.@+\\-]{0,63})[ \t]*/[ \t]*)?"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|`(?P<bq>[^`\n]+)`|(?P<bare>[^\s\"'`,;()<>\[\]{}]+))"
)
_OPENS = re.compile(r"(?i)wi-?fi|wlan|door|gate|alarm|garage|keypad|lock|safe")
# What says how a one-word answer is written: "Ferrari, capital F", "X, all lowercase".
_HOW_WRITTEN = re.compile(
    r"[ \t]*[,.;:!–—-]*[ \t]*(?i:(?:all\s+)?(?:lower|upper|small)[\s-]?case|all\s+(?:lower|caps|small)"
    r"|with\s+(?:the|an?)\s+(?:exclamation|question|dollar|hash|at|dot|full\s+stop|period|comma|dash|hyphen"
    r"|underscore|space|zero|capital|number)\b"
    r"|(?:with\s+(?:a\s+)?)?capital\s+\w\b|(?:in\s+)?caps\b|no\s+(?:spaces?|caps|capitals)|case[\s-]sensitive"
    r"|one\s+word)"
)
# Words that answer a question without giving a password ("no idea", "Sorry", "same as last week").
_NO_ANSWER = frozenset(
    """no nope nah yes yeah yep yup idk dunno sorry same ask check hmm sure okay why what who where when
    later thanks maybe not none nothing never somewhere here there see ping slack email please hang hold
    lemme wait haha good fine done sent unknown unsure on in at the a an it its this that my your our
    their his her also just still probably checking""".split()
)


def answered_passwords(text: str) -> Iterator[tuple[int, int]]:
    """The places (start, end) of the passwords given on the line after a question about one: a
    value that looks like one, after "it's", "try" or a user and a slash a plain word that ends
    its clause too, and alone a plain word where the answer says how it is written."""
    if "?" not in text or "\n" not in text:
        return
    for question in _QUESTION.finditer(text):
        answer = _ANSWER.match(text, question.end())
        if answer is None:
            continue
        group = next(g for g in ("dq", "sq", "bq", "bare") if answer.group(g) is not None)
        start, end = answer.span(group)
        if group == "bare":
            end = sentence_end(text, start, end)
        value = text[start:end]
        lead, user = answer.group("lead"), answer.group("user")
        word = question.group("word").lower()
        if word in ("login", "cred", "creds", "credentials") and not user:
            continue  # the answer to a login's question may be the user's name
        if word == "code" and not _OPENS.search(question.group()):
            continue  # an error's code, a promo code: only the wifi's, a door's, an alarm's
        if not _answered(value) or (user and not _pair_value(user, value)):
            continue
        shaped = credential_like(value, "password") or passphrase(value, capital=False)
        if lead or user:
            found = (shaped or plain_password(value)) and (group != "bare" or ends_clause(text, end))
        elif shaped:
            found = group != "bare" or ends_clause(text, end) or text.startswith(" (", end)
            found = found or _HOW_WRITTEN.match(text, end) is not None
        else:
            found = value.isalpha() and _HOW_WRITTEN.match(text, end) is not None
        if found:
            yield start, end


def _answered(value: str) -> bool:
    """Whether an answer's first word may be a password: no word of an answer that gives none, no
    stand-in, address, way of signing in, password manager or technical name."""
    low = value.lower()
    if len(value) < 4 or low in _NO_ANSWER or low in SIGN_IN_METHODS or low in _KEEPERS:
        return False
    return not (stand_in(value) or ADDRESS.match(value) or TECHNICAL.fullmatch(value) or VERSION.match(value))

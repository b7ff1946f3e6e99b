"""Credentials people write by name, which no pattern of a key's shape can find: passwords above all.

A password a person chose looks like a word or a name (sunshine2024, hunter2, Fluffy-Cat-9), so it
is found by what is around it: an assignment to a credential's name (``DB_PASSWORD=X``, ``password:
X``, ``--password X``, ``psk``, a ``pin`` of digits, Passwort, contraseña), where any value counts
that is no stand-in (``secrets/credentials.py``: ``${DB_PASSWORD}``, ``os.environ["X"]``, ``null``;
but single-quoted ``'$unsh1ne'`` is the text itself); a tool's command line (``secrets/commands.py``'s
table: ``zip -P X``, ``keytool -storepass X``, ``echo 'user:X' | chpasswd``, any tool's stdin
flag), a flag named for one (``redis-server --requirepass X``, ``-rpcpassword=X``), code that
names one, then gives it (``define('DB_PASSWORD', 'X')``, ``ENV['DB_PASSWORD'] = 'X'``,
``setPassword("X")``, ``auth=('admin', 'X')``), ``IDENTIFIED BY 'X'``, an expect script's answer to
a password prompt; the places file formats keep one (``secrets/file_formats.py``: a ``.pgpass`` line
and other files the text names, XML named by its name attribute, Kubernetes' ``name:``/``value:``
pair, ``requirepass X``); and a credential named in a sentence or a chat (``secrets/sentences.py``:
"the wifi password is still X", "the sftp login is uploads / X", "logging in as qa with X", "la
contraseña del wifi es X").
``secrets/detection.py`` adds these to what detect-secrets finds (:func:`named_secrets`), on the same
normalised view of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_mcp.secrets.calls import call_passwords, dsn_passwords, typed_passwords
from memtree_mcp.secrets.commands import command_passwords
from memtree_mcp.secrets.credentials import (
    FOREIGN,
    KEYS,
    NAME,
    NAMED,
    PASSWORD_WORD,
    PIN,
    STRONGISH,
    assigned_value,
    bare_end,
    credential_like,
    kind_of,
    reads_as_text,
    rest_of_line,
    stand_in,
)
from memtree_mcp.secrets.file_formats import format_passwords
from memtree_mcp.secrets.sentences import said_passwords
from memtree_mcp.secrets.sql import sql_passwords

_QUOTED = r"(?P<q>[\"'])(?P<value>[^\"'\n]{1,200})(?P=q)"

# A password written in a form that is no tool's command line (those are secrets/commands.py's table):
# SQL's IDENTIFIED BY 'X' and PASSWORD('X'), PowerShell's secure string, .netrc, and an XML element
# named for a credential (Maven's settings.xml: <password>X</password>); (kind, pattern) with the
# secret as the group ``value``.
COMMANDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("password", re.compile(r"(?i:\bidentified\s+(?:with\s+\w+\s+)?by|\bpassword\s*\()\s*" + _QUOTED)),
    ("password", re.compile(r"(?i:convertto-securestring)\s+(?:-string\s+)?" + _QUOTED)),
    ("password", re.compile(r"(?m:^|\s)login\s+\S+\s+password\s+(?P<value>\S+)")),  # .netrc
    # What an expect script (or pexpect) sends when a password is asked for.
    (
        "password",
        re.compile(
            r"\bexpect\W{1,3}[^\n]{0,40}?(?:assword|assphrase)[^\n]{0,40}?\n?[^\n]{0,40}?\bsend(?:line)?\W{1,3}"
            r"(?P<q>[\"'])(?P<value>[^\"'\\\n]{1,200})(?:\\[rn])?(?P=q)"
        ),
    ),
    (
        "password",
        re.compile(
            r"<[\w:.-]*(?i:password|passwd|passphrase|secret|token|api[_-]?key)>(?P<value>[^<\n]{1,200})</"
        ),
    ),
    ("password", re.compile(r"<(?i:pass|pwd)>(?P<value>[^<\n]{1,200})</(?i:pass|pwd)>")),  # <pass>X</pass>
)

# An assignment: NAME=value, NAME: value, "name": "value", name := value, --name value, name 'value'.
_ASSIGNED = re.compile(
    r"(?:(?<![\w-])(?P<dashes>--?))?"  # a flag's dashes, not a word's hyphen (not-secret lines)
    + NAME
    + r"(?:[\"'\]]?[ \t]*(?P<sep>:=|==|=>|=|:(?!:))[ \t]*|(?P<space>[ \t]+))"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`|(?P<bare>[^\s\"'`]+))"
)
# A flag named for a credential takes the next word, or the word after "=": --password X,
# --admin-password X, --requirepass X (a server's), -rpcpassword=X, -pw X, --client-secret X,
# --masterauth X, and "--requirepass", "X" in a list of arguments (a compose file's command). Not a
# flag that asks for one, prompts or turns it off (--ask-become-pass, --no-password), nor an API's
# page token (--next-token).
_FLAG_WORD = (
    r"password|passwd|passphrase|pwd|pw|psk|secret|token|" + KEYS + r"|(?<=[a-np-z])auth"
    r"|(?<!by)(?<!com)(?<!sur)(?<!tres)(?<!over)(?<!under)(?<!multi)(?<!single-)(?<!two-)pass"
)
_FLAG = re.compile(
    r"(?<![\w-])(?P<q>[\"'])?-{1,2}"
    r"(?!(?i:no|ask|prompt|skip|show|hide|print|use|with|read|require|allow|disable|enable|empty|random"
    r"|generate|gen|stdin|from|env|file|min|max|next|starting|continuation|page|pagination|resume|cursor"
    r"|idempotency)[-_])"
    r"(?P<name>(?:[A-Za-z][\w.-]*?)?(?P<word>(?i:" + _FLAG_WORD + r")))(?![\w.-])"
    r"(?(q)(?P=q)[ \t]*,[ \t]*(?=[\"'])|(?:[ \t]*(?P<equals>=)[ \t]*|[ \t]+))"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`(\[{<-][^\s\"'`]*))"
)
# A file a flag names (--ask-vault-pass site.yml, --secret pull-secret.json): no password.
_FILE_NAME = re.compile(
    r"[\w.-]+\.(?:ya?ml|json|txt|conf|cfg|ini|env|pem|key|crt|p12|jks|pfx|gpg|asc|sh|py|sql|xml|toml|csv|log)"
)
# What may follow a flag's value on a command line (the end of the line, the next flag, a pipe, a
# redirection, a list's comma, a continuation), where a sentence goes on with words instead.
_COMMAND_GOES_ON = re.compile(r"[ \t]*(?:$|\n|[-|;&<>)\]\\,#\"'`])")
# Words that go on a sentence about a flag ("--registry-password requires --registry-username").
_PROSE = frozenset(
    """is are was were be been has have had does do did requires require needs need must should shall
    will would can could may might and or but nor if when then than with without for to from of in on
    at by as instead only also not never always which that this these those the a an it its""".split()
)
# -- code that names a credential, then gives its value

_VALUE = r"(?P<q>[\"'])(?P<value>[^\"'\n]{0,200})(?P=q)"
# A call that stores a value under a credential's name, given first: PHP's define('DB_PASSWORD',
# 'X'), os.environ.setdefault("DB_PASSWORD", "X"), config.set("database", "password", "X"),
# props.setProperty("mail.smtp.password", "X"), SetEnvironmentVariable, localStorage.setItem.
_STORED_UNDER = re.compile(
    r"(?<![\w.$])(?:[A-Za-z_$][\w$]*\.){0,4}"
    r"(?i:define|set\w*|put\w*|add\w*|with\w*|store\w*|save\w*|update\w*|insert\w*|write\w*|config\w*|env\w*)"
    r"\s*\(\s*(?:[\"'][^\"'\n]{0,60}[\"']\s*,\s*)?"
    r"(?P<nq>[\"'])(?P<name>[\w.-]{1,80})(?P=nq)\s*,\s*" + _VALUE + r"\s*[,)]"
)
_CODE_WORDS = ("pass", "pw", "secret", "token", "key", "auth", "cred", "psk", "pin")
# A value put under a credential's name by subscript, in quotes (a variable there is code's):
# $config['db_password'] = 'X', os.environ["SMTP_PASSWORD"] = "X", ENV['DB_PASSWORD'] = 'X'.
_SUBSCRIPT = re.compile(r"\[\s*(?P<nq>[\"'])(?P<name>[\w.-]{1,80})(?P=nq)\s*\]\s*(?::=|=(?!=))\s*" + _VALUE)
# A setter or a builder's step named for a credential: dataSource.setPassword("X"),
# .withPassword("X"), .password("X"), user.set_password('X'), client.setApiKey("X").
_SETTER = re.compile(r"\.(?P<name>[A-Za-z_]\w{0,60})\s*\(\s*" + _VALUE + r"\s*\)")
_NOT_A_SETTER = re.compile(
    r"(?i)(?:get|has|is|find|fetch|read|load|lookup|remove|delete|clear|reset|forgot|send|request|prompt"
    r"|ask|show|print|log|label|describe|translate|validate|check|verify|hash|encode|encrypt|compare|match)"
)
# A user and a password given to what signs in: requests' auth=('admin', 'X'),
# HTTPBasicAuth('user', 'X'), pika.PlainCredentials('guest', 'X'), new NetworkCredential("u", "X"),
# new PasswordAuthentication("u", "X".toCharArray()).
_AUTH_PAIR = re.compile(
    r"(?:(?<![\w])(?:[A-Za-z]+_)?auth\s*=\s*|(?<![\w.])(?:[A-Za-z_$][\w$]*\.){0,4}\w*(?:Auth|Credentials?|Authentication)\s*)"
    r"[(\[]\s*[\"'](?P<user>[^\"'\n]{1,80})[\"']\s*,\s*" + _VALUE + r"(?:\.\w+\(\))?\s*[,)\]]"
)
# A pair whose halves are the words for what they are ("user", "pass2"; "username1", "password1"):
# an example's, not a password.
_EXAMPLE_USER = re.compile(r"(?i)(?:user(?:name)?|login|name)\d{0,2}")
_EXAMPLE_PASSWORD = re.compile(r"(?i)(?:pass(?:word|wd)?|pwd|pw|secret)\d{0,2}")
# -p right after -u and a user, on any tool's command line (-p is a port's flag as often, but not
# after a user: az sql server create -u sqladmin -p X).
_USER_THEN_P = re.compile(
    r"(?<!\S)-u[ \t]+[^\s-]\S*[ \t]+-p[ \t]+"
    r"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]{1,200})(?P=q)|(?P<bare>[^\s\"'-][^\s\"']*))"
)
_MYSQL = re.compile(r"(?i)\b(?:mysql|mariadb)\w*")
# A credential right after its name, without "is" or "=" ("log in with password EWE?yCp8h").
# ("new pass: Ak.T7ncx2+z": a strong value after "pass" too, which alone is a word of its own.)
_BARE = re.compile(
    r"(?<![A-Za-z])(?P<word>(?i:"
    + KEYS
    + r"|password|passwd|passphrase|pwd|pw|secret|token|pass(?=:)|"
    + FOREIGN
    + r"))"
    r":?\s+(?P<value>[^\s\"'`,;()<>\[\]{}]{8,})"
)


def named_secrets(text: str) -> Iterator[tuple[str, int, int]]:
    """The credentials written by name in ``text``, each as (kind, start, end): a command's,
    assigned, in a file format's place, said in a sentence, or right after the name."""
    yield from _commands(text)
    yield from format_passwords(text)
    for kind, pattern in COMMANDS:
        for match in pattern.finditer(text):
            start, end = match.span("value")
            if "q" in pattern.groupindex:
                quoted = True
            else:
                start, end = _unquoted(text, start, bare_end(text, start, end))
                quoted = text[start - 1] in "\"'"  # a command's value follows its flag: start > 0
            if end > start and assigned_value(text[start:end], "password", quoted=quoted):
                yield kind, start, end
    yield from _assigned(text)
    yield from _flags(text)
    yield from _code(text)
    yield from (("password", start, end) for start, end in call_passwords(text))
    yield from (("password", start, end) for start, end in dsn_passwords(text))
    yield from (("password", start, end) for start, end in typed_passwords(text))
    yield from sql_passwords(text)
    yield from said_passwords(text)
    for match in _USER_THEN_P.finditer(text) if " -p" in text else ():
        group = "bare" if match.group("q") is None else "quoted"
        start, end = match.span(group)
        end = bare_end(text, start, end) if group == "bare" else end
        value = text[start:end]
        line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        if _MYSQL.search(line) or not credential_like(value, "password", quoted=group == "quoted"):
            continue  # mysql -u root -p shop: mysql's -p takes its value glued, and prompts
        if any(c.isalpha() for c in value) and assigned_value(value, "password", quoted=group == "quoted"):
            yield ("password", start, end)
    for match in _BARE.finditer(text):
        value, start = match.group("value").rstrip("."), match.start("value")
        if credential_like(value, match.group("word")) and STRONGISH.fullmatch(value):
            yield (kind_of(match.group("word")), start, start + len(value))


def _commands(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords on command lines (secrets/commands.py) that are no stand-in. A plain word is
    taken where the line says it is a password (user%X, pass:X, -pX, quoted) or follows a flag of
    a command that begins its line; elsewhere ("use zip -P with care", "nmcli asks for the
    password interactively") the value must look like one (letters with digits or signs)."""
    for given in command_passwords(text):
        start, end = given.start, given.end
        if not given.quoted:
            end = bare_end(text, start, end)
        value = text[start:end]
        if stand_in(value, quoted=bool(given.quoted), literal=given.quoted == "'"):
            continue
        if given.shaped or given.quoted or given.command_line:
            found = assigned_value(value, "password", quoted=bool(given.quoted))
        else:
            found = credential_like(value, "password")
        if found:
            yield ("password", start, end)


def _unquoted(text: str, start: int, end: int) -> tuple[int, int]:
    """A value's place without the quotes around it (redis-cli -a "$REDIS_PASSWORD"), or the
    one before it when the value goes on past a space (-a "[redacted: password]")."""
    if end - start >= 2 and text[start] in "\"'":
        return start + 1, end - 1 if text[end - 1] == text[start] else end
    return start, end


def _assigned(text: str) -> Iterator[tuple[str, int, int]]:
    """The values assigned to a credential's name (_ASSIGNED) that are no stand-in."""
    for match in _ASSIGNED.finditer(text):
        word = match.group("word")
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        start, end = match.span(group)
        if match.group("dashes") and match.group("space") is not None:
            continue  # a flag and the word after it: _flags
        spaced = match.group("space") is not None and match.group("dashes") is None
        if group == "bare":
            if spaced:
                continue  # "password hunter2": a sentence's, left to _BARE
            if match.group("dashes") and text[start] == "-":
                continue  # --password --verbose: the next option, no value
            end = bare_end(text, start, end)
            if stand_in(match.group("bare")):
                continue
        elif spaced and word.lower() not in ("password", "passwd", "passphrase"):
            continue  # token "abc": a quoted word after a word, not an assignment
        value = text[start:end]
        if match.group("sep") == ":" and text[match.start() - 1 : match.start()] == ":":
            continue  # a field of an ARN or a URN (arn:aws:secretsmanager:...:secret:prod/db), not a key
        if match.group("sep") == ":" and group == "bare":
            # "Password: the one in the vault": after a colon, a bare value is assigned when it
            # ends the line (YAML, INI) or a comment follows; in a sentence it must look like one.
            rest = rest_of_line(text, match.end())
            assigned = not rest or rest[0] in "#,}]" or rest.startswith("//")
            if not PASSWORD_WORD.match(word.lower()) and value.isalpha() and value.islower():
                assigned = False  # "The secret: patience." (a key or token is never a plain word)
            if not (assigned_value(value, word) if assigned else credential_like(value, word)):
                continue
        elif not assigned_value(value, word, quoted=group != "bare", literal=group == "sq"):
            continue
        if word.lower() == "pin" and not PIN.fullmatch(value):
            continue
        yield (kind_of(word), start, end)


def _flags(text: str) -> Iterator[tuple[str, int, int]]:
    """The values of flags named for a credential (_FLAG). A password's flag takes any value that is
    no stand-in, but a plain word after a space only where a command goes on after it (the line
    ends, or the next flag comes): "use --admin-password when asked" is a sentence. A secret's,
    token's or key's flag takes a value that looks like one (letters with digits or signs)."""
    for match in _FLAG.finditer(text):
        word, name = match.group("word"), match.group("name")
        group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
        start, end = match.span(group)
        if group == "bare":
            end = bare_end(text, start, end)
        if text.startswith("pass:", start):
            start += len("pass:")  # openssl's -pass pass:X
        value = text[start:end]
        if value.startswith("-") or _FILE_NAME.fullmatch(value):
            continue
        if stand_in(value, quoted=group != "bare", literal=group == "sq"):
            continue
        if not PASSWORD_WORD.match(word.lower()) and not name.lower().endswith("auth"):
            found = credential_like(value, word)
        elif group != "bare" or match.group("equals"):
            found = assigned_value(value, word, quoted=group != "bare", literal=group == "sq")
        elif value.isalpha():
            goes_on = _COMMAND_GOES_ON.match(text, end) is not None
            found = assigned_value(value, word) and goes_on and value.lower() not in _PROSE
        else:
            found = assigned_value(value, word)
        if found:
            yield (kind_of(word), start, end)


def _code(text: str) -> Iterator[tuple[str, int, int]]:
    """The values code gives a credential it names: a call that stores one under its name
    (_STORED_UNDER), a subscript (_SUBSCRIPT), a setter or builder named for one (_SETTER), a user
    and password given to what signs in (_AUTH_PAIR); each quoted, no stand-in, and no words for a
    person to read ("Enter your password")."""
    low = text.lower()
    if not (("(" in text or "[" in text) and any(word in low for word in _CODE_WORDS)):
        return  # (a quick look first: no call, no subscript or no credential's word)
    named: list[tuple[re.Match[str], str]] = []
    for pattern in (_STORED_UNDER, _SUBSCRIPT):
        named += [(match, match.group("name")) for match in pattern.finditer(text)]
    for match in _SETTER.finditer(text):
        name = match.group("name")
        if not _NOT_A_SETTER.match(name):
            named.append((match, name))
    for match, name in named:
        word = NAMED.search(name)
        if word is not None:
            yield from _code_value(text, match, word.group("word"))
    for match in _AUTH_PAIR.finditer(text):
        user, value = match.group("user"), match.group("value")
        if not (_EXAMPLE_USER.fullmatch(user) and _EXAMPLE_PASSWORD.fullmatch(value)):
            yield from _code_value(text, match, "password")


def _code_value(text: str, match: re.Match[str], word: str) -> Iterator[tuple[str, int, int]]:
    start, end = match.span("value")
    value = text[start:end]
    literal = match.group("q") == "'"
    if reads_as_text(value) or not assigned_value(value, word, quoted=True, literal=literal):
        return
    if not PASSWORD_WORD.match(word.lower()) and not credential_like(value, word):
        return  # a secret's, token's or key's: letters with digits or signs (not set("token", "abc"))
    yield (kind_of(word), start, end)

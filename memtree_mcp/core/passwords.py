"""Credentials people write by name, which no pattern of a key's shape can find: passwords above all.

A password a person chose looks like a word or a name (sunshine2024, hunter2, Fluffy-Cat-9), so it
is found by what is around it: an assignment to a credential's name (``DB_PASSWORD=X``, ``password:
X``, ``--password X``, ``psk``, a ``pin`` of digits, Passwort, contraseña), where any value counts
that is no stand-in (:func:`stand_in`: ``${DB_PASSWORD}``, ``os.environ["X"]``, ``null``; but
single-quoted ``'$unsh1ne'`` is the text itself); a tool's command line (``core/commands.py``'s
table: ``zip -P X``, ``keytool -storepass X``, ``echo 'user:X' | chpasswd``), ``IDENTIFIED BY
'X'``, an expect script's answer to a password prompt; the places file formats keep one (a
``.pgpass`` line, Kubernetes' ``name:``/``value:`` pair, ``requirepass X``); and a credential named
in a sentence or a chat ("the wifi password is still X", "the sftp login is uploads / X", "la
contraseña del wifi es X"), where the value must look like one (letters with digits or signs) or,
for a password in English, be a word that ends the sentence and names no state (wrong, stored), or
follow a colon on the line after talk of one (:func:`_after_talk`). ``core/secrets.py`` adds these
to what detect-secrets finds (:func:`named_secrets`), on the same normalised view of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_mcp.core.commands import command_passwords

MARKER = re.compile(r"\[redacted: [a-z0-9-]+\]")
"""What redaction puts in a secret's place (``core.secrets.redacted``; labels leave its words out):
never a credential itself."""

_QUOTED = r"(?P<q>[\"'])(?P<value>[^\"'\n]{1,200})(?P=q)"

# A password written in a form that is no tool's command line (those are core/commands.py's table):
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
)

# -- credentials written by name

# A credential's name: a word of these, on its own or ending a longer name (DB_PASSWORD, dbPassword,
# PGPASSWORD, client_secret, AWS_SECRET_ACCESS_KEY, authToken), not one that goes on (password_file).
_KEYS = r"apikey|(?:api|access|secret|private|encryption|signing|master|client|app|auth)[_ -]?key"
# A password's name in the languages people write to an agent in (Passwort, Kennwort, contraseña,
# mot de passe, senha, wachtwoord).
_FOREIGN = r"passwort|kennwort|contrase(?:ñ|n)a|senha|wachtwoord|mot[_ ]de[_ ]passe|motdepasse"
# The longest first; "pass" only ending a longer name (DB_PASS, smtp.pass) or right before "=";
# psk: a Wi-Fi passphrase; pin: a PIN of digits (_PIN).
_WORDS = (
    _KEYS
    + r"|password|passwd|passphrase|passcode|pwd|pw|(?<=[_.-])pass|pass(?==)|secret|token"
    + r"|psk|pre[_-]?shared[_-]?key|pin|"
    + _FOREIGN
)
# Where a name's word begins: not inside a word, at a camel hump (dbPassword), after an acronym
# (DBPassword, APIToken), or at a word in capitals (PGPASSWORD).
_NAME = (
    r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"
    r"|(?<=[A-Z])(?=(?:PASSWORD|PASSWD|PWD|SECRET|TOKEN)\b)"
    # a name glued to "pass" before "=" (--dbpass=, rootpass=), but not bypass, compass, overpass
    r"|(?<=[a-z])(?<!by)(?<!com)(?<!sur)(?<!tres)(?<!over)(?<!under)(?=pass=))"
    r"(?P<word>(?i:" + _WORDS + r"))(?![\w-])"
)
_PIN = re.compile(r"\d{4,8}")  # a PIN is digits (a GPIO pin is 18, a pinned version is 2.31.0)
_LOCKED = re.compile(r"(?i)\b(?:door|gate|alarm|lock|safe|garage|entry|keypad|locker|building|lockbox)")
# An assignment: NAME=value, NAME: value, "name": "value", name := value, --name value, name 'value'.
_ASSIGNED = re.compile(
    r"(?:(?<![\w-])(?P<dashes>--?))?"  # a flag's dashes, not a word's hyphen (not-secret lines)
    + _NAME
    + r"(?:[\"'\]]?[ \t]*(?P<sep>:=|==|=>|=|:(?!:))[ \t]*|(?P<space>[ \t]+))"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`|(?P<bare>[^\s\"'`]+))"
)
# A credential named in a sentence: "the wifi password is X", "my password for the box is X",
# "changed the password to X", "the password is still X", "same password as before: X", "pass is
# X", "temporary pw for the kiosk is X", and in the languages of _FOREIGN ("la contraseña del wifi
# es X", "das Passwort für den Server lautet X", "le mot de passe de la box est X").
_SAID = re.compile(
    r"(?<![A-Za-z])(?P<word>(?i:"
    + _KEYS
    + r"|password|passwd|passphrase|passcode|pin|secret|token|pwd|pw|pass|code|mdp|"
    + _FOREIGN
    + r"|clave))"
    r"(?:\s+(?i:for|of|on|to|at|as|from|in|with|i|we|you|he|she|they|that|de|del|da|do|du|des|für|fürs|vom"
    r"|von|zum|zur|pour|para|per|van|voor)(?:\s+[^\s.,;:!?\"']+){1,4}?)?"
    r"(?:\s+(?:(?:is\s+|was\s+|got\s+)?(?:set|changed|reset|updated)\s+to|is|was"
    r"|es|era|ist|lautet|war|est|était|é|è)\s*:?"
    # my password's X; the pw, it's X
    r"|(?P<its>['’]s|(?:\s+[^\s.,;:!?\"']+)?,\s+(?:it's|it’s|it\s+is|that's|which\s+is))"
    r"|\s+(?P<to>to)|\s*:|\s+=)"
    r"\s+(?:(?:now|still|just|literally|actually|currently|simply|again|also|always|really|probably"
    r"|temporarily|noch|immer|toujours|ainda|ancora|todavía)\s+)?"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"'`,;()<>\[\]{}]+))"
)
# A password or login set to a value: "I reset the root password to hotpotato", "changed the
# Grafana admin login to ilovepizza" (a plain word too, which "sent the password to Jennifer" is
# not: no verb of setting).
_SET_TO = re.compile(
    r"(?<![A-Za-z])(?i:changed|changing|change|set|setting|reset|resetting|updated)"
    r"(?:\s+[^\s.,;:!?\"']+){1,3}?\s+(?P<word>(?i:password|passwd|passphrase|passcode|pw|login))\s+to\s+"
    r"(?P<value>[^\s\"'`,;()<>\[\]{}]+)"
)
# What follows "set the password to" that is a verb, not a password ("to expire after 90 days").
_INFINITIVE = frozenset(
    """expire never rotate change match require include contain use reset be have allow accept
    reject prompt redirect sync unlock lock remember forget force something anything whatever
    nothing blank random automatic automatically protect prevent avoid ensure""".split()
)
# A user and password after a login's or credentials' name: "the sftp login is uploads /
# FrenchToast#5", "logging in with bob / Qwerty2024", "creds are root:Pizza4all".
_LOGIN_PAIR = re.compile(
    r"(?<![A-Za-z:])(?i:log(?:ged|ging)?[ -]?in|login|sign(?:ed|ing)?[ -]?in|creds?|credentials|account)"
    r"(?:\s+[^\s.,;:!?\"'/]+){0,4}?(?P<connector>\s+(?:is|are|was|were|with|as|using)\s+|\s*[:=]\s*|\s+)"
    r"(?P<user>[A-Za-z][\w.@+\\-]{0,63})(?:[ \t]*/[ \t]*|:)(?P<value>[^\s\"'`,;()<>\[\]{}]+)"
)
# A value given as a password, named after it: "try hunter22 for the password", "typed letmein!
# as the password".
_GIVEN_AS = re.compile(
    r"(?<![A-Za-z])(?i:try|tried|use|used|using|type|typed|enter|entered|paste|pasted)\s+"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"'`,;()<>\[\]{}]+))\s+(?i:as|for)\s+"
    r"(?:(?i:the|my|your|his|her|our|their|a|an|its)\s+)?(?:[\w-]+\s+){0,2}?"
    r"(?i:password|passwd|passphrase|passcode|pw|pin)(?![A-Za-z])"
)
# A row of a table a tool prints (vault kv get, a describe): a credential's name, two spaces or
# more, and a value that ends the line.
_ROW = re.compile(r"(?m)^[ \t]*" + _NAME + r"[ \t]{2,}(?P<value>[^\s\"'`]+)[ \t]*$")
_FUNCTION_WORDS = frozenset(
    "my your his her our their the a an this that these those its me him them us you it".split()
)
# A password said a little after talk of one: "the password? in case it didn't arrive: hunter2";
# the talk within _TALK_BACK characters before, on the same line or the one before.
_TALK = re.compile(
    r"(?<![A-Za-z])(?i:password|passwd|passphrase|passcode|pw|clave|" + _FOREIGN + r")(?![A-Za-z])"
)
_LAST_WORD = re.compile(r"(?m):[ \t]+(?P<value>[^\s\"'`<>\[\]{}()]+)[ \t]*$")
_TALK_BACK = 160
_PASSWORD_SHAPE = re.compile(r"(?=\S*[a-z])(?=\S*[0-9!#$%&*+?~^])[\w!#$%&*+?~^-]{6,64}")
# A credential right after its name, without "is" or "=" ("log in with password EWE?yCp8h").
# ("new pass: Ak.T7ncx2+z": a strong value after "pass" too, which alone is a word of its own.)
_BARE = re.compile(
    r"(?<![A-Za-z])(?P<word>(?i:"
    + _KEYS
    + r"|password|passwd|passphrase|pwd|secret|token|pass(?=:)|"
    + _FOREIGN
    + r"))"
    r":?\s+(?P<value>[^\s\"'`,;()<>\[\]{}]{8,})"
)
_NAMED_KINDS = (
    ("pass", "password"),
    ("psk", "password"),
    ("shared", "password"),
    ("wort", "password"),
    ("contras", "password"),
    ("senha", "password"),
    ("woord", "password"),
    ("clave", "password"),
    ("pwd", "password"),
    ("pw", "password"),
    ("pin", "password"),
    ("secret", "secret"),
    ("token", "token"),
    ("key", "api-key"),
)
_PASSWORD_WORD = re.compile(r"(?i)pass|pwd|pw|pin|psk|pre[_-]?shared|" + _FOREIGN + r"|clave")

# What stands in a credential's place without being one: a variable, a template, a type, a state.
_STAND_IN = re.compile(
    r"^(?:\$[{(]|%\(\w+\)[sd]|%[sd]?$|%\w+%|\{|<|\[|\*{3,}|x{3,}$|\.{3}|…"
    r"|(?:/|~/|\./|\.\./)|[A-Za-z]:\\|[A-Za-z][\w+.-]*://|(?i:your[_-]?|enc\[|vault:|env:|arn:)"
    r"|(?:required|nullable|sometimes|confirmed)\b)",  # and a form's rules (Laravel's required|min:8)
    re.IGNORECASE,
)
_REFERENCE = re.compile(r"\$[A-Za-z_]\w*")  # $DB_PASSWORD, $pass: a shell's or a template's variable
_NOT_A_VALUE = frozenset(
    """none null nil undefined true false yes no on off empty blank required optional unset default
    str string bytes int integer bool boolean secretstr any object text char varchar
    password passwd passphrase passcode pwd pass secret token key apikey api_key
    changeme change_me changeit example sample placeholder dummy todo tbd fixme
    hidden masked omitted redacted removed elided env environment bearer basic
    expired invalid missing revoked rotated valid present absent enabled disabled provided supplied
    needed set correct incorrect wrong weak strong unknown same different fine ok okay good bad
    great new old temporary generated random unique leaked compromised exposed accepted rejected
    sent lost forgotten mandatory locked unlocked stored saved hashed salted encrypted encoded
    shown visible known shared private public long short reset changed updated mine yours his hers
    ours theirs it this that what something nothing there here gone fixed simple secure insecure
    personal current stale below above inside elsewhere somewhere everywhere case-sensitive
    await async yield lambda function typeof self cls
    value values flag flags option options argument arguments parameter parameters field fields
    variable variables setting settings""".split()  # and what names a place for a value
)
# A word a sentence ends on after "the password is" that says how it is (outdated, expiring,
# guessable), not what it is.
_STATE = re.compile(r"(?i)(?:ed|ing|able|ible|ous|ive)$")
_ADDRESS = re.compile(r"^@\w|^[\w.+-]+@[\w-]+\.[\w.-]+$")  # "send the password to @ops, to a@b.io"
# Code: a call or subscript (getpass(, os.environ[), a dotted name (process.env.DB_PASSWORD,
# settings.SECRET), a variable named for a credential (raw_password, userPassword).
_YAML_TAG = re.compile(r"^!\w")  # password: !vault |
_CALL = re.compile(r"^[\w.$:-]*[(\[<]")  # and a generic type: Option<String>
_DOTTED = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+!?$")  # process.env.TOKEN!
_VARIABLE = re.compile(r"^[A-Za-z_][\w-]*$")
# A credential's word as a part of a variable's name: raw_password, userPassword, DB_PASS (not
# the "key" inside MonkeyBusiness).
_CREDENTIAL_WORD = re.compile(
    r"(?:^|[_-]|(?<=[a-z])(?=[A-Z]))(?i:pass(?:word|wd)?|pwd|pw|psk|pin|secret|token|key|cred(?:ential)?s?|auth)"
    r"(?=$|[_-]|[A-Z0-9])"
)
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+[a-z0-9.-]*$")
# Signs that make no password: an assignment (secret_name=%s), words in a choice (sanitize/merge).
_NO_PASSWORD_SHAPE = re.compile(r"[A-Za-z_][\w.-]*=.*|[A-Za-z]+(?:/[A-Za-z]+)+")
_FIGURE = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")  # 9e-06, 0.25: a price per token, not one
_NAME_LIKE = re.compile(r"^[a-z]+(?:[-_.][a-z0-9]+)+$")  # billing-2024: the name of a secret
_MIXED = r"(?=\S*[0-9])(?=\S*[a-z])(?=\S*[A-Z])"  # digits, small and capital letters
_STRONG = re.compile(_MIXED + r"\S{16,}")
# A credential named without "is" or "=": letters and digits, and both cases or a sign.
_STRONGISH = re.compile(r"(?=\S*[0-9])(?=\S*[A-Za-z])(?:(?=\S*[a-z])(?=\S*[A-Z])|(?=\S*[^\w\s-]))\S{8,}")
# Where a bare value ends: at the next field of a query string or connection string (&ssl=true,
# ;Trusted=yes), at a comma before the next key, and without the sentence's closing marks.
_NEXT_FIELD = re.compile(r"&(?=[\w.-]+=)|;|,(?=\s*[\"']?[\w.-]+[\"']?\s*[=:]|\s*$)")
_CLOSING = ".,;:)]}>"


def _kind_of(word: str) -> str:
    word = word.lower()
    return next((named for part, named in _NAMED_KINDS if part in word), "password")


def stand_in(value: str, quoted: bool = False, literal: bool = False) -> bool:
    """Whether ``value`` holds a credential's place without being one: a placeholder, a variable,
    a template, a path, a URL, a type or a state ("required", "expired"), or code that reads it;
    ``quoted``: written in quotes (then ``!x`` is no YAML tag); ``literal``: in single quotes,
    where neither a shell nor dotenv reads ``$name`` as a variable, so ``'$unsh1ne'`` is the text
    itself (but ``'$DB_PASSWORD'``, in capitals or named for a credential, is still written as a
    reference)."""
    if not value or _STAND_IN.match(value) or MARKER.search(value):
        return True
    if _REFERENCE.fullmatch(value):
        name = value[1:]
        return not literal or name.isupper() or _CREDENTIAL_WORD.search(name) is not None
    if not quoted and _YAML_TAG.match(value):
        return True
    if value.lower().strip(".,;:!?") in _NOT_A_VALUE or _CALL.match(value) or _DOTTED.match(value):
        return True
    # A variable named for a credential (raw_password, userPassword, pwd), not a password that
    # holds such a word (password123, Password1!).
    camel = re.search(r"[a-z][A-Z]", value) is not None
    joined = "_" in value or "-" in value or camel
    return bool(_VARIABLE.match(value) and _CREDENTIAL_WORD.search(value) and joined)


def _assigned_value(value: str, word: str, quoted: bool = False, literal: bool = False) -> bool:
    """Whether ``value``, assigned to a credential named ``word``, is a secret: anything but a
    stand-in, of four characters or more (digits alone only for a password, or twelve of them)."""
    if stand_in(value, quoted, literal) or len(value) < 4:
        return False
    if _FIGURE.fullmatch(value) and not value.isdigit():
        return False
    if value.isdigit():
        return bool(_PASSWORD_WORD.match(word.lower()) and word.lower() != "pass") or len(value) >= 12
    return True


def _credential_like(value: str, word: str) -> bool:
    """Whether a value named in a sentence looks like a credential: letters with digits or signs
    (or digits alone for a password or PIN); not a stand-in, a version, or, for a secret, token or
    key, a name such as billing-2024 (a password may well be one)."""
    if stand_in(value) or len(value) < 4 or _VERSION.match(value) or _NO_PASSWORD_SHAPE.fullmatch(value):
        return False
    password = bool(_PASSWORD_WORD.match(word.lower()))
    if value.isdigit():
        return password
    if not password and _NAME_LIKE.match(value) and not _STRONG.fullmatch(value):
        return False
    has_letter = any(c.isalpha() for c in value)
    has_other = any(c.isdigit() or (not c.isalnum() and c not in "-_.") for c in value)
    return has_letter and has_other


def bare_end(text: str, start: int, end: int) -> int:
    """Where a bare value that runs from ``start`` to ``end`` really ends (see _NEXT_FIELD)."""
    cut = _NEXT_FIELD.search(text, start, end)
    if cut:
        end = cut.start()
    while end > start and text[end - 1] in _CLOSING:
        end -= 1
    return end


def _rest_of_line(text: str, end: int) -> str:
    newline = text.find("\n", end)
    return text[end : newline if newline >= 0 else len(text)].strip()


def named_secrets(text: str) -> Iterator[tuple[str, int, int]]:
    """The credentials written by name in ``text``, each as (kind, start, end): a command's,
    assigned, said in a sentence, or right after the name."""
    yield from _commands(text)
    yield from _formats(text)
    for kind, pattern in COMMANDS:
        for match in pattern.finditer(text):
            start, end = match.span("value")
            if "q" in pattern.groupindex:
                quoted = True
            else:
                start, end = _unquoted(text, start, bare_end(text, start, end))
                quoted = text[start - 1] in "\"'"  # a command's value follows its flag: start > 0
            if end > start and _assigned_value(text[start:end], "password", quoted=quoted):
                yield kind, start, end
    yield from _assigned(text)
    yield from _said(text)
    for match in _BARE.finditer(text):
        value, start = match.group("value").rstrip("."), match.start("value")
        if _credential_like(value, match.group("word")) and _STRONGISH.fullmatch(value):
            yield (_kind_of(match.group("word")), start, start + len(value))


def _commands(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords on command lines (core/commands.py) that are no stand-in. A plain word is
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
            found = _assigned_value(value, "password", quoted=bool(given.quoted))
        else:
            found = _credential_like(value, "password")
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
        if match.group("sep") == ":" and group == "bare":
            # "Password: the one in the vault": after a colon, a bare value is assigned when it
            # ends the line (YAML, INI) or a comment follows; in a sentence it must look like one.
            rest = _rest_of_line(text, match.end())
            assigned = not rest or rest[0] in "#,}]" or rest.startswith("//")
            if not _PASSWORD_WORD.match(word.lower()) and value.isalpha() and value.islower():
                assigned = False  # "The secret: patience." (a key or token is never a plain word)
            if not (_assigned_value(value, word) if assigned else _credential_like(value, word)):
                continue
        elif not _assigned_value(value, word, quoted=group != "bare", literal=group == "sq"):
            continue
        if word.lower() == "pin" and not _PIN.fullmatch(value):
            continue
        yield (_kind_of(word), start, end)


# -- file formats that hold a password in a place of their own

# A .pgpass line, host:port:database:user:password (read where the text names .pgpass or
# PGPASSFILE: elsewhere five fields joined by colons are too many other things).
_PGPASS = re.compile(r"(?<![\w.:*-])[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.@*-]+:(?P<value>[^\s'\"]+)")
# A name and its value side by side: Kubernetes' env (- name: DB_PASSWORD / value: X), an ECS task
# definition ({"name": "DB_PASSWORD", "value": "X"}), CloudFormation's ParameterKey=DBPassword,
# ParameterValue=X; not valueFrom.
_PAIR = re.compile(
    r"(?<![A-Za-z])(?i:(?:parameter)?(?:name|key))[\"']?[ \t]*[:=][ \t]*[\"']?(?P<name>[\w.-]{1,80})[\"']?"
    r"[ \t]*(?:,|\n)\s{0,40}?(?:-[ \t]+)?[\"']?(?i:(?:parameter)?value)[\"']?[ \t]*[:=][ \t]*"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"',}\]]+))"
)
_NAMED = re.compile(_NAME + r"\Z")  # a name that ends in a credential's word
# A user and password under a credential's key: credentials: deploy:X, BASIC_AUTH=admin:X.
_USER_PASS = re.compile(
    r"(?<![A-Za-z])(?i:credentials?|creds|userpass|user_pass|basic[_-]?auth|auth)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?P<user>[A-Za-z][\w.@+\\-]{0,63}):(?P<value>[^\s\"',;}]+)"
)
# A configuration directive that takes a password after a space: redis.conf's requirepass and
# masterauth, ldap.conf's bindpw, a kickstart's rootpw, keepalived's auth_pass, bitcoin.conf's
# rpcpassword.
_DIRECTIVE = re.compile(
    r"(?<![\w-])(?:requirepass|masterauth|bindpw|rootpw|auth_pass|rpcpassword)(?:[ \t]+--plaintext)?[ \t]+"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`-][^\s\"'`]*))"  # not a flag: --iscrypted
)


def _formats(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords in the places file formats keep them: a .pgpass line, a credential's name
    and value side by side, user:password under a credentials key, a configuration directive."""
    if "pgpass" in text.lower():
        for match in _PGPASS.finditer(text):
            start, end = match.span("value")
            end = bare_end(text, start, end)
            if _assigned_value(text[start:end], "password"):
                yield ("password", start, end)
    for match in _PAIR.finditer(text):
        named = _NAMED.search(match.group("name"))
        found = _value_of(text, match, "password" if named is None else named.group("word"))
        if named is not None and found is not None:
            yield (_kind_of(named.group("word")), *found)
    for match in _USER_PASS.finditer(text):
        start, end = match.span("value")
        end = bare_end(text, start, end)
        if _assigned_value(text[start:end], "password"):
            yield ("password", start, end)
    for match in _DIRECTIVE.finditer(text):
        line = text.rfind("\n", 0, match.start()) + 1
        found = _value_of(text, match, "password", plain=not text[line : match.start()].strip())
        if found is not None:
            yield ("password", *found)


def _value_of(text: str, match: re.Match[str], word: str, plain: bool = True) -> tuple[int, int] | None:
    """The place of ``match``'s value (group dq, sq or bare) when it is a password's: any that is
    no stand-in, or, unless ``plain``, one that looks like one (letters with digits or signs)."""
    group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        end = bare_end(text, start, end)
    value = text[start:end]
    if stand_in(value, quoted=group != "bare", literal=group == "sq"):
        return None
    found = _assigned_value(value, word, quoted=group != "bare") if plain else _credential_like(value, word)
    return (start, end) if found else None


def _said(text: str) -> Iterator[tuple[str, int, int]]:
    """The credentials named in a sentence (_SAID) whose value looks like one, a password set to a
    value (_SET_TO), a user and password after a login's name (_LOGIN_PAIR), and a password said
    a little after talk of one (:func:`_after_talk`)."""
    for match in _SAID.finditer(text):
        found = _said_value(text, match)
        if found is not None:
            yield (_kind_of(match.group("word")), *found)
    for match in _SET_TO.finditer(text):
        start = match.start("value")
        end = _sentence_end(text, start, match.end("value"))
        value = text[start:end]
        if _credential_like(value, "password") or (
            _plain_password(value) and value.lower() not in _INFINITIVE and not _ADDRESS.match(value)
        ):
            yield ("password", start, end)
    for match in _GIVEN_AS.finditer(text):
        found = _value_of(text, match, "password", plain=False)
        if found is not None:
            yield ("password", *found)
    for match in _ROW.finditer(text):  # a cell may be a name (token  document_id): one that looks like one
        start, end = match.span("value")
        if _credential_like(text[start:end], match.group("word")):
            yield (_kind_of(match.group("word")), start, end)
    yield from _login_pairs(text)
    yield from _after_talk(text)


def _said_value(text: str, match: re.Match[str]) -> tuple[int, int] | None:
    """The place of the value a _SAID match names, when it is a credential: a PIN's or a door
    code's digits, a quoted value that is no stand-in, or a bare one that looks like one."""
    word = match.group("word").lower()
    group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        if text[end : end + 1] in ("(", "["):
            return None  # token = b64encode(...), key = row['key']: code's value, not a credential
        end = _sentence_end(text, start, end)
    value = text[start:end]
    if word in ("pin", "code"):
        # A PIN, not a pin of a chip (5V); a door's, a gate's or an alarm's code, not an error's.
        said = text[max(0, match.start() - 24) : match.end()]
        found = _PIN.fullmatch(value) is not None and (word == "pin" or _LOCKED.search(said) is not None)
    elif group != "bare":
        found = _assigned_value(value, word, quoted=True, literal=group == "sq")
    elif match.group("its") and not _ends_clause(text, end):
        found = False  # "the password's SHA-1 hash": a possessive, not "is"
    elif word == "mdp":
        found = _credential_like(value, "password")  # French shorthand; an MDP is a model too
    elif match.group("to"):
        # "changed the password to Fluffy2020!", not "sent the password to Jennifer."
        found = bool(_STRONGISH.fullmatch(value)) and word != "pass"
    elif word == "pass":  # a pass may be a bus's, or a compiler's: digits in it too
        found = _credential_like(value, word) and any(c.isdigit() for c in value)
    elif not _PLAIN_WORDS.fullmatch(word):
        found = _credential_like(value, word)  # "la contraseña es X": one that looks like one
    else:
        found = _credential_like(value, word) or _said_password(text, value, end)
    return (start, end) if found and not _ADDRESS.match(value) else None


def _ends_clause(text: str, end: int) -> bool:
    return re.match(r"\s*(?:[.!?;,\n]|$)", text[end:]) is not None


# The words of a password for which a plain word that ends a sentence is one ("the password is
# purplemonkey."): English, whose words for a state the checks know (wrong, required, stored).
_PLAIN_WORDS = re.compile(r"(?i)password|passwd|passphrase|pw")


def _sentence_end(text: str, start: int, end: int) -> int:
    """Where a bare value in a sentence ends: bare_end, and before a question or exclamation
    mark that ends the sentence ("logging in with bob / Qwerty2024? should work")."""
    end = bare_end(text, start, end)
    if end - start > 1 and text[end - 1] == "?":
        end -= 1
    return end


def _plain_password(value: str) -> bool:
    """Whether a plain word can be a password said in a sentence: small letters, six or more, no
    stand-in, no word for a state (outdated, expiring, guessable)."""
    return (
        len(value) >= 6
        and value.isalpha()
        and value.islower()
        and not stand_in(value)
        and not _STATE.search(value)
    )


def _said_password(text: str, value: str, end: int) -> bool:
    """Whether a plain word is a password named in a sentence ("my password is purplemonkey."):
    one that is no state (wrong, required, stored) and ends the sentence."""
    if stand_in(value) or len(value) < 6 or not value.isalpha() or _STATE.search(value):
        return False
    return _ends_clause(text, end)


def _login_pairs(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords of user / password pairs after a login's name (_LOGIN_PAIR): one that looks
    like a password, or a plain word of small letters after a user name ("admin / stagingrocks");
    not "sign in with Google / GitHub", "log in with your username / password"."""
    for match in _LOGIN_PAIR.finditer(text):
        user = match.group("user")
        start = match.start("value")
        end = _sentence_end(text, start, match.end("value"))
        value = text[start:end]
        if user.lower() in _FUNCTION_WORDS or stand_in(user) or stand_in(value) or _ADDRESS.match(value):
            continue
        if "/" in value or _VERSION.match(value):
            continue  # a path, a role in an ARN (ACCOUNT:assumed-role/NAME), a version
        if not match.group("connector").strip() and not _STRONGISH.fullmatch(value):
            continue  # "service account svc-jira / J1raRocks!": without "is" or ":", a strong one
        if _credential_like(value, "password") or (_plain_password(value) and user.islower()):
            yield ("password", start, end)


def _after_talk(text: str) -> Iterator[tuple[str, int, int]]:
    """A password given after a colon that ends its line, in a sentence that follows talk of a
    password ("the password? in case it didn't arrive: hunter2", "wifi password changed again, new
    one: velvet99"). How far back: _TALK_BACK characters, on the same line or the one before (the
    sentence before, a chat's previous line); never further, where talk of a password is no longer
    what a colon answers. The value must have the shape of one: small letters with digits or signs,
    no dot, slash or @ (a file, a host, a path, an address), no hexadecimal (a commit)."""
    for match in _LAST_WORD.finditer(text):
        start = match.start("value")
        end = start + len(match.group("value").rstrip(".!?,;"))
        value = text[start:end]
        if not _PASSWORD_SHAPE.fullmatch(value) or re.fullmatch(r"[0-9a-f]+", value) or _VERSION.match(value):
            continue
        line = text.rfind("\n", 0, match.start()) + 1
        if len(text[line : match.start()].split()) < 2:
            continue  # "hasher: argon2id": a key of a file's, not a sentence
        back = max(text.rfind("\n", 0, max(line - 1, 0)) + 1 if line else 0, match.start() - _TALK_BACK)
        if _TALK.search(text, back, match.start()) and not stand_in(value):
            yield ("password", start, end)

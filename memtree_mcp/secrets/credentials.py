"""A credential's name and value: the words that name one, and whether a value is one.

``secrets/passwords.py`` (assignments and command lines), ``secrets/file_formats.py`` (the places file
formats keep one) and ``secrets/sentences.py`` (sentences and chats) find where a credential's value
is; this module judges what is there. A value held in a credential's place may be no credential at
all: a stand-in (:func:`stand_in`: ``${DB_PASSWORD}``, ``os.environ["X"]``, ``<your-password>``,
``null``, a type, a state such as "expired"); an assigned value is one when it is no stand-in
(:func:`assigned_value`), a value a sentence names must look like one too (:func:`credential_like`:
letters with digits or signs), and a plain word only where a sentence says plainly that it is the
password (:func:`plain_password`).
"""

from __future__ import annotations

import re

from memtree_mcp.core.trees.extractive import MARKER  # a value holding one is no credential

# A credential's name: a word of these, on its own or ending a longer name (DB_PASSWORD, dbPassword,
# PGPASSWORD, client_secret, AWS_SECRET_ACCESS_KEY, authToken), not one that goes on (password_file).
KEYS = r"apikey|(?:api|access|secret|private|encryption|signing|master|client|app|auth)[_ .-]?key"
# A password's name in the languages people write to an agent in (Passwort, Kennwort, contraseña,
# mot de passe, senha, wachtwoord).
FOREIGN = r"passwort|kennwort|contrase(?:ñ|n)a|senha|wachtwoord|mot[_ ]de[_ ]passe|motdepasse"
# The longest first; "pass" only ending a longer name (DB_PASS, smtp.pass, SmtpPass) or right before "=";
# psk: a Wi-Fi passphrase; pin: a PIN of digits (PIN).
_WORDS = (
    KEYS
    + r"|password|passwd|passphrase|passcode|pwd|pw|(?<=[_.-])pass|pass(?==)"
    + r"|pass(?=[\"']?[ \t]*:[ \t]*[\"'])|(?-i:(?<=[a-z])Pass)"
    + r"|secret|token"
    + r"|psk|pre[_-]?shared[_-]?key|pin|"
    + FOREIGN
)
# Where a name's word begins: not inside a word, at a camel hump (dbPassword), after an acronym
# (DBPassword, APIToken), or at a word in capitals (PGPASSWORD).
NAME = (
    r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"
    r"|(?<=[A-Z])(?=(?:PASSWORD|PASSWD|PWD|SECRET|TOKEN)\b)"
    # a name glued to "pass" before "=" (--dbpass=, rootpass=), but not bypass, compass, overpass
    r"|(?<=[a-z])(?<!by)(?<!com)(?<!sur)(?<!tres)(?<!over)(?<!under)(?=pass=))"
    r"(?P<word>(?i:" + _WORDS + r"))(?![\w-])"
)
NAMED = re.compile(NAME + r"\Z")  # a name that ends in a credential's word (hibernate.connection.password)
PIN = re.compile(r"\d{4,8}")  # a PIN is digits (a GPIO pin is 18, a pinned version is 2.31.0)
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
PASSWORD_WORD = re.compile(r"(?i)pass|pwd|pw|pin|psk|pre[_-]?shared|" + FOREIGN + r"|clave")

# What stands in a credential's place without being one: a variable, a template, a type, a state,
# and a reference to where the secret is kept, in each tool's style: a URL or a scheme with a path
# (op://vault/item, ssm:/prod/db), an ARN, a release pipeline's token (#{Db.Password}#,
# __DB_PASSWORD__, @@DB_PASSWORD@@), an app setting's reference (@Microsoft.KeyVault(...)).
_STAND_IN = re.compile(
    r"^(?:\$[{(]|%\(\w+\)[sd]|%[sd]?$|%\w+%|\{|<|\[|\*{3,}|[•●∙·]{3,}|x{3,}$|\.{3}|…"
    r"|(?:/|~/|\./|\.\./)|[A-Za-z]:\\|[A-Za-z][\w+.-]*:/|(?i:your[_-]?|enc\[|vault:|env:|arn:|file:|fd:)"
    r"|#\{|__\w+__$|@@\w+@@$|@\w[\w.]*\("
    r"|(?:required|nullable|sometimes|confirmed)\b)",  # and a form's rules (Laravel's required|min:8)
    re.IGNORECASE,
)
# $DB_PASSWORD, $pass: a shell's or a template's variable; $env:DB_PASSWORD: PowerShell's.
_REFERENCE = re.compile(r"\$\$?(?:env:)?[A-Za-z_]\w*", re.IGNORECASE)  # $$X: compose's escaped $X
# A name in capitals, which a template writes where the value goes (USER:PASSWORD@HOST, DB_PASS,
# CHANGE_ME_IN_PROD, SET_IN_VAULT, MYPASSWORD): a constant's name, not a password.
_CAPITALS = re.compile(r"[A-Z]+(?:_[A-Z]+)+|[A-Z]*(?:PASSWORD|PASSWD|PWD|PASS|TOKEN|SECRET)[A-Z]*")
# A name in a secret store, with folders (projects/acme/secrets/db-password/versions/latest,
# prod/api/db-AbCdEf): lower-case folders, which a random key's base64 (with '/') never has.
_STORED_AT = re.compile(r"[a-z0-9][a-z0-9._-]*/(?:[a-z0-9][a-z0-9._-]*/)+[\w.-]+")
_NOT_A_VALUE = frozenset(
    """none null nil undefined true false yes no on off empty blank required optional unset default
    str string bytes int integer bool boolean secretstr any object text char varchar
    password passwd passphrase passcode pwd pass secret token key apikey api_key
    passwort kennwort contraseña contrasena senha wachtwoord motdepasse
    changeme change_me changeit example sample placeholder dummy todo tbd fixme
    hidden masked omitted redacted removed elided env environment bearer basic stdin stdout stderr
    expired invalid missing revoked rotated valid present absent enabled disabled provided supplied
    needed set correct incorrect wrong weak strong unknown same different fine ok okay good bad
    great new old temporary generated random unique leaked compromised exposed accepted rejected
    sent lost forgotten mandatory locked unlocked stored saved hashed salted encrypted encoded
    shown visible known shared private public long short reset changed updated mine yours his hers
    ours theirs it this that what something nothing there here gone fixed simple secure insecure
    personal current stale below above inside elsewhere somewhere everywhere case-sensitive nowhere
    anywhere lowercase uppercase alphanumeric numeric complex tricky obvious easy hard written similar
    identical memorable handwritten
    await async yield lambda function typeof self cls
    value values flag flags option options argument arguments parameter parameters field fields
    variable variables setting settings""".split()  # and what names a place for a value
)
# A word a sentence ends on after "the password is" that says how it is (outdated, expiring,
# guessable), not what it is.
STATE = re.compile(r"(?i)(?:ed|ing|able|ible|ous|ive)$")
# Ways of signing in that are no password ("log in with Google", "use okta for the admin login",
# NEO4J_AUTH=none, DEFAULT_AUTH=ldap/kerberos).
SIGN_IN_METHODS = frozenset(
    """sso saml oauth oauth2 oidc openid ldap kerberos okta auth0 google github gitlab microsoft azure
    azuread entra apple facebook twitter keycloak passkey passkeys yubikey webauthn totp 2fa mfa otp
    sudo ssh key keys certificate cert token tokens basic digest bearer negotiate ntlm plain scram
    none""".split()
)
ADDRESS = re.compile(r"^@\w|^[\w.+-]+@[\w-]+\.[\w.-]+$")  # "send the password to @ops, to a@b.io"
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
VERSION = re.compile(r"^v?\d+(?:\.\d+)+[a-z0-9.-]*$")
# Signs that make no password: an assignment (secret_name=%s), words in a choice (sanitize/merge).
_NO_PASSWORD_SHAPE = re.compile(r"[A-Za-z_][\w.-]*=.*|[A-Za-z]+(?:/[A-Za-z]+)+")
_FIGURE = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")  # 9e-06, 0.25: a price per token, not one
_NAME_LIKE = re.compile(r"^[a-z]+(?:[-_.][a-z0-9]+)+$")  # billing-2024: the name of a secret
_MIXED = r"(?=\S*[0-9])(?=\S*[a-z])(?=\S*[A-Z])"  # digits, small and capital letters
_STRONG = re.compile(_MIXED + r"\S{16,}")
# A credential named without "is" or "=": letters and digits, and both cases or a sign.
STRONGISH = re.compile(r"(?=\S*[0-9])(?=\S*[A-Za-z])(?:(?=\S*[a-z])(?=\S*[A-Z])|(?=\S*[^\w\s-]))\S{8,}")
# Words joined by hyphens or underscores, each of letters (a number may end one): a passphrase
# (Bergamot-Earl-Grey, purple-otter-canoe-rain), or a name (billing-service, read-only): where a
# sentence says plainly that it is a password, and with a capital letter where it says less.
_PASSPHRASE = re.compile(r"[A-Za-z]{2,}[0-9]*(?:[-_][A-Za-z]{2,}[0-9]*){1,6}")
_NOT_A_PASSPHRASE = frozenset(
    """read-only write-only read-write auto-generated auto-generate never-expire non-expiring one-time
    self-service single-sign-on sign-in log-in opt-in opt-out end-to-end case-sensitive case-insensitive
    hard-coded hardcoded well-known pre-shared user-defined system-generated self-signed write-protected
    built-in per-user per-host time-based up-to-date out-of-date short-lived long-lived""".split()
)
# Names of algorithms, encodings, protocols and platforms, which a sentence may set a password's
# handling to ("switched the password hashing to argon2id"), never a password.
TECHNICAL = re.compile(
    r"(?i)argon2(?:id|i|d)?|bcrypt|scrypt|pbkdf2[\w-]*|sha-?\d+|md5|aes-?\d+\w*|rsa-?\d+|ed25519|x25519"
    r"|base(?:64|32)|utf-?8|tls-?v?1(?:\.\d)?|ssl-?v?\d|http/?\d(?:\.\d)?|ntlmv?2|kerberos5?|oauth2?|saml2?"
    r"|ipv[46]|x86(?:_64)?|arm64|amd64|win(?:dows)?\d+|1password"
)


def passphrase(value: str, capital: bool = True) -> bool:
    """Whether ``value`` is words joined by hyphens or underscores that may be a passphrase (with
    a capital letter in it, unless not ``capital``); not a word of a kind (read-only) nor a stand-in."""
    if not _PASSPHRASE.fullmatch(value) or value.lower() in _NOT_A_PASSPHRASE or stand_in(value):
        return False
    return not capital or any(c.isupper() for c in value)


# Where a bare value ends: at the next field of a query string or connection string (&ssl=true,
# ;Trusted=yes), at a comma before the next key, and without the sentence's closing marks.
_NEXT_FIELD = re.compile(r"&(?=[\w.-]+=)|;|,(?=\s*[\"']?[\w.-]+[\"']?\s*[=:]|\s*$)")
_CLOSING = ".,;:)]}>"


def kind_of(word: str) -> str:
    """The kind a marker names for a credential called ``word`` (password, secret, token, api-key)."""
    word = word.lower()
    return next((named for part, named in _NAMED_KINDS if part in word), "password")


def stand_in(value: str, quoted: bool = False, literal: bool = False) -> bool:
    """Whether ``value`` holds a credential's place without being one: a placeholder (a name in
    capitals too), a variable, a template, a path, a URL, a reference to a secret store, a type or
    a state ("required", "expired"), or code that reads it;
    ``quoted``: written in quotes (then ``!x`` is no YAML tag); ``literal``: in single quotes,
    where neither a shell nor dotenv reads ``$name`` as a variable, so ``'$unsh1ne'`` is the text
    itself (but ``'$DB_PASSWORD'``, in capitals or named for a credential, is still written as a
    reference)."""
    if not value or _STAND_IN.match(value) or MARKER.search(value):
        return True
    if _REFERENCE.fullmatch(value):
        name = value[value.index(":") + 1 :] if ":" in value else value.lstrip("$")
        return not literal or name.isupper() or _CREDENTIAL_WORD.search(name) is not None
    if not quoted and _YAML_TAG.match(value):
        return True
    if value.lower().strip(".,;:!?") in _NOT_A_VALUE or _CALL.match(value) or _DOTTED.match(value):
        return True
    if _CAPITALS.fullmatch(value) or _STORED_AT.fullmatch(value):
        return True
    # A variable named for a credential (raw_password, userPassword, pwd), not a password that
    # holds such a word (password123, Password1!).
    camel = re.search(r"[a-z][A-Z]", value) is not None
    joined = "_" in value or "-" in value or camel
    if any(c.isdigit() for c in value) and (quoted or any(c.isupper() for c in value)):
        return False  # a password that reads as a name: "SecretSauce1", ChapPass1 (not raw_password)
    return bool(_VARIABLE.match(value) and _CREDENTIAL_WORD.search(value) and joined)


def assigned_value(value: str, word: str, quoted: bool = False, literal: bool = False) -> bool:
    """Whether ``value``, assigned to a credential named ``word``, is a secret: anything but a
    stand-in, of four characters or more (digits alone only for a password, or twelve of them)."""
    if stand_in(value, quoted, literal) or len(value) < 4:
        return False
    if _FIGURE.fullmatch(value) and not value.isdigit():
        return False
    if value.isdigit():
        return bool(PASSWORD_WORD.match(word.lower()) and word.lower() != "pass") or len(value) >= 12
    return True


def credential_like(value: str, word: str, quoted: bool = False) -> bool:
    """Whether a value named in a sentence looks like a credential: letters with digits or signs
    (or digits alone for a password or PIN); not a stand-in, a version, or, for a secret, token or
    key, a name such as billing-2024 (a password may well be one); ``quoted``: written where no
    YAML tag can be (!QAZxsw2 is a password)."""
    if (
        stand_in(value, quoted)
        or len(value) < 4
        or VERSION.match(value)
        or _NO_PASSWORD_SHAPE.fullmatch(value)
    ):
        return False
    password = bool(PASSWORD_WORD.match(word.lower()))
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


def rest_of_line(text: str, end: int) -> str:
    """What follows ``end`` on its line, without the spaces around it."""
    newline = text.find("\n", end)
    return text[end : newline if newline >= 0 else len(text)].strip()


def value_of(text: str, match: re.Match[str], word: str, plain: bool = True) -> tuple[int, int] | None:
    """The place of ``match``'s value (group dq, sq or bare) when it is a password's: any that is
    no stand-in, or, unless ``plain``, one that looks like one (letters with digits or signs)."""
    group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        end = bare_end(text, start, end)
    value = text[start:end]
    if stand_in(value, quoted=group != "bare", literal=group == "sq"):
        return None
    found = assigned_value(value, word, quoted=group != "bare") if plain else credential_like(value, word)
    return (start, end) if found else None


def ends_clause(text: str, end: int) -> bool:
    """Whether a value that ends at ``end`` ends its clause too (a mark, a line's end, the end)."""
    return re.match(r"\s*(?:[.!?;,\n]|$)", text[end:]) is not None


def sentence_end(text: str, start: int, end: int) -> int:
    """Where a bare value in a sentence ends: bare_end, and before a question or exclamation
    mark that ends the sentence ("logging in with bob / Qwerty2024? should work")."""
    end = bare_end(text, start, end)
    if end - start > 1 and text[end - 1] == "?":
        end -= 1
    return end


def plain_password(value: str) -> bool:
    """Whether a plain word can be a password said in a sentence: small letters, six or more, no
    stand-in, no word for a state (outdated, expiring, guessable)."""
    return (
        len(value) >= 6
        and value.isalpha()
        and value.islower()
        and not stand_in(value)
        and not STATE.search(value)
    )


def reads_as_text(value: str) -> bool:
    """Whether a quoted value is words for a person to read (a prompt, a label, a message: "Enter
    your password", "This password is too short"), not a password: words apart, and a credential's
    word among them or four words and more ("correct horse battery" may be a password)."""
    words = value.split()
    return len(words) > 1 and (len(words) >= 4 or _SPOKEN_WORD.search(value) is not None)


_SPOKEN_WORD = re.compile(
    r"(?i)(?<![A-Za-z])(?:password|passwd|passphrase|passcode|pwd|pw|pin|secret|token|key|creds?|credentials?"
    r"|login|user(?:name)?|" + FOREIGN + r")(?![A-Za-z])"
)

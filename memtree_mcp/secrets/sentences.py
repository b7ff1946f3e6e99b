"""Credentials named in a sentence or a chat, where no assignment or format says where the value is.

"the wifi password is still X", "the password on the old Pi in the lab is X", "changed the password
to X", "try X for the password", "the sftp login is uploads / X", "la contraseña del wifi es X",
"パスワードは X です", a password after a colon on the line after talk of one ("in case it didn't
arrive: X"), logging in with one ("logging in as qa_tester with X"), and one a pronoun names near
talk of a login ("I reset it to X, change it after you log in"). The value must look like one
(letters with digits or signs: ``secrets/credentials.py``'s :func:`credential_like`) or, for a password
in English, be a plain word that ends the sentence and names no state (wrong, stored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_mcp.secrets.conversation import account_name, answered_passwords, pair_passwords
from memtree_mcp.secrets.credentials import (
    ADDRESS,
    FOREIGN,
    KEYS,
    PASSWORD_WORD,
    PIN,
    SIGN_IN_METHODS,
    STATE,
    STRONGISH,
    TECHNICAL,
    VERSION,
    assigned_value,
    credential_like,
    ends_clause,
    kind_of,
    passphrase,
    plain_password,
    sentence_end,
    stand_in,
    value_of,
)

_LOCKED = re.compile(r"(?i)\b(?:door|gate|alarm|lock|safe|garage|entry|keypad|locker|building|lockbox)")
# A code that opens nothing: an error's, a status's, a parcel's ("error code for the door sensor").
_NOT_A_DOOR_CODE = re.compile(
    r"(?i)\b(?:error|status|exit|return|response|http|zip|postal|area|country|source|promo|discount|qr|bar"
    r"|colou?r|product|ticket|booking|reference|tracking|confirmation|verification|fault|event)[ \t]+\Z"
)
# The words between a credential's word and what a sentence says of it ("the password on the old Pi
# in the lab is X", "das Passwort für den Drucker im 2. Stock ist X"): nine at most, a number with
# its dots among them, none that begins another clause ("the password for it, because the build is
# broken").
_BETWEEN = (
    r"(?:\s+(?!(?i:because|since|but|although|though|while|if|unless|until|so|and|or|whereas|then|when)\b)"
    r"(?:\d+(?:\.\d+)*\.?|[^\s.,;:!?\"']+(?:['’]\w+)?)){1,9}?"
)
# A credential named in a sentence: "the wifi password is X", "my password for the box is X",
# "changed the password to X", "the password is still X", "same password as before: X", "pass is
# X", "temporary pw for the kiosk is X", and in the languages of FOREIGN ("la contraseña del wifi
# es X", "das Passwort für den Server lautet X", "le mot de passe de la box est X").
_SAID = re.compile(
    r"(?<![A-Za-z])(?P<word>(?i:"
    + KEYS
    + r"|password|passwd|passphrase|passcode|pin|secret|token|pwd|pw|pass|code[ \t]+(?:du[ \t]+)?wi-?fi"
    + r"|wi-?fi[ \t]+code|code|mdp|"
    + FOREIGN
    + r"|clave))"
    r"(?:\s+(?i:for|of|on|to|at|as|from|in|with|i|we|you|he|she|they|that|de|del|da|do|du|des|für|fürs|vom"
    r"|von|zum|zur|pour|para|per|van|voor)" + _BETWEEN + r")?"
    r"(?:,(?:\s+[^\s.,;:!?\"']+){1,5},)?"  # an aside: "the wifi password, if anyone asks, is X"
    # db pass is the usual one: X
    r"(?:\s+(?:is|was)\s+(?i:the|my|our|your)\s+(?i:usual|same|regular|standard|normal|default|old|new)"
    r"(?:\s+one)?\s*[:,–—-]"
    r"|\s+(?:(?P<setto>(?:is\s+|was\s+|has\s+been\s+|(?:just\s+|finally\s+)?got\s+)?(?:set|changed|reset|updated)\s+to)|is|was"
    r"|es|era|ist|lautet|war|est|était|é|è|c['’]est|c['’]était)\s*:?"
    # my password's X; the pw, it's X
    r"|(?P<its>['’]s|(?:\s+[^\s.,;:!?\"']+)?,\s+(?:it's|it’s|it\s+is|that's|which\s+is))"
    # (then a value that looks like one) changed ... to X; wifi password -> X; password? It's X;
    # the new password (X); a temporary password, X, valid for a day
    r"|\s+(?P<to>to)|\s*(?P<arrow>->|→|=>|--|—|–)|\s*\?\s+(?P<asked>(?i:it['’]s|its|it\s+is))"
    r"|\s*(?P<paren>\()(?=[^\s()]+\))|(?P<apposed>,)(?=\s+[^\s,]+,)|\s*:|\s+=)"
    r"(?:\s+|(?<=\())(?:(?:now|still|just|literally|actually|currently|simply|again|also|always|really|probably"
    r"|temporarily|noch|immer|toujours|ainda|ancora|todavía)\s+)?"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"'`,;()<>\[\]{}]+))"
)
# A password or login set to a value: "I reset the root password to hotpotato", "changed the
# Grafana admin login to ilovepizza", "Changed the root pw on db01 and db02 to X" (a plain word too,
# which "sent the password to Jennifer" is not: no verb of setting).
_SET_TO = re.compile(
    r"(?<![A-Za-z])(?i:changed|changing|change|set|setting|reset|resetting|updated|rotated)"
    r"(?:\s+[^\s.,;:!?\"']+){1,3}?\s+(?P<word>(?i:password|passwd|passphrase|passcode|pw|login))"
    r"(?P<between>(?:\s+(?!(?i:because|since|but|although|though|while|if|unless|until|so|or|whereas|then"
    r"|when)\b|(?i:and\s+(?:\w+ed|i|we|you|he|she|they|it|then)\b))[^\s.,;:!?\"']+){0,8}?)\s+to\s+"
    r"(?P<value>[^\s\"'`,;()<>\[\]{}]+)"
)
# What a password's word may name instead of the password ("the password policy to", "password
# hashing to argon2id", "the password field to read-only").
_ATTRIBUTE = re.compile(
    r"(?i)(?<![A-Za-z])(?:polic(?:y|ies)|length|expiry|expiration|age|lifetime|history|hash(?:ing|es)?"
    r"|algorithm|rotation|timeout|limit|minimum|maximum|complexity|strength|requirements?|rules?|field"
    r"|prompt|check|validation|reset|manager|storage|column|format|encoding|scheme|settings?|config"
    r"|configuration|mode|option|flow|page|screen|form|dialog|hint|login|auth(?:entication)?)(?![A-Za-z])"
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
# -- logging in with a value, and a password named by a pronoun

# Logging in with a value: "try logging in as qa_tester with X?", "log into the shared design account
# (design@studio.io) with X and enable 2FA", "sign in as admin using X until we set up SSO".
_LOGIN_WITH = re.compile(
    r"(?<![A-Za-z])(?i:log(?:ged|ging|s)?[ -]?(?:in(?:to)?|on)|sign(?:ed|ing|s)?[ -]?(?:in(?:to)?|on))"
    r"(?P<as>\s+(?i:as)\s+[^\s,;!?]+)?(?:\s+[^\s,;!?]*[^\s,;!?.]){0,8}?\s+(?i:with|using)\s+"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"'`,;()<>\[\]{}]+))"
)
# A value given for a login or an account: "use stagingrocks for the staging login, user is qa@x.io".
_GIVEN_FOR_LOGIN = re.compile(
    r"(?<![A-Za-z])(?i:try|use|using|type|enter|put\s+in)\s+(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'"
    r"|(?P<bare>[^\s\"'`,;()<>\[\]{}]+))\s+(?i:for|on)\s+(?:(?i:the|my|your|our|their|this|that)\s+)?"
    r"(?:[\w-]+\s+){0,2}?(?i:log[ -]?in|sign[ -]?in|account)(?=\s*(?:[,.;:!?)\n]|$))"
)
_WINDOWS_USER = re.compile(r"[\w.-]+\\[\w.$-]+")  # CORP\jdoe
# The sentence names a user apart from the value ("user is qa@example.com", "as qa_tester").
_USER_NAMED = re.compile(r"(?i)\buser(?:name)?\s*(?:is|:|=)|[\w.+-]+@[\w-]+\.[\w.]+")
# A password named by a pronoun near talk of a login: "I reset it to Bluebird2024 for now, change it
# after you log in", "the old login stopped working so I changed it to X", "For the wiki I just used
# my usual one, X, so ask me if it locks you out".
_PRONOUN = re.compile(
    r"(?<![A-Za-z])(?:(?i:reset|resetting|changed|changing|set|setting)\s+(?i:it|that|this|them)"
    r"(?:\s+back)?\s+to|(?P<one>(?i:my|our|the|your)\s+(?i:usual|regular|standard|normal|go-to|default|same"
    r"|old|new|temporary|temp|current|favou?rite)\s+one\s*[,:–—-]))\s+(?P<bare>[^\s\"'`,;()<>\[\]{}]+)"
)
_LOGIN_TALK = re.compile(
    r"(?i)(?<![A-Za-z])(?:password|passwd|passphrase|passcode|pw|pwd|log(?:ged|ging|s)?[ -]?(?:in|on)|login"
    r"|sign(?:ed|ing|s)?[ -]?in|account|creds?|credentials|lock(?:s|ed)?\s+(?:you|me|us|them|him|her)\s+out"
    r"|locked\s+out)(?![A-Za-z])"
)
# Talk of a login after the value: a verb ("change it after you log in", "if it locks you out"), not
# "slow at login"; and for "my usual one, X", a password asked for ("if it asks for a password").
_LOGIN_TALK_AFTER = re.compile(
    r"(?i)(?<![A-Za-z])(?:log(?:ged|ging|s)?[ -]+(?:in|on|into)|sign(?:ed|ing|s)?[ -]+in(?:to)?"
    r"|lock(?:s|ed)?\s+(?:you|me|us|them|him|her)\s+out|locked\s+out|(?P<password>password|passwd|pw))"
    r"(?![A-Za-z])"
)
# A measure, a release or a time zone, not a password: 120s, 10GB; Python3.12, release-2024.3; UTC+2.
_MEASURE = re.compile(
    r"\d+(?:\.\d+)?[A-Za-z%]{1,3}|[A-Za-z][A-Za-z-]*\d+(?:\.\d+)+|[A-Z]{2,5}[+-]\d{1,2}(?::\d\d)?"
)
# A value with letters, digits and a sign, which a browser's or a protocol's name never has (Chrome109).
_SIGNED = re.compile(r"(?=\S*[0-9])(?=\S*[A-Za-z])(?=\S*[^\w\s])\S{6,}")
# A password in a language of another script, or one more of Latin's: "パスワードは X です", "密码是 X",
# "비밀번호는 X 입니다", "пароль от сервера: X", "lösenordet är X"; the value in Latin letters.
_OTHER_LANGUAGES = re.compile(
    r"(?:パスワード|暗証番号)\s*(?:は|:|=)|(?:密码|口令)\s*(?:是|为|:|=)|(?:비밀번호|패스워드|암호)\s*(?:는|은|:|=)"
    r"|(?i:пароль|парол[яи])(?:\s+(?:от|для|к)(?:\s+[^\s:—=-]+){1,4}?)?\s*(?::|—|-|=|\s+это)"
    r"|(?i:lösenord(?:et)?|passord(?:et)?|adgangskode(?:n)?|salasana|hasło|haslo|heslo|şifre(?:si)?|sifre)"
    r"(?:\s+(?:för|til|for|till|do|dla|k|pro|için|on|ke)(?:\s+[^\s:=]+){1,3}?)?"
    r"\s*(?::|=|\s+(?:är|er|on|to|jest|je|ist|:))"
)
_LATIN_VALUE = re.compile(r"\s*(?P<bare>[!-~]{4,64})")
_OTHER_LATIN_WORDS = ("passord", "adgangskode", "salasana", "haslo", "heslo", "sifre")  # in ASCII


def _login_value(text: str, match: re.Match[str]) -> tuple[int, int, str] | None:
    """The place of a value a login sentence gives (group dq, sq or bare) and the value, unless it
    is a stand-in, a way of signing in, an address or words apart."""
    groups = [g for g in ("dq", "sq", "bare") if g in match.re.groupindex]
    group = next(g for g in groups if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        end = sentence_end(text, start, end)
    value = text[start:end]
    if len(value) < 4 or stand_in(value, quoted=group != "bare") or value.lower() in SIGN_IN_METHODS:
        return None
    if ADDRESS.match(value) or len(value.split()) > 1 or "/" in value or _WINDOWS_USER.fullmatch(value):
        return None  # words ("using 'litellm login'"), a path or a protocol (HTTP/2), a user (CORP\jdoe)
    return start, end, value


def _logins(text: str) -> Iterator[tuple[str, int, int]]:
    """Passwords given to log in (_LOGIN_WITH, _GIVEN_FOR_LOGIN) or named by a pronoun near talk of
    a login (_PRONOUN): one that looks like a password, or a plain word where the sentence names the
    user apart ("as qa_tester", "user is qa@x.io")."""
    # (A quick look first at the words each needs: most texts hold none, and are read no further.)
    low = text.lower()
    logins = any(word in low for word in ("log", "sign", "account"))
    for pattern in (_LOGIN_WITH, _GIVEN_FOR_LOGIN) if logins else ():
        for match in pattern.finditer(text):
            found = _login_value(text, match)
            if found is None:
                continue
            start, end, value = found
            if match.group("bare") is not None and not (ends_clause(text, end) or _GOES_ON.match(text, end)):
                continue  # "log into the VM with Windows11 credentials": the value is a word of more
            back = max(match.start() - _TALK_BACK, 0)
            sentence = text[max(text.rfind("\n", back, match.start()) + 1, back) : _line_end(text, end)]
            user = ("as" in match.re.groupindex and match.group("as")) or _USER_NAMED.search(sentence)
            # Without a user named apart, a value with a sign (not Chrome109, SAML2).
            shaped = credential_like(value, "password") and not _MEASURE.fullmatch(value)
            if (shaped and (user or _SIGNED.fullmatch(value))) or (user and plain_password(value)):
                yield ("password", start, end)
    talk = any(word in low for word in ("pass", "pw", "log", "sign", "account", "cred", "lock"))
    for match in _PRONOUN.finditer(text) if talk else ():
        found = _login_value(text, match)
        if found is None:
            continue
        start, end, value = found
        if not credential_like(value, "password") or _MEASURE.fullmatch(value) or VERSION.match(value):
            continue
        # On its line or the line before, within _TALK_BACK characters either side.
        back = max(match.start() - _TALK_BACK, 0)
        line = text.rfind("\n", back, match.start())
        back = max(text.rfind("\n", back, line) + 1, back) if line >= 0 else back
        after = _LOGIN_TALK_AFTER.search(text, end, _line_end(text, end))
        if _LOGIN_TALK.search(text, back, match.start()) or (
            after is not None and (match.group("one") is not None or after.group("password") is None)
        ):
            yield ("password", start, end)
    other = not text.isascii() or any(word in low for word in _OTHER_LATIN_WORDS)
    for match in _OTHER_LANGUAGES.finditer(text) if other else ():
        latin = _LATIN_VALUE.match(text, match.end())
        if latin is not None:
            start, end = latin.span("bare")
            end = sentence_end(text, start, end)
            if credential_like(text[start:end], "password"):
                yield ("password", start, end)


# What may follow a value a login sentence gives and end its part: a conjunction ("with X and
# enable 2FA", "until we set up SSO").
_GOES_ON = re.compile(r"\s+(?i:and|then|but|so|until|till|if|or|before|after|to|from|for|on|in|at|when)\b")


def _line_end(text: str, at: int) -> int:
    """The end of the line ``at`` is on, _TALK_BACK characters after ``at`` at most."""
    newline = text.find("\n", at, at + _TALK_BACK)
    return newline if newline >= 0 else min(at + _TALK_BACK, len(text))


_FUNCTION_WORDS = frozenset(
    "my your his her our their the a an this that these those its me him them us you it".split()
)
# A password said a little after talk of one: "the password? in case it didn't arrive: hunter2";
# the talk within _TALK_BACK characters before, on the same line or the one before.
_TALK = re.compile(
    r"(?<![A-Za-z])(?i:password|passwd|passphrase|passcode|pw|clave|" + FOREIGN + r")(?![A-Za-z])"
)
_LAST_WORD = re.compile(r"(?m):[ \t]+(?P<value>[^\s\"'`<>\[\]{}()]+)[ \t]*$")
_TALK_BACK = 160
_PASSWORD_SHAPE = re.compile(r"(?=\S*[a-z])(?=\S*[0-9!#$%&*+?~^])[\w!#$%&*+?~^-]{6,64}")


def said_passwords(text: str) -> Iterator[tuple[str, int, int]]:
    """The credentials named in a sentence (_SAID) whose value looks like one, a password set to a
    value (_SET_TO) or given as one (_GIVEN_AS), a user and password after a login's name
    (_LOGIN_PAIR), and a password said a little after talk of one (:func:`_after_talk`), each as
    (kind, start, end)."""
    low = text.lower()
    for match in _SAID.finditer(text):
        found = _said_value(text, match)
        if found is not None:
            yield (kind_of(match.group("word")), *found)
    for match in _SET_TO.finditer(text):
        start = match.start("value")
        end = sentence_end(text, start, match.end("value"))
        value = text[start:end]
        if _ATTRIBUTE.search(match.group("between")) or value.lower() in SIGN_IN_METHODS:
            continue  # "Changed the VPN password policy to require MFA", "the login to passkeys"
        plain = plain_password(value) or passphrase(value, capital=False)
        if _shaped(value) or (plain and value.lower() not in _INFINITIVE and not ADDRESS.match(value)):
            yield ("password", start, end)
    for match in _PIN.finditer(text) if "PIN" in text or "pin" in text else ():
        yield ("password", *match.span("value"))
    for match in _USER_THEN_PASSWORD.finditer(text):
        start = match.start("value")
        end = sentence_end(text, start, match.end("value"))
        value, user = text[start:end], match.group("user")
        if not account_name(text, match.start("user"), user, value) or not assigned_value(value, "password"):
            continue  # "user id and password twice"
        if ADDRESS.match(value) or not (
            credential_like(value, "password") or _said_password(text, value, end)
        ):
            continue
        yield ("password", start, end)
    for match in _WORD_THEN_VALUE.finditer(text):
        start = match.start("value")
        end = sentence_end(text, start, match.end("value"))
        value = text[start:end]
        goes_on = ends_clause(text, end) or _GOES_ON.match(text, end) or text.startswith(" (", end)
        if goes_on and _shaped(value):
            yield ("password", start, end)
        elif ends_clause(text, end) and plain_password(value) and _WITH_BEFORE.search(text, 0, match.start()):
            # "pi@raspberrypi with password kittens": a plain word where who logs in is named
            line = text.rfind("\n", 0, match.start()) + 1
            if _LOGS_IN_AS.search(text, line, match.start()):
                yield ("password", start, end)
    for pattern in (_VALUE_IS_THE, _WIFI_KEY) if ("pass" in low or "pw" in low or "key" in low) else ():
        for match in pattern.finditer(text):
            start, end = match.span("value")
            if pattern is _WIFI_KEY:
                end = sentence_end(text, start, end)
            elif _ATTRIBUTE.match(text, match.end() + 1):
                continue  # "SHA-256 is the password hash"
            if _shaped(text[start:end]):
                yield ("password", start, end)
    for match in _GIVEN_AS.finditer(text):
        found = value_of(text, match, "password", plain=False)
        if found is not None:
            yield ("password", *found)
    yield from _login_pairs(text)
    yield from _after_talk(text)
    yield from _logins(text)
    for start, end in (*pair_passwords(text), *answered_passwords(text)):
        yield ("password", start, end)


# A user named, then the password: "Temporary credentials: user temp01, password Elderflower.",
# "Admin panel: user admin, pass vertigo55".
_USER_THEN_PASSWORD = re.compile(
    r"(?<![A-Za-z])(?i:user(?:name)?|login|account)[ \t]*:?[ \t]+"
    r"[`'\"]?(?P<user>[A-Za-z][\w.@+\\-]{0,63})[`'\"]?"
    r"[ \t]*[,;]?[ \t]+(?:(?i:and)[ \t]+)?(?i:password|passwd|pass|pwd|pw)[ \t]*:?[ \t]+"
    r"(?P<value>[^\s\"'`,;()<>\[\]{}]+)"
)
# A value, then what it is: "Popcorn!23 is the password.", "Mango_Tango (that's the wifi password)".
_VALUE_IS_THE = re.compile(
    r"(?<![^\s(\[\"'`:])(?P<value>[^\s\"'`,;()<>\[\]{}]{3,63}[^\s\"'`,;:()<>\[\]{}])"
    # one optional "(" between two runs of blanks: "[ \t]*\(?[ \t]*" reads a long run in square time
    r"[ \t]*(?:(?:\([ \t]*)?(?i:that['’]s|that\s+is|which\s+is)"
    r"|(?i:is|was)|=)[ \t]+(?i:the|my|our|your|his|her|their)[ \t]+"
    r"(?i:(?:new|wifi|wi-fi|admin|root|current|temporary"
    r"|temp|default|actual|real|shared|guest|vpn|login|account|master|old)[ \t]+){0,2}"
    r"(?i:password|passwd|passcode|passphrase|pw)(?![A-Za-z])"
)
# A wifi's key: "the SSID is AcmeCorp and the key is Dublin1916".
_WIFI = re.compile(r"(?i)(?<![A-Za-z])(?:wi-?fi|wlan|wpa2?|ssid)(?![A-Za-z])")
_WIFI_KEY = re.compile(
    r"(?i:(?<![A-Za-z])(?:wi-?fi|wlan|wpa2?|ssid|network)(?![A-Za-z])[^\n.]{0,80}?(?<![A-Za-z])key\s+(?:is|:|=))"
    r"\s+(?P<value>[^\s\"'`,;()<>\[\]{}]+)"
)
# Who logs in, named before "with password X": "as admin", "user admin", pi@raspberrypi.
_LOGS_IN_AS = re.compile(r"(?i)(?<![A-Za-z])(?:as|user(?:name)?|login)\s+\S|[\w.-]+@[\w.-]+|\bssh\b")
# A PIN given right after its name: "Voicemail PIN 4471", "pin code 0420" (a chip's pin is no PIN).
_PIN = re.compile(
    r"(?<![A-Za-z])(?:PIN|(?i:pin)[ \t]+(?i:code|number))[ \t]*[:#]?[ \t]*(?P<value>\d{4,8})(?![\d.,:/-]*\d)"
)


# A password right after its word, where the clause ends or goes on with a conjunction: "log into
# the bastion as breakglass with password Bergamot-Earl-Grey and rotate it", "set temporary password
# Orange#Bicycle, user must change", "user acme-ops, password Sapphire-Dawn (no digits)".
_WITH_BEFORE = re.compile(r"(?i)(?:with|using)\s+(?:the\s+|a\s+)?\Z")
_WORD_THEN_VALUE = re.compile(
    r"(?<![A-Za-z])(?i:password|passwd|passphrase|pwd|pw)[ \t]+(?P<value>[^\s\"'`,;()<>\[\]{}]{6,64})"
)


def _shaped(value: str) -> bool:
    """Whether a value a sentence gives without saying "is" looks like a password: letters with
    digits or signs, or words joined by hyphens with a capital (Bergamot-Earl-Grey); not a measure,
    a release or a technical name (argon2id, SHA-256)."""
    if _MEASURE.fullmatch(value) or VERSION.match(value) or TECHNICAL.fullmatch(value):
        return False
    if value.lower() in SIGN_IN_METHODS:
        return False
    return credential_like(value, "password") or passphrase(value)


def _said_value(text: str, match: re.Match[str]) -> tuple[int, int] | None:
    """The place of the value a _SAID match names, when it is a credential: a PIN's or a door
    code's digits, a quoted value that is no stand-in, or a bare one that looks like one."""
    word = match.group("word").lower()
    group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        if text[end : end + 1] in ("(", "["):
            return None  # token = b64encode(...), key = row['key']: code's value, not a credential
        end = sentence_end(text, start, end)
    value = text[start:end]
    if "code" in word and _WIFI.search(text, max(0, match.start() - 40), match.end()):
        # "le code wifi c'est chocolat": the wifi's code is its password
        found = credential_like(value, "password") or _said_password(text, value, end)
        found = found or _said_foreign_password(text, value, end)
    elif word in ("pin", "code"):
        # A PIN, not a pin of a chip (5V); a door's, a gate's or an alarm's code, not an error's,
        # with the sign its keypad takes (7391#, *2580).
        said = text[max(0, match.start() - 24) : match.end()]
        digits = value.strip("#*") if word == "code" else value
        before = text[max(0, match.start() - 40) : match.start()]
        locked = _LOCKED.search(said) is not None and not _NOT_A_DOOR_CODE.search(before)
        found = PIN.fullmatch(digits) is not None and (word == "pin" or locked)
    elif group != "bare" and not any(match.group(g) for g in ("asked", "paren", "apposed", "arrow")):
        found = assigned_value(value, word, quoted=True, literal=group == "sq")
    elif _PLAIN_WORDS.fullmatch(word) and (spaced := _spaced(text, start, end)) is not None:
        end, found = spaced, True  # "changed to Rocket Man 1972 (with the spaces)"
    elif match.group("its") and not ends_clause(text, end):
        # "the password's SHA-1 hash": a possessive, not "is"; but "password's sunflower88 btw"
        found = PASSWORD_WORD.match(word) is not None and word != "pass" and _shaped(value)
    elif word == "mdp":
        found = credential_like(value, "password")  # French shorthand; an MDP is a model too
    elif match.group("to") and not PASSWORD_WORD.match(word):
        found = bool(STRONGISH.fullmatch(value))  # "changed the token to X"
    elif any(match.group(g) for g in ("to", "asked", "paren", "apposed", "arrow")):
        # "changed the password to Fluffy2020!", not "sent the password to Jennifer."; a bare value
        # that looks like one ("set the BIOS password on the laptops to kiosk4321", "Quokka&Friends")
        found = group == "bare" and PASSWORD_WORD.match(word) is not None and word != "pass"
        found = found and _shaped(value) and not _ATTRIBUTE.search(text, match.end("word"), start)
        if match.group("apposed"):
            found = found and any(not c.isalpha() and c not in "-_" for c in value)
    elif word == "pass":  # a pass may be a bus's, or a compiler's: digits in it too
        found = credential_like(value, word) and any(c.isdigit() for c in value)
    elif _FOREIGN_PLAIN_WORDS.fullmatch(word) or (
        word == "clave" and _WIFI.search(text, match.start(), start)
    ):
        # "la contraseña es X", "la clave del wifi es frambuesa"
        found = credential_like(value, word) or _said_foreign_password(text, value, end)
    elif not _PLAIN_WORDS.fullmatch(word):
        found = credential_like(value, word)  # a key's, a token's: one that looks like one
    else:
        found = credential_like(value, word) or _said_password(text, value, end)
        found = found or _shaped(value)  # "is Pinecone-Lake until IT sets up SSO", "was set to Pelican-Brief"
    return (start, end) if found and not ADDRESS.match(value) else None


# A password of words apart said in a sentence: capitalised words and numbers, a number among
# them, up to the end of the clause ("Rocket Man 1972 (with the spaces)", "Blue Heron 88.").
_SPACED = re.compile(r"(?:[ \t]+(?:[A-Z][a-z]*|\d+|[A-Za-z]*\d\w*)){1,4}(?=[ \t]*(?:[(,.;!?\n—–]|$))")


def _spaced(text: str, start: int, end: int) -> int | None:
    """Where a password of words apart that begins with ``text[start:end]`` ends (_SPACED), or None."""
    first = text[start:end]
    if not (first[:1].isupper() or first.isdigit()):
        return None
    more = _SPACED.match(text, end)
    if more is None or not any(c.isdigit() for c in text[start : more.end()]):
        return None
    return more.end()


# The words of a password for which a plain word that ends a sentence is one ("the password is
# purplemonkey."): English, whose words for a state the checks know (wrong, required, stored).
_PLAIN_WORDS = re.compile(r"(?i)password|passwd|passphrase|pw")


def _said_password(text: str, value: str, end: int) -> bool:
    """Whether a plain word is a password named in a sentence ("my password is purplemonkey.",
    "the guest wifi password is wallaby-sunset"): one that is no state (wrong, required, stored,
    case-sensitive) and ends the sentence."""
    if stand_in(value) or len(value) < 6 or STATE.search(value):
        return False
    if not (value.isalpha() or passphrase(value, capital=False)):
        return False
    return ends_clause(text, end)


# Words of other languages that say how a password is (incorrecta, abgelaufen, expiré, sbagliata),
# and the endings of their participles and adjectives.
_FOREIGN_STATE = re.compile(
    r"(?i)^(?:ab|an|auf|aus|ein|mit|nach|vor|zu|zurück|um|weg|fest|frei)?ge\w+(?:t|en|d)$"
    r"|^(?:ver|be|er|zer|ent)\w+(?:t|en|d)$"  # (abgelaufen, gesperrt, veraltet, gewijzigd)
    r"|(?:é|ée|és|ées|ado|ada|ados|adas|ido|ida|idos|idas|ato|ata|ito|ita|uto|uta|eta|eto|iert|lich|ig|bar"
    r"|eux|euse|ivo|iva|oso|osa|mente|ário|ária|ario|aria|ide|ible|able)$"
    r"|^(?:incorrecta|incorrecto|correcta|correcto|segura|seguro|nueva|nuevo|vieja|viejo|larga|largo|corta"
    r"|corto|falsch|richtig|geheim|sicher|unsicher|vergessen|korrekt|falsche|incorrect|correct|faible|forte"
    r"|errada|errado|certa|certo|velha|velho|fraca|sbagliata|giusta|onbekend|bekannt|unbekannt|obligatoire"
    r"|obligatorio|obrigatoria|requerida|requerido|vacía|vacio|leer|vide|nieuw|oud|sterk|zwak|anders|diverso"
    r"|diferente|différent|différente|dasselbe|dieselbe|gleich|même|mismo|misma|mesmo|mesma|stesso|stessa"
    r"|inconnu|perdu|requis|temporal|onjuist|ungültig)$"
)
# The words of a password in other languages for which a plain word that ends a sentence is one
# ("la contraseña del wifi de la oficina es gatonegro"); not "clave", which is a key as often.
_FOREIGN_PLAIN_WORDS = re.compile(r"(?i)" + FOREIGN + r"|mdp")


def _said_foreign_password(text: str, value: str, end: int) -> bool:
    """Whether a plain word said after a password's word in another language is one: small
    letters, six or more, no word or ending that says how a password is, at the sentence's end."""
    if len(value) < 6 or not value.isalpha() or not value[1:].islower() or stand_in(value):
        return False  # (a German noun has its capital: "Passwort für das Gäste-WLAN: Regenbogen")
    return _FOREIGN_STATE.search(value) is None and ends_clause(text, end)


def _login_pairs(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords of user / password pairs after a login's name (_LOGIN_PAIR): one that looks
    like a password, or a plain word of small letters after a user name ("admin / stagingrocks");
    not "sign in with Google / GitHub", "log in with your username / password"."""
    for match in _LOGIN_PAIR.finditer(text):
        user = match.group("user")
        start = match.start("value")
        end = sentence_end(text, start, match.end("value"))
        value = text[start:end]
        if user.lower() in _FUNCTION_WORDS or stand_in(user) or stand_in(value) or ADDRESS.match(value):
            continue
        if {user.lower(), value.lower()} & SIGN_IN_METHODS:
            continue  # "log in with google / facebook"
        if "/" in value or VERSION.match(value):
            continue  # a path, a role in an ARN (ACCOUNT:assumed-role/NAME), a version
        if not match.group("connector").strip() and not STRONGISH.fullmatch(value):
            continue  # "service account svc-jira / J1raRocks!": without "is" or ":", a strong one
        if credential_like(value, "password") or (plain_password(value) and user.islower()):
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
        if not _PASSWORD_SHAPE.fullmatch(value) or re.fullmatch(r"[0-9a-f]+", value) or VERSION.match(value):
            continue
        line = text.rfind("\n", 0, match.start()) + 1
        if len(text[line : match.start()].split()) < 2:
            continue  # "hasher: argon2id": a key of a file's, not a sentence
        back = max(text.rfind("\n", 0, max(line - 1, 0)) + 1 if line else 0, match.start() - _TALK_BACK)
        if _TALK.search(text, back, match.start()) and not stand_in(value):
            yield ("password", start, end)

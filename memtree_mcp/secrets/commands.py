"""Where a command line holds a password: one table of the tools whose documented syntax takes one.

A password given to a command (``zip -P Summer99``, ``keytool -storepass X``, ``smbclient -U
jdoe%X``, ``openssl ... -passout pass:X``, ``htpasswd -b file user X``, ``rabbitmqctl add_user
monitoring X``, ``net use \\\\host\\share X /user:CORP\\jsmith``, ``sqlplus scott/tiger@db``) is
found by reading the line as the tool reads it: :data:`TOOLS` says, for each tool, how it takes
the password (after which flag, glued to which flag, behind which prefix, as which positional
word, as the second half of ``user<sep>password``), and :func:`command_passwords` splits the
command into words as a shell does (quotes kept together; the command ends at a newline, a pipe,
``;``, ``&``, a redirection, a comment or the next tool the table names) and finds the word. A
value piped into a command that reads a password on its standard input (``echo 'deploy:X' |
chpasswd``, ``echo X | passwd --stdin``, ``echo X | docker login --password-stdin``) is found by
:data:`PIPED`.

This module finds places only; ``secrets/passwords.py`` judges the value (no placeholder, no
variable) and how sure the place is (:class:`Given`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Takes:
    """How a tool takes a password on its command line (a row of :data:`TOOLS`)."""

    flags: tuple[str, ...] = ()  # the next word, or after "=": -storepass X, -P X, --pass=X
    glued: tuple[str, ...] = ()  # glued to the flag: -pX, /p:X
    prefix: str = ""  # the value starts with this, which is not part of it: pass:X
    split: str = ""  # the value is user<split>password: -U jdoe%X, -u user:X, scott/tiger
    after: str = ""  # counted only after a word that matches this: add_user, login, \\host\share
    position: int = 0  # the password is this positional word (after ``after``); -1: the last
    arity: tuple[int, ...] = ()  # ... only when there are this many positional words
    valued: tuple[str, ...] = ()  # flags whose next word is their value, not a positional word
    when: str = ""  # only when a short flag holds each of these letters (htpasswd -b)
    unless: str = ""  # ... and none of these (htpasswd -n takes no file)
    windows: bool = False  # flags begin with "/" (net use /user:X)


# The tools, each with how it takes a password (names separated by spaces share a row).
TOOLS: tuple[tuple[str, Takes], ...] = (
    (
        "mysql mysqldump mysqladmin mysqlimport mysqlshow mysqlcheck mariadb mariadb-dump",
        Takes(glued=("-p",)),
    ),
    ("mysqladmin", Takes(after="password", position=1, arity=(1,))),
    (
        "docker podman nerdctl helm buildah skopeo oc cf az argocd",
        Takes(after="login", flags=("-p", "--password")),
    ),
    ("sshpass", Takes(flags=("-p",), glued=("-p",))),
    ("redis-cli", Takes(flags=("-a", "--pass"))),
    ("curl", Takes(flags=("-u", "--user", "-U", "--proxy-user"), split=":")),
    ("wget", Takes(flags=("--password", "--http-password", "--ftp-password", "--proxy-password"))),
    ("http https", Takes(flags=("-a", "--auth"), split=":")),  # HTTPie
    ("ab", Takes(flags=("-A", "-P"), split=":")),
    ("zip unzip zipcloak", Takes(flags=("-P", "--password"))),
    ("7z 7za 7zr rar unrar", Takes(glued=("-p",))),
    ("smbclient rpcclient smbcacls smbget smbmap", Takes(flags=("-U", "--user"), split="%")),
    (
        "ldapsearch ldapadd ldapmodify ldapdelete ldapmodrdn ldappasswd ldapwhoami ldapcompare",
        Takes(flags=("-w",)),
    ),
    ("sqlcmd bcp osql isql", Takes(flags=("-P",))),
    ("mongo mongosh mongodump mongorestore mongoexport mongoimport mongostat mongotop", Takes(flags=("-p",))),
    ("ipmitool mosquitto_pub mosquitto_sub", Takes(flags=("-P",))),
    ("smbpasswd", Takes(flags=("-w",))),  # the LDAP admin's password
    ("psexec paexec rdesktop", Takes(flags=("-p",))),
    ("lftp", Takes(flags=("-u",), split=",")),
    (
        "keytool",
        Takes(
            flags=(
                "-storepass",
                "-keypass",
                "-srcstorepass",
                "-deststorepass",
                "-srckeypass",
                "-destkeypass",
                "-new",
            )
        ),
    ),
    ("openssl", Takes(flags=("-passout", "-passin", "-pass", "-password", "-passwd"), prefix="pass:")),
    ("openssl", Takes(flags=("-k",))),
    ("openssl", Takes(after="passwd", position=1, arity=(1,), valued=("-salt", "-in"))),
    ("ssh-keygen", Takes(flags=("-N", "-P"))),
    ("snmpwalk snmpget snmpset snmpbulkwalk snmpgetnext snmptrap", Takes(flags=("-A", "-X"))),
    ("rabbitmqctl", Takes(after="add_user|change_password", position=2, arity=(2,))),
    ("htpasswd", Takes(when="b", unless="n", position=3, arity=(3,), valued=("-C", "-r"))),
    ("htpasswd", Takes(when="nb", position=2, arity=(2,), valued=("-C", "-r"))),
    # net use Z: \\host\share X /user:CORP\jsmith; net user NAME X /add
    ("net", Takes(after=r"\\\\\S+", position=1, arity=(1,), windows=True)),
    ("net", Takes(after="user", position=2, arity=(2,), windows=True)),
    ("nmcli", Takes(after=r"password|wifi-sec\.psk|802-11-wireless-security\.psk", position=1)),
    ("wpa_passphrase", Takes(position=2, arity=(2,))),
    ("iwconfig", Takes(after="key", position=1, prefix="s:")),
    ("mkpasswd", Takes(position=1, valued=("-m", "--method", "-S", "--salt", "-R", "--rounds"))),
    ("useradd usermod", Takes(flags=("-p", "--password"))),
    ("sqlplus expdp impdp sqlldr rman dgmgrl", Takes(position=1, split="/")),  # scott/tiger@db
    ("xfreerdp wlfreerdp sdl-freerdp", Takes(glued=("/p:",))),
    ("cmdkey", Takes(glued=("/pass:",))),
    ("wmic", Takes(glued=("/password:",))),
    ("schtasks", Takes(flags=("/rp", "/RP", "/Rp"))),
)

_BY_TOOL: dict[str, tuple[Takes, ...]] = {}
for _names, _takes in TOOLS:
    for _name in _names.split():
        _BY_TOOL[_name] = (*_BY_TOOL.get(_name, ()), _takes)

# A word that may name a tool: at the start of the text, after a space, a quote, a path or a
# shell's separators; followed by a space or a tab.
_TOOL = re.compile(r"(?<![^\s`(|;&\"'/\\])[A-Za-z0-9][\w.+-]{0,30}(?=[ \t])")
# The words of a command: quoted strings kept whole, up to what ends a command.
_WORD = re.compile(r"[ \t]*((?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"|;&)`<>])+)")
_WORDS_READ = 40  # a command's words read at most (a long line of many tools reads each once)


@dataclass(frozen=True, slots=True)
class Given:
    """A password's place on a command line, and how plainly the line gives it."""

    start: int
    end: int
    quoted: str  # the quote around it ('"' or "'"), or ""
    shaped: bool  # given in a form that says it is one: user%X, user:X, pass:X, -pX
    # The value follows a flag of a command that begins its line (after a prompt or sudo): a
    # command, not a sentence that names a tool ("nmcli asks for the password interactively").
    command_line: bool


def command_passwords(text: str) -> Iterator[Given]:
    """The places in ``text`` where a command of :data:`TOOLS` or :data:`PIPED` takes a password."""
    for match in _TOOL.finditer(text):
        name = match.group().lower().removesuffix(".exe")
        rows = _BY_TOOL.get(name)
        if rows is None:
            continue
        words = _words(text, match.end())
        begins = _begins_line(text, match.start())
        for takes in rows:
            for at in _given(text, words, takes):
                found = _inside(text, at, takes, begins and not takes.position)
                if found is not None:
                    yield found
    yield from _piped(text)


def _words(text: str, at: int) -> list[tuple[int, int]]:
    """The words of the command whose name ends at ``at``: each as (start, end) in ``text``."""
    words: list[tuple[int, int]] = []
    while len(words) < _WORDS_READ:
        match = _WORD.match(text, at)
        if match is None or match.start(1) == match.end(1):
            break
        start, end = match.span(1)
        word = text[start:end]
        if word.startswith("#") or (words and _BY_TOOL.get(word.lower()) and text[start - 1] not in "\"'"):
            break  # a comment, or the next tool on the line: its own command
        words.append((start, end))
        at = end
    return words


def _given(text: str, words: list[tuple[int, int]], takes: Takes) -> Iterator[tuple[int, int, bool]]:
    """Where ``takes`` finds passwords among a command's ``words``: (start, end, glued to a flag)."""
    texts = [text[start:end] for start, end in words]
    first = 0
    if takes.after:
        after = re.compile(takes.after, re.IGNORECASE)
        first = next((i + 1 for i, word in enumerate(texts) if after.fullmatch(word)), -1)
        if first < 0:
            return
    if takes.when or takes.unless:
        letters = "".join(word[1:] for word in texts if re.fullmatch(r"-[A-Za-z]+", word))
        if not all(c in letters for c in takes.when) or any(c in letters for c in takes.unless):
            return
    if takes.position:
        found = _positional(words, texts, first, takes)
        if found is not None:
            yield found
        return
    for i in range(first, len(texts)):
        word, (start, end) = texts[i], words[i]
        for flag in takes.flags:  # flags are case-sensitive: mysql -P is a port, ssh-keygen -n not -N
            if word == flag and i + 1 < len(texts) and not texts[i + 1].startswith("-"):
                yield (*words[i + 1], False)
            elif word.startswith(flag + "="):
                yield (start + len(flag) + 1, end, False)
        for flag in takes.glued:
            if word.startswith(flag) and len(word) > len(flag):
                yield (start + len(flag), end, True)


def _positional(
    words: list[tuple[int, int]], texts: list[str], first: int, takes: Takes
) -> tuple[int, int, bool] | None:
    """The ``takes.position``-th word after ``first`` that is no flag or a flag's value."""
    positional: list[int] = []
    skip = False
    for i in range(first, len(texts)):
        word = texts[i]
        if skip:
            skip = False
        elif word.startswith("-") or (takes.windows and word.startswith("/")):
            skip = word in takes.valued
        else:
            positional.append(i)
    if takes.arity and len(positional) not in takes.arity:
        return None
    if len(positional) < abs(takes.position):
        return None
    at = positional[takes.position - 1 if takes.position > 0 else takes.position]
    return (*words[at], False)


def _inside(text: str, word_at: tuple[int, int, bool], takes: Takes, begins: bool) -> Given | None:
    """The password's place within the word at ``word_at`` (start, end, glued to its flag): inside
    its quotes, behind ``takes.prefix``, after ``takes.split``."""
    start, end, shaped = word_at
    if end <= start:
        return None
    quote = text[start] if text[start] in "\"'" else ""
    if quote and end - start >= 2 and text[end - 1] == quote:
        start, end = start + 1, end - 1
    elif quote:
        start += 1
    word = text[start:end]
    if takes.prefix:
        if word.startswith(takes.prefix):
            start, word, shaped = start + len(takes.prefix), word[len(takes.prefix) :], True
        elif takes.flags:
            return None  # -passout env:VAR, file:path, stdin: no password on the line
    if takes.split:
        user, sep, rest = word.partition(takes.split)
        if not sep or not user:
            return None
        start, word, shaped = start + len(user) + 1, rest, True
        if takes.split == "/":
            at = word.find("@")  # scott/tiger@db
            end = start + (at if at >= 0 else len(word))
    return Given(start, end, quote, shaped, begins) if end > start else None


_PROMPT = re.compile(r"\s*(?:[$#>%]\s*|PS [^>\n]*>\s*|\w+@[\w.-]+:[^$#\n]*[$#]\s*)?(?:sudo\s+(?:-\S+\s+)*)?")


def _begins_line(text: str, at: int) -> bool:
    """Whether the command at ``at`` begins its line (after a prompt or sudo)."""
    line = text.rfind("\n", 0, at) + 1
    # (A prompt is short: a long line before the command is no prompt, and is not read again.)
    return at - line <= 80 and _PROMPT.fullmatch(text, line, at) is not None


# What reads a password on its standard input: a tool named for one (chpasswd, passwd, vncpasswd,
# smbpasswd, htpasswd), kinit, cryptsetup, sudo -S, and any tool given a flag whose name says both a
# password and standard input (--password-stdin, --passwd-on-stdin, --stdin-password), or a password
# and a value that means standard input (-passin stdin, -pass stdin, --password-file /dev/stdin,
# --password-file=-, --passphrase-fd 0).
_STDIN_FLAG = (
    r"\s-{1,2}(?:[\w-]*(?:pass|pw)[\w-]*stdin|stdin[\w-]*(?:pass|pw)[\w-]*"
    r"|[\w-]*(?:pass|pw)[\w-]*(?:[ \t]+|=)(?:stdin|-|/dev/stdin|fd:0)(?![\w/-])"
    r"|[\w-]*(?:pass|pw)[\w-]*-fd[ \t]+0)(?![\w-])"
)
_READER = (
    r"(?P<tool>[\w-]*passwd\b|kinit\b|cryptsetup\b|sudo\s+(?:-\S+\s+)*-S\b"
    r"|[^|\n;&<]{0,160}?" + _STDIN_FLAG + r")"
)
# A value echoed into such a command: echo 'deploy:X' | chpasswd, echo X | passwd --stdin,
# printf '%s' X | tool --password-stdin.
PIPED = re.compile(
    r"\b(?:echo(?:\s+-[neE]+)*|printf(?:\s+(?:'%s[^'\n]*'|\"%s[^\"\n]*\"))?)\s+"
    r"(?P<value>'[^'\n]*'|\"[^\"\n]*\"|[^\s|;&'\"]+)\s*\|\s*(?:sudo\s+(?:-\S+\s+)*)?" + _READER
)
# A value given to such a command as a here-string: chpasswd <<< 'deploy:X', tool --passwd-on-stdin <<< X,
_HERE = re.compile(r"<<<[ \t]*(?P<value>'[^'\n]*'|\"[^\"\n]*\"|[^\s|;&'\"]+)")
# ... or as a here-document's first line: tool --password-stdin <<EOF, X, EOF.
_HEREDOC = re.compile(
    r"(?<!<)<<-?[ \t]*(?P<q>['\"]?)[A-Za-z_]\w*+(?P=q)[^\n]*+\n[ \t]*+(?P<value>[^\s'\"]++)[ \t]*+\n"
)
_READS_STDIN = re.compile(
    r"(?:^|[\s/])(?:[\w-]*passwd\b|kinit\b|cryptsetup\b|sudo\s+(?:-\S+\s+)*-S\b)|" + _STDIN_FLAG
)


# A value written into a file named for a password: echo 'X' > /etc/rsync.pass, echo X >> pass.txt
# (a file of secrets: .vnc/passwd, rsyncd.secrets, creds).
_WRITTEN = re.compile(
    r"\b(?:echo(?:\s+-[neE]+)*|printf(?:\s+(?:'%s[^'\n]*'|\"%s[^\"\n]*\"))?)\s+"
    r"(?P<value>'[^'\n]*'|\"[^\"\n]*\"|[^\s|;&'\"<>]+)\s*>>?\s*[^\s|;&]*?"
    r"(?i:pass(?:wd|word)?|pwd|secrets?|creds?|credentials)[^\s|;&/]*(?=$|[\s|;&])"
)


def _piped(text: str) -> Iterator[Given]:
    """The passwords echoed, here-stringed or given as a here-document's first line to a command that
    reads one on its standard input."""
    for match in _WRITTEN.finditer(text) if ">" in text else ():
        yield from _stdin_value(text, match, "", _begins_line(text, match.start()))
    for match in PIPED.finditer(text) if "|" in text else ():
        yield from _stdin_value(text, match, match.group("tool"), _begins_line(text, match.start()))
    for match in [*_HERE.finditer(text), *_HEREDOC.finditer(text)] if "<<" in text else []:
        back = max(match.start() - 200, 0)
        begin = max(back, *(text.rfind(sign, back, match.start()) + 1 for sign in "|;&\n"))
        command = text[begin : match.start()]
        if not any(word in command for word in ("pass", "pw", "kinit", "cryptsetup", "-S")):
            continue  # (a quick look first: many here-strings feed no reader of a password)
        reader = _READS_STDIN.search(command)  # in the command the value goes to
        if reader is not None:
            yield from _stdin_value(text, match, reader.group().lstrip(" \t\n/"), True)


def _stdin_value(text: str, match: re.Match[str], tool: str, begins: bool) -> Iterator[Given]:
    """The password a command reads from ``match``'s value (group ``value``): inside its quotes,
    after ``user:`` for chpasswd, up to an escaped newline (echo -e "X\\nX" | passwd)."""
    start, end = match.span("value")
    value = match.group("value")
    quote = value[0] if value[0] in "\"'" else ""
    if quote:
        start, end, value = start + 1, end - 1, value[1:-1]
    if tool.startswith("chpasswd"):
        user, sep, _ = value.partition(":")
        if not sep:
            return
        start += len(user) + 1
        value = value[len(user) + 1 :]
    newline = value.find("\\n")
    if newline >= 0:
        end = start + newline
    if end > start:
        yield Given(start, end, quote, True, begins)

"""Passwords in the places file formats keep them, which no assignment to a credential's name shows.

A line of a file that keeps passwords in a layout of its own, where the text names the file
(``.pgpass``'s ``host:port:database:user:password``, pgbouncer's userlist.txt ``"user" "X"``, rsync's
secrets ``user:X``, pppd's chap-secrets, davfs2's secrets, OpenVPN's auth-user-pass file of a user
line and a password line), a line that says what it holds (ipsec.secrets' ``: PSK "X"``, dovecot's
``{PLAIN}X``), a credential's name and value side by side (Kubernetes' ``- name: DB_PASSWORD`` /
``value: X``, an ECS task definition, CloudFormation's ParameterKey/ParameterValue), ``user:X``
under a credentials key, a configuration directive that takes a password after a space (redis.conf's
``requirepass X``, ldap.conf's ``bindpw X``), an XML element its name or key attribute names for a
credential (``<property name="hibernate.connection.password">X</property>``), and a row of a table
a tool prints (``vault kv get``: ``password    X``). ``secrets/credentials.py`` judges each value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_mcp.secrets.credentials import (
    NAME,
    NAMED,
    SIGN_IN_METHODS,
    assigned_value,
    bare_end,
    credential_like,
    kind_of,
    reads_as_text,
    stand_in,
    value_of,
)

# Files that keep passwords in a layout of their own, read where the text names the file (elsewhere
# their lines are too many other things): what names it, and a line of it with the password as
# ``value`` (or ``dq``, in quotes).
_NAMED_FILES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    # .pgpass (or PGPASSFILE): host:port:database:user:password
    (
        re.compile(r"(?i)pgpass"),
        re.compile(r"(?<![\w.:*-])[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.@*-]+:(?P<value>[^\s'\"]+)"),
    ),
    # pgbouncer's userlist.txt: "user" "password"
    (
        re.compile(r"(?i)userlist\.txt|pgbouncer"),
        re.compile(r'(?m)^[ \t]*"[^"\n]+"[ \t]+"(?P<dq>[^"\n]+)"[ \t]*$'),
    ),
    # rsync's secrets file: user:password
    (
        re.compile(r"(?i)rsyncd?\.secrets|secrets file"),
        re.compile(r"(?m)^[ \t]*[\w.@+-]{1,64}:(?P<value>[^\s:#]\S*)[ \t]*$"),
    ),
    # pppd's chap-secrets and pap-secrets: client server secret [addresses]
    (
        re.compile(r"(?i)(?:chap|pap)-secrets"),
        re.compile(
            r'(?m)^[ \t]*(?!#)(?:"[^"\n]+"|\S+)[ \t]+(?:"[^"\n]*"|\S+)[ \t]+'
            r'(?:"(?P<dq>[^"\n]*)"|(?P<value>[^\s"]+))'
        ),
    ),
    # davfs2's secrets: url user password
    (
        re.compile(r"(?i)davfs2"),
        re.compile(r"(?m)^[ \t]*(?!#)\S+[ \t]+\S+[ \t]+(?P<value>\S+)[ \t]*$"),
    ),
)
_FILE_WORDS = ("pgpass", "userlist", "pgbouncer", "rsync", "secrets", "davfs2")  # what the names need
# What says what it holds wherever it is: ipsec.secrets' ": PSK "X"" (and XAUTH, EAP), dovecot's
# {PLAIN}X (a password stored in the clear, as the scheme says).
_SELF_NAMED = re.compile(
    r"(?<![\w])(?::[ \t]*(?:PSK|XAUTH|EAP|NTLM)[ \t]+(?:\"(?P<dq>[^\"\n]*)\"|(?P<bare>[^\s\"#]+))"
    r"|\{(?i:plain|cleartext|clear|plaintext)\}(?P<value>[^\s:'\"]+))"
)
# Files of lines that alternate a user and a password (OpenVPN's auth-user-pass file, vsftpd's
# virtual users before db_load), named so: a run of lines of one word each, user then password.
_ALTERNATING = re.compile(r"(?i)auth-user-pass|vsftpd|virtual[_ ]users")
_ONE_WORD_LINES = re.compile(r"(?m)(?:^[ \t]*[^\s#]\S{0,127}[ \t]*(?:\n|\Z))+")  # not a comment
# ... or a file named for what it holds, by a comment, a cat or a line of its own, with its lines
# right after: /etc/openvpn/auth.txt, ~/.vpn/creds, credentials.txt, login.conf, pass.txt.
_HOLDS = r"(?i:auth|creds?|credentials|logins?|pass|passwd|passwords?|userpass|user-pass|vpn-?creds?)"
_CREDENTIALS_FILE = re.compile(
    r"(?m)^[^\n]{0,120}?(?:(?:[~\w.-]{0,64}/){1,12}\.?" + _HOLDS + r"(?:\.\w{1,6})?"
    r"|(?<![\w./-])\.?" + _HOLDS + r"\.(?:txt|conf|cfg|creds?|pass|auth|dat|secrets?))(?![\w/-])[^\n]*\n"
)
# A name and its value side by side: Kubernetes' env (- name: DB_PASSWORD / value: X), an ECS task
# definition ({"name": "DB_PASSWORD", "value": "X"}), CloudFormation's ParameterKey=DBPassword,
# ParameterValue=X; not valueFrom.
_PAIR = re.compile(
    r"(?<![A-Za-z])(?i:(?:parameter)?(?:name|key))[\"']?[ \t]*[:=][ \t]*[\"']?(?P<name>[\w.-]{1,80})[\"']?"
    r"[ \t]*(?:,|\n)\s{0,40}?(?:-[ \t]+)?[\"']?(?i:(?:parameter)?value)[\"']?[ \t]*[:=][ \t]*"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"',}\]]+))"
)
# A user and password under a credential's key: credentials: deploy:X, BASIC_AUTH=admin:X, and
# NEO4J_AUTH=neo4j/X (a slash, where the name ends in AUTH or CREDENTIALS).
_USER_PASS = re.compile(
    r"(?<![A-Za-z])(?i:credentials?|creds|userpass|user_pass|basic[_-]?auth|auth)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?P<user>[A-Za-z][\w.@+\\-]{0,63})(?P<sep>[:/])(?P<value>[^\s\"',;}]+)"
)
# A configuration directive that takes a password after a space: redis.conf's requirepass and
# masterauth, ldap.conf's bindpw, a kickstart's rootpw, keepalived's auth_pass, bitcoin.conf's
# rpcpassword.
_DIRECTIVE = re.compile(
    r"(?<![\w-])(?:requirepass|masterauth|bindpw|rootpw|auth_pass|rpcpassword)(?:[ \t]+--plaintext)?[ \t]+"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`-][^\s\"'`]*))"  # not a flag: --iscrypted
)
# An XML element named for a credential by its name or key attribute, with the value in a value
# attribute or as its text (or its <value> child's): Hibernate's <property
# name="hibernate.connection.password">X</property>, web.config's <add key="DbPassword" value="X"
# />, <entry key="mail.smtp.password">X</entry>, <param name="password" value="X"/>, .NET's
# <setting name="AdminPassword"><value>X</value></setting>. Not the words of a user interface's
# resources (Android's <string name="show_password">Show</string>, a translation's <message>).
_XML_NAMED = re.compile(
    r"<(?!(?i:string|message|msg|label|text|title|item|source|target|trans-unit|description|hint)\b)[\w:.-]+\s[^<>]{0,200}?(?<![\w-])(?i:name|key)\s*=\s*(?P<nq>[\"'])(?P<name>[\w.:-]{1,120})(?P=nq)"
    r"(?:[^<>]{0,200}?(?<![\w-])(?i:value)\s*=\s*(?P<q>[\"'])(?P<attr>[^\"'\n]{0,200})(?P=q)"
    r"|[^<>]{0,200}?(?<!/)>\s{0,80}(?:<(?i:value)>)?(?P<text>[^<\n]{1,200})</)"
)
# ... or by a <name> child, its value in the <value> after it (Hadoop's and Hive's *-site.xml:
# <property><name>javax.jdo.option.ConnectionPassword</name><value>X</value></property>).
_XML_NAME_VALUE = re.compile(
    r"<(?i:name)>[ \t]*(?P<name>[\w.:-]{1,120})[ \t]*</(?i:name)>\s{0,80}"
    r"<(?i:value)>(?P<text>[^<\n]{1,200})</"
)
# A row of a table a tool prints (vault kv get, a describe): a credential's name, two spaces or
# more, and a value that ends the line.
_ROW = re.compile(r"(?m)^[ \t]*" + NAME + r"[ \t]{2,}(?P<value>[^\s\"'`]+)[ \t]*$")


def format_passwords(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords in the places file formats keep them, each as (kind, start, end): a .pgpass
    line, a credential's name and value side by side, user:password under a credentials key, a
    configuration directive, an XML element named for one by its name or key attribute, a row of a
    table a tool prints."""
    low = text.lower()  # (a quick look first at the words each needs: most texts hold none)
    named_files = _NAMED_FILES if any(word in low for word in _FILE_WORDS) else ()
    for names, file_line in named_files:
        if names.search(text):
            for match in file_line.finditer(text):
                found = _given(text, match)
                if found is not None:
                    yield ("password", *found)
    self_named = "{" in text or any(word in text for word in ("PSK", "XAUTH", "EAP", "NTLM"))
    for match in _SELF_NAMED.finditer(text) if self_named else ():
        found = _given(text, match)
        if found is not None:
            yield ("password", *found)
    if any(word in low for word in ("auth-user-pass", "vsftpd", "virtual")) and _ALTERNATING.search(text):
        yield from _alternating(text)
    elif "\n" in text and any(word in low for word in ("auth", "cred", "login", "pass")):
        at = 0
        while (named := _CREDENTIALS_FILE.search(text, at)) is not None:
            run = _ONE_WORD_LINES.match(text, named.end())
            at = named.end() if run is None else run.end()  # (a run is read once, not once a name in it)
            if run is not None:
                yield from _alternating(text, run.start(), run.end())
    for match in _PAIR.finditer(text):
        named = NAMED.search(match.group("name"))
        found = value_of(text, match, "password" if named is None else named.group("word"))
        if named is not None and found is not None:
            yield (kind_of(named.group("word")), *found)
    for match in _USER_PASS.finditer(text):
        start, end = match.span("value")
        end = bare_end(text, start, end)
        value, user = text[start:end], match.group("user")
        if match.group("sep") == "/" and (
            "/" in value or user.isupper() or {user.lower(), value.lower()} & SIGN_IN_METHODS
        ):
            continue  # a path or a choice of ways to sign in (DEFAULT_AUTH=ldap/kerberos, PLAIN/SCRAM)
        if assigned_value(value, "password"):
            yield ("password", start, end)
    for match in _DIRECTIVE.finditer(text):
        line = text.rfind("\n", 0, match.start()) + 1
        found = value_of(text, match, "password", plain=not text[line : match.start()].strip())
        if found is not None:
            yield ("password", *found)
    xml = [*_XML_NAMED.finditer(text), *_XML_NAME_VALUE.finditer(text)] if "<" in text else []
    for match in xml:
        named = NAMED.search(match.group("name"))
        group = "attr" if "attr" in match.re.groupindex and match.group("attr") is not None else "text"
        start, end = match.span(group)
        value = text[start:end]
        if named is None or reads_as_text(value) or stand_in(value, quoted=True):
            continue
        if assigned_value(value, named.group("word"), quoted=True):
            yield (kind_of(named.group("word")), start, end)
    for match in _ROW.finditer(text):  # a cell may be a name (token  document_id): one that looks like one
        start, end = match.span("value")
        if credential_like(text[start:end], match.group("word")):
            yield (kind_of(match.group("word")), start, end)


def _given(text: str, match: re.Match[str]) -> tuple[int, int] | None:
    """The place of a file line's password (group ``dq`` in quotes, else ``value`` or ``bare``)
    when it is no stand-in."""
    groups = [g for g in ("dq", "value", "bare") if g in match.re.groupindex]
    group = next(g for g in groups if match.group(g) is not None)
    start, end = match.span(group)
    if group != "dq":
        end = bare_end(text, start, end)
    if end > start and assigned_value(text[start:end], "password", quoted=group == "dq"):
        return start, end
    return None


def _alternating(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[str, int, int]]:
    """The passwords of a run of one-word lines (in ``text[start:end]``) that alternate a user and a
    password: every second line of a run of an even number of lines (an odd run says no such thing)."""
    for run in _ONE_WORD_LINES.finditer(text, start, len(text) if end is None else end):
        lines = list(re.finditer(r"\S+", run.group()))
        if len(lines) < 2 or len(lines) % 2:
            continue
        for user, password in zip(lines[::2], lines[1::2], strict=True):
            start, end = run.start() + password.start(), run.start() + password.end()
            named = re.fullmatch(r"[\w.@+\\-]{1,64}", user.group()) is not None  # a user's name
            # A password's shape too: OpenVPN's own one-word directives (nobind, persist-key) are none.
            if named and credential_like(text[start:end], "password"):
                yield ("password", start, end)

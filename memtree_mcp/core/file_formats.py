"""Passwords in the places file formats keep them, which no assignment to a credential's name shows.

A ``.pgpass`` line (``host:port:database:user:password``, read where the text names .pgpass or
PGPASSFILE), a credential's name and value side by side (Kubernetes' ``- name: DB_PASSWORD`` /
``value: X``, an ECS task definition, CloudFormation's ParameterKey/ParameterValue), ``user:X``
under a credentials key, a configuration directive that takes a password after a space (redis.conf's
``requirepass X``, ldap.conf's ``bindpw X``), and a row of a table a tool prints (``vault kv get``:
``password    X``). ``core/credentials.py`` judges each value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_mcp.core.credentials import (
    NAME,
    NAMED,
    assigned_value,
    bare_end,
    credential_like,
    kind_of,
    reads_as_text,
    stand_in,
    value_of,
)

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
# A row of a table a tool prints (vault kv get, a describe): a credential's name, two spaces or
# more, and a value that ends the line.
_ROW = re.compile(r"(?m)^[ \t]*" + NAME + r"[ \t]{2,}(?P<value>[^\s\"'`]+)[ \t]*$")


def format_passwords(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords in the places file formats keep them, each as (kind, start, end): a .pgpass
    line, a credential's name and value side by side, user:password under a credentials key, a
    configuration directive, an XML element named for one by its name or key attribute, a row of a
    table a tool prints."""
    if "pgpass" in text.lower():
        for match in _PGPASS.finditer(text):
            start, end = match.span("value")
            end = bare_end(text, start, end)
            if assigned_value(text[start:end], "password"):
                yield ("password", start, end)
    for match in _PAIR.finditer(text):
        named = NAMED.search(match.group("name"))
        found = value_of(text, match, "password" if named is None else named.group("word"))
        if named is not None and found is not None:
            yield (kind_of(named.group("word")), *found)
    for match in _USER_PASS.finditer(text):
        start, end = match.span("value")
        end = bare_end(text, start, end)
        if assigned_value(text[start:end], "password"):
            yield ("password", start, end)
    for match in _DIRECTIVE.finditer(text):
        line = text.rfind("\n", 0, match.start()) + 1
        found = value_of(text, match, "password", plain=not text[line : match.start()].strip())
        if found is not None:
            yield ("password", *found)
    for match in _XML_NAMED.finditer(text):
        named = NAMED.search(match.group("name"))
        group = "attr" if match.group("attr") is not None else "text"
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

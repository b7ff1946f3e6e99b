"""Passwords in SQL statements, beyond ``IDENTIFIED BY 'X'`` and ``PASSWORD('X')``.

A statement names a credential by its column or its clause, and gives the value elsewhere: a value
of ``INSERT INTO users (email, password, role) VALUES ('qa@x.io', 'X', 'admin')`` in the place the
column list gives the password (in each row, inside a hash function's call too:
``MD5('X')``, ``crypt('X', gen_salt('bf'))``), Oracle's unquoted ``ALTER USER scott IDENTIFIED BY
X``, MySQL's ``SET PASSWORD FOR 'app'@'%' = 'X'``, SQL Server's ``PASSWORD = N'X'`` and
``sp_addlogin 'user', 'X'``, SQL*Plus's ``CONNECT user/X@db``. ``secrets/credentials.py`` judges each
value: a placeholder (``?``, ``$1``, ``:password``, ``%s``, ``&pw``, ``<hash>``) is none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_mcp.secrets.credentials import NAMED, PASSWORD_WORD, assigned_value, credential_like

# INSERT INTO table (columns) VALUES (row), (row)...
_INSERT = re.compile(
    r"(?i:\binsert\s+(?:ignore\s+)?into)\s+[\w.`\"\[\]]{1,128}\s*\((?P<columns>[^()]{1,600})\)\s*(?i:values)\s*"
)
_ROW = re.compile(
    r"\s*\((?P<values>(?:[^()'\"]|'[^'\n]{0,300}'|\"[^\"\n]{0,300}\"|\((?:[^()]|\([^()]{0,100}\)){0,300}\))*+)\)\s*,?"
)
_ROWS_READ = 50
# A row's value: a string (N'X', E'X'), or a call whose first argument is one (MD5('X'), crypt('X', ...)).
_VALUE = re.compile(
    r"\s*(?:[A-Za-z_][\w.]*\s*\(\s*)?(?:[NnEe])?'(?P<value>[^'\n]{1,300})'|\s*\"(?P<dq>[^\"\n]{1,300})\""
)
_SPLIT = re.compile(r"(?:[^,()'\"]|'[^'\n]*'|\"[^\"\n]*\"|\((?:[^()]|\([^()]*\))*\))+")
# Oracle's IDENTIFIED BY X unquoted, in CREATE/ALTER USER or ROLE or in a GRANT; not IDENTIFIED BY
# VALUES 'hash', nor a bind variable (:pw) or a substitution (&pw).
_IDENTIFIED = re.compile(
    r"(?i:\b(?:(?:create|alter)\s+(?:user|role|login)\b|grant\b)[^;\n]{0,200}?\bidentified\s+by)"
    r"\s+(?!(?i:values|password)\b)(?P<value>[A-Za-z][\w$#]{0,127})(?![\w$#'\"])"
)
# MySQL's SET PASSWORD FOR 'app'@'%' = 'X'; SQL Server's PASSWORD = N'X'; sp_addlogin 'user', 'X'
# and sp_password 'old', 'X', 'user'.
_GIVEN = re.compile(
    r"(?i:\bset\s+password\s+for\s+[^=\n;]{1,120}=\s*|(?<![\w])password\s*=\s*N(?='))"
    r"'(?P<value>[^'\n]{1,200})'"
    r"|(?i:\bsp_addlogin\s+(?:@loginame\s*=\s*)?N?'[^'\n]{1,128}'\s*,\s*(?:@passwd\s*=\s*)?N?)'(?P<login>[^'\n]{1,200})'"
    r"|(?i:\bsp_password\s+(?:NULL|N?'[^'\n]{0,128}')\s*,\s*N?)'(?P<new>[^'\n]{1,200})'"
)
# A credential's column set to a hash function's call on the password: user_pass = MD5('X').
_HASHED = re.compile(
    r"(?P<name>[\w.]{1,80})[`\"\]]?\s*=\s*(?i:md5|sha1|sha2|password|old_password|crypt|encrypt|digest)\s*\(\s*"
    r"N?'(?P<value>[^'\n]{1,200})'"
)
# SQL*Plus: CONNECT user/X@db at a line's start.
_CONNECT = re.compile(
    r"(?m)^[ \t]*(?P<prompt>SQL>[ \t]*)?(?i:conn(?:ect)?)[ \t]+[A-Za-z][\w$#]*/(?P<value>[^\s@/;\"']+)"
    r"(?:@[^\s;]+)?[ \t]*;?[ \t]*$"
)


def sql_passwords(text: str) -> Iterator[tuple[str, int, int]]:
    """The passwords SQL statements in ``text`` give, each as (kind, start, end)."""
    low = text.lower()  # (a quick look first: most texts hold no SQL)
    if "insert" in low:
        yield from _inserted(text)
    if "identified" in low:
        for match in _IDENTIFIED.finditer(text):
            value = match.group("value")
            # (an identifier is no variable here: readonly_pw1 is the password itself)
            if assigned_value(value, "password") or (not value.isupper() and any(c.isdigit() for c in value)):
                yield ("password", *match.span("value"))
    if "password" in low or "sp_" in low:
        for match in _GIVEN.finditer(text):
            group = next(g for g in ("value", "login", "new") if match.group(g) is not None)
            if assigned_value(match.group(group), "password", quoted=True, literal=True):
                yield ("password", *match.span(group))
    if "(" in text:
        for match in _HASHED.finditer(text):
            named = NAMED.search(match.group("name"))
            if named and assigned_value(match.group("value"), "password", quoted=True, literal=True):
                yield ("password", *match.span("value"))
    if "conn" in low:
        for match in _CONNECT.finditer(text):
            value = match.group("value")
            shaped = match.group("prompt") is not None or credential_like(value, "password")
            if shaped and assigned_value(value, "password"):
                yield ("password", *match.span("value"))


def _inserted(text: str) -> Iterator[tuple[str, int, int]]:
    """The values of INSERT's rows in the places its column list names a password."""
    for match in _INSERT.finditer(text):
        columns = [c.strip().strip('`"[]') for c in match.group("columns").split(",")]
        places = [i for i, column in enumerate(columns) if _credential_column(column)]
        if not places:
            continue
        at = match.end()
        for _ in range(_ROWS_READ):
            row = _ROW.match(text, at)
            if row is None:
                break
            values = list(_SPLIT.finditer(text, row.start("values"), row.end("values")))
            if len(values) == len(columns):
                for i in places:
                    found = _VALUE.match(text, values[i].start(), values[i].end())
                    if found is not None:
                        group = "value" if found.group("value") is not None else "dq"
                        if assigned_value(found.group(group), "password", quoted=True, literal=True):
                            yield ("password", *found.span(group))
            at = row.end()


def _credential_column(column: str) -> bool:
    """Whether a column's name names a password (password, user_pass, passwd, api_password)."""
    named = NAMED.search(column)
    return named is not None and PASSWORD_WORD.match(named.group("word").lower()) is not None

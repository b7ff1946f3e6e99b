"""Where code gives a password by its place: one table of the calls whose signature takes one, and DSNs.

A password passed to a call that connects or signs in names no credential where it is written:
``new mysqli("localhost", "wpuser", "X", "wp_main")``, ``DriverManager.getConnection(url, "hr",
"X")``, ``server.login("me@corp.io", "X")``, ``Net::SMTP.start(host, port, helo, user, "X",
:login)``. It is found by reading the call as its library reads it: :data:`CALLS` says, for each
call, which argument is the password (and with how many arguments, after which receiver, after
which other argument), and :func:`call_passwords` reads the arguments (quoted strings and brackets
kept whole) and takes that one when it is a string literal. A connection string written without a
scheme gives one too (:func:`dsn_passwords`): Go's ``user:X@tcp(host:3306)/db``, Oracle's
``scott/X@db01:1521/ORCL`` after ``jdbc:oracle:thin:``, and ``user:X@host`` where the line says it
is a DSN or a connection string.

This module finds places only; ``secrets/credentials.py`` judges the value (no placeholder, no
variable, no words for a person to read).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memtree_mcp.secrets.credentials import (
    ADDRESS,
    VERSION,
    assigned_value,
    credential_like,
    reads_as_text,
    stand_in,
)


@dataclass(frozen=True, slots=True)
class Call:
    """How a call takes a password among its arguments (a row of :data:`CALLS`)."""

    position: int  # the argument that holds it, counted from 1
    arity: tuple[int, ...] = ()  # ... only with this many arguments
    receiver: str = ""  # ... only called on this (DriverManager.getConnection, Net::SMTP.start)
    host_first: bool = False  # ... only when the first argument is a host in quotes (connect(host, user, X))
    named_before: bool = False  # ... only when the argument before names who signs in (a DN, a user)
    shaped: bool = False  # a name many libraries use: the value must look like a password
    split: str = ""  # the argument is user<split>X@host (cx_Oracle.connect("scott/X@db"))
    chars: bool = False  # the literal is made a char[] where it is given ("X".toCharArray()): Java's password


# The calls, each with where its password is (names separated by spaces share a row).
CALLS: tuple[tuple[str, Call], ...] = (
    # PHP: new mysqli(host, user, X, db), mysqli_connect, new PDO(dsn, user, X), ftp_login(conn, user, X),
    # ldap_bind(conn, dn, X), ssh2_auth_password(session, user, X), imap_open(mailbox, user, X)
    (
        "mysqli mysqli_connect mysql_connect mysql_pconnect mssql_connect sybase_connect odbc_connect PDO"
        " imap_open ftp_login ldap_bind ssh2_auth_password real_connect",
        Call(3),
    ),
    ("mysqli_real_connect", Call(4)),
    ("oci_connect oci_pconnect oci_new_connect", Call(2)),
    # Java: DriverManager.getConnection(url, user, X), dataSource.getConnection(user, X),
    # Transport.send(message, user, X)
    ("getConnection", Call(3, arity=(3,), receiver="DriverManager")),
    ("getConnection", Call(2, arity=(2,))),
    ("send", Call(3, arity=(3,), receiver="Transport")),
    ("DriverManagerDataSource SingleConnectionDataSource", Call(3)),  # Spring's (url, user, X)
    # Python's DB-API drivers: connect(host, user, X, db); cx_Oracle.connect(user, X, dsn) or ("user/X@dsn")
    ("connect", Call(3, receiver=r"pymysql|MySQLdb|mysql\.connector|mariadb|pymssql|_mssql|pgdb|mysqlx")),
    ("connect", Call(2, receiver=r"cx_Oracle|oracledb|cx")),
    ("connect", Call(1, arity=(1,), receiver=r"cx_Oracle|oracledb|cx", split="/")),
    # Perl's DBI->connect($dsn, user, X)
    ("connect", Call(3, receiver="DBI")),
    # any connect(host, user, X) or connect(host, port, user, X): paramiko, JavaMail's Transport
    ("connect Connect", Call(3, host_first=True)),
    # ftplib.FTP(host, user, X), Ruby's Net::FTP.new(host, user, X), Net::SMTP.start(host, port,
    # helo, user, X, :login), Net::POP3.start(host, port, user, X)
    ("FTP FTP_TLS", Call(3)),
    ("new open", Call(3, receiver="Net::FTP")),
    ("start", Call(5, receiver="Net::SMTP")),
    ("start", Call(4, receiver="Net::POP3?")),
    # redis.Redis(host, port, db, X)
    ("Redis StrictRedis", Call(4)),
    # login(user, X): smtplib, imaplib, ftplib, Apache's FTPClient, Net::FTP, Go's ftp; pymongo's
    # authenticate(user, X), the mongo shell's db.auth(user, X), superagent's .auth(user, X)
    ("login Login authenticate auth Auth", Call(2, arity=(2,))),
    ("auth AUTH", Call(1, arity=(1,), shaped=True)),  # redis: client.auth(X)
    ("pass_", Call(1, arity=(1,))),  # poplib
    # Go: ssh.Password(X), smtp.PlainAuth(identity, user, X, host), smtp.CRAMMD5Auth(user, X),
    # gomail.NewDialer(host, port, user, X)
    ("Password", Call(1, arity=(1,), receiver="ssh")),
    ("PlainAuth", Call(3)),
    ("CRAMMD5Auth", Call(2)),
    ("NewDialer NewPlainDialer", Call(4)),
    # Node's new Sequelize(db, user, X, options); pysmb's SMBConnection(user, X, client, server)
    ("Sequelize", Call(3)),
    ("SMBConnection", Call(2)),
    ("set_password", Call(3, arity=(3,), receiver="keyring")),
    # A password hashed or checked where it is written: bcrypt.hashpw(b'X', salt), Django's
    # make_password('X') and check_password('X'), Werkzeug's generate_password_hash('X'), PHP's
    # password_hash('X', PASSWORD_DEFAULT), bcrypt.hash('X', 10), Spring's passwordEncoder.encode("X"),
    # Ruby's BCrypt::Password.create('X')
    (
        "hashpw checkpw hash_password make_password check_password generate_password_hash password_hash"
        " password_verify hashSync compareSync",
        Call(1),
    ),
    ("hash compare", Call(1, receiver=r"bcrypt|bcryptjs|argon2|scrypt")),
    ("encode matches", Call(1, receiver=r"\w*(?:[Pp]assword)?[Ee]ncoder")),
    ("create", Call(1, receiver=r"BCrypt::Password")),
    # Django's create_user(username, email, X); Java's keystores take a password as char[]:
    # ks.load(stream, "X".toCharArray()), getKey(alias, "X".toCharArray()), new PBEKeySpec("X".toCharArray())
    ("create_user create_superuser", Call(3)),
    ("load getKey store", Call(2, arity=(2,), chars=True)),
    ("setKeyEntry", Call(3, chars=True)),
    ("PasswordProtection PBEKeySpec", Call(1, chars=True)),
    # LDAP: conn.simple_bind_s(dn, X), l.Bind(dn, X), client.bind(dn, X, callback), ldap3's
    # Connection(server, dn, X)
    ("simple_bind_s simple_bind bind_s bind Bind", Call(2, named_before=True)),
    ("Connection", Call(3, named_before=True)),
)

_BY_NAME: dict[str, tuple[Call, ...]] = {}
for _names, _call in CALLS:
    for _name in _names.split():
        _BY_NAME[_name] = (*_BY_NAME.get(_name, ()), _call)

_CALLED = re.compile(r"(?<![\w$])(?P<name>" + "|".join(sorted(_BY_NAME, key=len, reverse=True)) + r")\s*\(")
# What the call is made on, read back from its name: DriverManager., Net::SMTP., DBI->, $this->db->.
_RECEIVER = re.compile(r"(?:new\s+)?(?P<receiver>[\w$]+(?:(?:\.|::|->)[\w$]+)*)\s*(?:\.|::|->)\s*\Z")
# One argument: quoted strings and brackets (one level deep, then another) kept whole.
_ARGUMENT = re.compile(
    r"\s*+(?:\"(?:[^\"\\\n]|\\.){0,300}+\"|'(?:[^'\\\n]|\\.){0,300}+'|`[^`\n]{0,300}+`"
    r"|\((?:[^()\"'\n]|\"[^\"\n]{0,300}+\"|'[^'\n]{0,300}+'|\([^()\n]{0,200}+\))*+\)"
    r"|\[[^\[\]\n]{0,300}+\]|\{[^{}]{0,400}+\}"
    r"|[^,()\[\]{}\"'`\n]|\n)*+"
)
_ARGUMENTS_READ = 8
# A string literal as an argument: a prefix (b'', r'', N'', C#'s @""), and a conversion after it
# ("X".toCharArray(), 'X'.encode()).
_LITERAL = re.compile(
    r"\s*(?:[bBrRuUfFN@]{0,2})(?P<q>[\"'`])(?P<value>[^\"'`\n]{0,300})(?P=q)"
    r"(?:\.(?:toCharArray|getBytes|encode|to_string|toString|into|to_owned|ToCharArray)\(\s*\))?\s*\Z"
)
_HOST = re.compile(r"localhost|\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|[\w-]+(?=:\d)")
_PORT = re.compile(r"\s*\d{2,5}\s*")
# Who signs in: a distinguished name (cn=admin,dc=corp), a Windows user (CORP\\svc), an address;
# or a variable named so (dn, bind_dn, user, who, principal).
_WHO = re.compile(r"(?i)(?:cn|uid|ou|o|dc|sAMAccountName)=[^,]+,.*|[\w.-]+\\\\?[\w.$-]+|[\w.+-]+@[\w.-]+")
_WHO_VARIABLE = re.compile(r"(?i)[\w$.>-]*(?:dn|user(?:name)?|who|principal|login|account)\w*")
_EXAMPLE = re.compile(r"(?i)(?:user(?:name)?|login|name|pass(?:word|wd)?|pwd|pw|secret|email)\d{0,2}")


def call_passwords(text: str) -> Iterator[tuple[int, int]]:
    """The places (start, end) of the passwords ``text`` passes to a call of :data:`CALLS`, each a
    string literal that is no stand-in, no words for a person to read, and not one of an example's
    pair ("username", "password")."""
    if "(" not in text:
        return
    for match in _CALLED.finditer(text):
        arguments = _arguments(text, match.end())
        if not arguments:
            continue
        back = text[max(0, match.start() - 80) : match.start()]
        receiver = _RECEIVER.search(back)
        for call in _BY_NAME[match.group("name")]:
            found = _password(text, arguments, call, receiver.group("receiver") if receiver else "")
            if found is not None:
                yield found
                break


def _arguments(text: str, at: int) -> list[tuple[int, int]]:
    """The arguments of the call whose parenthesis opens before ``at``, each as (start, end); none
    when the call does not close within :data:`_ARGUMENTS_READ` arguments."""
    arguments: list[tuple[int, int]] = []
    while len(arguments) < _ARGUMENTS_READ:
        match = _ARGUMENT.match(text, at)
        end = match.end() if match else at
        arguments.append((at, end))
        if text.startswith(",", end):
            at = end + 1
        elif text.startswith(")", end):
            return [] if arguments == [(at, end)] and not text[at:end].strip() else arguments
        else:
            return []
    return []


def _literal(text: str, span: tuple[int, int]) -> tuple[int, int, str] | None:
    """The value of a string literal argument at ``span``: (start, end, quote), or None."""
    match = _LITERAL.match(text, span[0], span[1])
    if match is None:
        return None
    return match.start("value"), match.end("value"), match.group("q")


def _password(
    text: str, arguments: list[tuple[int, int]], call: Call, receiver: str
) -> tuple[int, int] | None:
    """The password's place among ``arguments`` as ``call`` takes it, when it is one."""
    if call.arity and len(arguments) not in call.arity:
        return None
    if call.receiver and not re.fullmatch(r"(?:[\w$]+(?:\.|::|->))*(?:" + call.receiver + ")", receiver):
        return None
    position = call.position
    if call.host_first:
        host = _literal(text, arguments[0])
        if host is None or not _HOST.match(text, host[0], host[1]):
            return None
        if len(arguments) >= 4 and _PORT.fullmatch(text, *arguments[1]):
            position = 4  # connect(host, port, user, X)
    if len(arguments) < position:
        return None
    found = _literal(text, arguments[position - 1])
    if found is None:
        return None
    start, end, quote = found
    if call.chars and not text.startswith(".toCharArray()", end + 1):
        return None
    if call.split:
        user, sep, rest = text[start:end].partition(call.split)
        at = rest.find("@")
        if not (sep and user and at > 0):
            return None
        start, end = start + len(user) + 1, start + len(user) + 1 + at
    value = text[start:end]
    before = _literal(text, arguments[position - 2]) if position >= 2 else None
    if call.named_before and not _names_who(text, arguments[position - 2], before):
        return None
    if before is not None and _EXAMPLE.fullmatch(text[before[0] : before[1]]) and _EXAMPLE.fullmatch(value):
        return None  # an example's pair: login("username", "password1")
    if ADDRESS.match(value):
        return None  # anonymous FTP's address
    if reads_as_text(value) or not assigned_value(value, "password", quoted=True, literal=quote == "'"):
        return None
    if call.shaped and not credential_like(value, "password"):
        return None
    return start, end


def _names_who(text: str, span: tuple[int, int], literal: tuple[int, int, str] | None) -> bool:
    """Whether the argument at ``span`` names who signs in: a DN, a user or an address in quotes,
    or a variable named for one."""
    if literal is not None:
        return _WHO.fullmatch(text, literal[0], literal[1]) is not None
    return _WHO_VARIABLE.fullmatch(text[span[0] : span[1]].strip()) is not None


# -- a password typed into a field in a browser test

# A field named for a password (a selector, an id, a label), then what types into it: Selenium's
# find_element(By.ID, "password").send_keys("X"), Cypress's cy.get('#password').type('X'),
# Playwright's page.fill('#password', 'X') and getByLabel('Password').fill('X'), WebdriverIO's
# $('#pwd').setValue('X'), Capybara's fill_in 'Password', with: 'X'.
_PASSWORD_FIELD = r"(?i:pass(?:word|wd|phrase|code)?|pwd)"
_FIELD = (
    r"(?:\"[^\"\n]{0,80}?"
    + _PASSWORD_FIELD
    + r"[^\"\n]{0,80}?\"|'[^'\n]{0,80}?"
    + _PASSWORD_FIELD
    + r"[^'\n]{0,80}?')"
)
_TYPED = re.compile(
    _FIELD + r"[^\n\"'`;]{0,60}?\.(?:send_keys|sendKeys|type|fill|setValue|set_value|pressSequentially"
    r"|press_sequentially|input_text)\s*\(\s*(?P<q>[\"'`])(?P<value>[^\"'`\n]{1,200})(?P=q)"
    r"|(?<![\w$])(?:fill|type|setValue|fill_in|input_text)(?:\s*\(\s*|\s+)"
    + _FIELD
    + r"\s*,\s*(?:with:\s*)?(?P<q2>[\"'`])(?P<value2>[^\"'`\n]{1,200})(?P=q2)"
)


def typed_passwords(text: str) -> Iterator[tuple[int, int]]:
    """The places (start, end) of the passwords a browser test types into a password's field."""
    low = text.lower()
    if not ("pass" in low or "pwd" in low) or ("(" not in text and "fill_in" not in text):
        return
    for match in _TYPED.finditer(text):
        group = "value" if match.group("value") is not None else "value2"
        quote = match.group("q") or match.group("q2")
        value = match.group(group)
        if not reads_as_text(value) and assigned_value(value, "password", quoted=True, literal=quote == "'"):
            yield match.span(group)


# -- connection strings without a scheme

# Go's DSN: user:X@tcp(host:3306)/db, user:X@unix(/tmp/mysql.sock)/db, user:X@/db, user:X@(host)/db.
_GO_DSN = re.compile(
    r"(?<![\w:/@.%$-])[A-Za-z_][\w.-]{0,63}:(?P<value>[^\s:@/\"'`()]{1,128})@(?:(?:tcp|unix|udp)?\(|/\w)"
)
# Oracle's JDBC thin URL with its user: jdbc:oracle:thin:scott/X@db01:1521:ORCL.
_ORACLE = re.compile(r"(?i:jdbc:oracle:(?:thin|oci8?|kprb)):[\w$#.]+/(?P<value>[^@\s\"'/]{1,128})@")
# user:X@host where the line says it is a DSN or a connection string, or the variable does (DB_DSN,
# DATABASE_URL); not a port (proxy:8080@edge) or a release (python:3.12-slim@sha256).
_SAID_DSN = re.compile(
    r"(?i:(?<![A-Za-z])(?:dsn|connection[\s_-]?string|conn[\s_-]?str(?:ing)?|database[\s_-]?url|db[\s_-]?url"
    r"|connection|conn)(?![A-Za-z]))[^\n]{0,120}?(?<![\w:/@.%$-])[A-Za-z][\w.-]{0,63}"
    r":(?P<value>[^\s:@/\"'`()]{1,128})@(?P<host>[A-Za-z0-9][\w.-]*)(?::\d{2,5})?(?=[/\s\"'`,;?]|$)"
)


def dsn_passwords(text: str) -> Iterator[tuple[int, int]]:
    """The places (start, end) of the passwords in connection strings written without a scheme."""
    if "@" not in text:
        return
    for pattern in (_GO_DSN, _ORACLE, _SAID_DSN):
        for match in pattern.finditer(text):
            start, end = match.span("value")
            value = text[start:end]
            if value.isdigit() or VERSION.match(value) or stand_in(value):
                continue  # a port, a release
            if "host" in pattern.groupindex and re.fullmatch(r"(?i)sha\d+", match.group("host")):
                continue  # an image's digest
            if assigned_value(value, "password", quoted=True):
                yield start, end

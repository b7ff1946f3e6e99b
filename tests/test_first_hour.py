"""The first hour of a new user, with the real command in subprocesses (issue 17).

Stopping a server (stdio on a pipe and on a terminal, both HTTP transports, SIGINT and SIGTERM),
the one-line errors of a shell and what an agent reads over MCP, the examples, and a default
server that touches no network. Waits are bounded: a readiness line read with ``select``, a
process waited for with a timeout.

A read-only file system is a tmpfs mounted read-only in a user and mount namespace of its own
(``unshare --user --map-root-user --mount``), which stops writes even for root, as CI runs; where
namespaces are not allowed those tests are skipped, and ``test_configuration_errors.py`` still
covers a home that cannot be written (a path under a regular file).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService
from memtree_mcp.transports.stdio import WAITING_ON_A_TERMINAL
from tests.interrupts import WITH_DEFAULT_SIGINT
from tests.loopback import INITIALIZE

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0
STOP_WITHIN = 15.0


def environment(**settings: str) -> dict[str, str]:
    """This process's environment without its MEMTREE_* variables, plus ``settings``."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("MEMTREE_")}
    return {**kept, **settings}


def server_environment(**settings: str) -> dict[str, str]:
    """What an MCP stdio client hands the server: ``settings``, and PYTHONPATH so that the code
    under test is the code served (the client passes only HOME, PATH and a few others)."""
    passed = {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ}
    return {**passed, **settings}


def read_line(stream: IO[bytes], within: float = TIMEOUT) -> str:
    ready, _, _ = select.select([stream], [], [], within)
    assert ready, f"nothing within {within} s"
    return stream.readline().decode()


def stopped(proc: subprocess.Popen[bytes], number: signal.Signals) -> tuple[int, float]:
    """Send ``number`` to ``proc``; its exit status and how long it took to exit."""
    started = time.monotonic()
    proc.send_signal(number)
    try:
        status = proc.wait(STOP_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(TIMEOUT)
        pytest.fail(f"the server was still running {STOP_WITHIN} s after {number.name}")
    return status, time.monotonic() - started


EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 0}


# -- 1. stopping -------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stdio_server_stops_at_once_on_a_signal(number: signal.Signals, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*WITH_DEFAULT_SIGINT, COMMAND, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(MEMTREE_HOME=str(tmp_path / "store")),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(read_line(proc.stdout))["result"]["serverInfo"]["name"] == "memtree-mcp"
    status, _ = stopped(proc, number)  # the client keeps standard input open: only the signal stops it
    assert status == EXIT_STATUS[number]
    assert proc.stderr.read() == b"", "a client's server says nothing on standard error"


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_on_a_terminal_the_server_says_what_it_waits_for_and_a_signal_stops_it(
    number: signal.Signals, tmp_path: Path
) -> None:
    terminal, child_side = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*WITH_DEFAULT_SIGINT, COMMAND, "serve"],
            stdin=child_side,
            stdout=child_side,
            stderr=subprocess.PIPE,
            env=environment(MEMTREE_HOME=str(tmp_path / "store")),
        )
        assert proc.stderr is not None
        assert read_line(proc.stderr) == WAITING_ON_A_TERMINAL + "\n"
        status, _ = stopped(proc, number)
        assert status == EXIT_STATUS[number]
        shown, _, _ = select.select([terminal], [], [], 0)
        assert not shown, "nothing goes to standard output: it carries the protocol"
    finally:
        os.close(terminal)
        os.close(child_side)


@pytest.mark.parametrize(
    ("transport", "path"), [("streamable-http", "/mcp"), ("sse", "/sse")], ids=["streamable-http", "sse"]
)
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_http_server_prints_its_url_when_ready_and_stops_at_once_on_a_signal(
    transport: str, path: str, number: signal.Signals, tmp_path: Path
) -> None:
    proc = subprocess.Popen(
        [*WITH_DEFAULT_SIGINT, COMMAND, "serve", "--transport", transport, "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(MEMTREE_HOME=str(tmp_path / "store")),
    )
    assert proc.stderr is not None and proc.stdout is not None
    line = read_line(proc.stderr)
    found = re.fullmatch(
        rf"memtree-mcp: serving MCP at (http://127\.0\.0\.1:(\d+){path}) and the explorer at "
        r"http://127\.0\.0\.1:(\d+)/ui/ \(Ctrl-C to stop\)\n",
        line,
    )
    assert found, line
    with socket.create_connection(("127.0.0.1", int(found.group(2))), timeout=TIMEOUT):
        pass  # it serves when it says so
    status, _ = stopped(proc, number)
    assert status == EXIT_STATUS[number]
    assert proc.stdout.read() == b""


def test_a_busy_port_is_one_line_naming_the_port_and_the_flag(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [COMMAND, "serve", "--transport", "streamable-http", "--port", str(port)],
            capture_output=True,
            text=True,
            env=environment(MEMTREE_HOME=str(tmp_path / "store")),
            timeout=TIMEOUT,
        )
    assert (done.returncode, done.stderr) == (2, f"memtree-mcp: port {port} is in use; pass --port N\n")


# -- 4. one-line errors ------------------------------------------------------------------------------


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("memtree-mcp: ")
    return done.stderr.strip()


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"MEMTREE_HOME": "/dev/null"}, "MEMTREE_HOME: '/dev/null' is in /dev"),
        ({"MEMTREE_HOME": "/proc/self/memtree"}, "MEMTREE_HOME: '/proc/self/memtree' is in /proc"),
        ({"MEMTREE_HOME": ""}, "MEMTREE_HOME: is empty"),
        ({"MEMTREE_HOME": "my-memories"}, "MEMTREE_HOME: 'my-memories' is a relative path"),
        ({"MEMTREE_HOME": "s3://"}, "MEMTREE_HOME: 's3://': it names no bucket"),
        ({"MEMTREE_HOME": "memory://"}, "MEMTREE_HOME: 'memory://' would keep nothing"),
        ({"MEMTREE_LLM": "garbage"}, "MEMTREE_LLM: unknown LLM 'garbage'"),
    ],
    ids=["dev-null", "proc", "empty", "relative", "s3-without-bucket", "memory", "llm-garbage"],
)
def test_a_refused_setting_is_one_line_and_exit_2(settings: dict[str, str], says: str) -> None:
    done = subprocess.run(
        [COMMAND, "remember", "The user's cat is called Miso."],
        capture_output=True,
        text=True,
        env=environment(**settings),
        timeout=TIMEOUT,
    )
    assert one_line_error(done).startswith(f"memtree-mcp: {says}")


def test_a_home_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    afile = tmp_path / "memories.txt"
    afile.write_text("")
    done = subprocess.run(
        [COMMAND, "recall", "cat"],
        capture_output=True,
        text=True,
        env=environment(MEMTREE_HOME=str(afile)),
        timeout=TIMEOUT,
    )
    assert one_line_error(done) == (
        f"memtree-mcp: MEMTREE_HOME: '{afile}' is a file; "
        "set MEMTREE_HOME to a directory (it is created when missing)"
    )


def test_importing_a_file_that_is_not_there_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [COMMAND, "import", "nope.jsonl"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment(MEMTREE_HOME=str(tmp_path / "store")),
        timeout=TIMEOUT,
    )
    assert one_line_error(done) == (
        "memtree-mcp: cannot read nope.jsonl (No such file or directory); give the path of a JSONL file"
    )


def _namespaces_allowed() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True, timeout=TIMEOUT
    )
    return probe.returncode == 0


read_only = pytest.mark.skipif(not _namespaces_allowed(), reason="user namespaces are not allowed here")


def on_a_read_only_home(home: Path, *command: str) -> list[str]:
    """``command`` run with ``home`` a read-only tmpfs, in a mount namespace of its own."""
    home.mkdir()
    mount = 'mount -t tmpfs -o ro,size=1m tmpfs "$0" && exec "$@"'
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount, str(home), *command]


@read_only
def test_a_home_on_a_read_only_file_system_is_one_line_and_exit_2(tmp_path: Path) -> None:
    home = tmp_path / "read-only"
    done = subprocess.run(
        on_a_read_only_home(home, COMMAND, "remember", "The user's cat is called Miso."),
        capture_output=True,
        text=True,
        env=environment(MEMTREE_HOME=str(home)),
        timeout=TIMEOUT,
    )
    assert one_line_error(done) == (
        f"memtree-mcp: cannot write the memory store at {home} (Read-only file system); "
        "set MEMTREE_HOME to a place you can write to"
    )


async def _tool_errors(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    texts = []
    with anyio.fail_after(TIMEOUT):
        async with Client(params) as client:
            for tool, arguments in calls:
                answer = await client.call_tool(tool, arguments)
                assert answer.is_error, (tool, answer)
                texts.append(answer.content[0].text)  # type: ignore[union-attr]
    return texts


@read_only
def test_over_mcp_a_read_only_home_is_the_same_reason_as_a_tool_error(tmp_path: Path) -> None:
    home = tmp_path / "read-only"
    command, *args = on_a_read_only_home(home, COMMAND, "serve")
    params = StdioServerParameters(command=command, args=args, env=server_environment(MEMTREE_HOME=str(home)))
    (text,) = anyio.run(_tool_errors, params, [("remember", {"content": "The user's cat is called Miso."})])
    assert text == (
        f"Error executing tool remember: cannot write the memory store at {home} (Read-only file system); "
        "set MEMTREE_HOME to a place you can write to"
    )


def test_a_garbage_llm_setting_lets_the_server_start_and_every_tool_says_why(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=COMMAND,
        args=["serve"],
        env=server_environment(MEMTREE_HOME=str(tmp_path / "store"), MEMTREE_LLM="garbage"),
    )
    calls = [
        ("remember", {"content": "The user's cat is called Miso."}),
        ("recall", {"query": "cat"}),
        ("navigate", {}),
        ("summarize", {}),
        ("forget", {"query": "cat"}),
    ]
    texts = anyio.run(_tool_errors, params, calls)
    for (tool, _), text in zip(calls, texts, strict=True):
        assert text.startswith(f"Error executing tool {tool}: MEMTREE_LLM: unknown LLM 'garbage'; use 'none'")
    assert not (tmp_path / "store").exists()


# -- 3. the examples ---------------------------------------------------------------------------------


def test_the_agent_loop_example_keeps_its_memories_in_memtree_home(tmp_path: Path) -> None:
    home = tmp_path / "store"
    env = environment(MEMTREE_HOME=str(home), PATH=f"{Path(COMMAND).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_loop.py")],
        input="The user's cat is called Miso.\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT * 2,
    )
    assert done.returncode == 0, done.stderr
    assert "agent> (nothing in memory yet)" in done.stdout
    service = MemoryService(Settings(home=str(home)))
    try:
        assert service.namespaces() == [("default", 1)]
    finally:
        service.close()


@pytest.fixture
def guarded_server(tmp_path: Path) -> Iterator[str]:
    """A streamable-HTTP server that requires the token 'right-token'; yields its MCP URL."""
    proc = subprocess.Popen(
        [COMMAND, "serve", "--transport", "streamable-http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environment(MEMTREE_HOME=str(tmp_path / "store"), MEMTREE_AUTH_TOKEN="right-token"),
    )
    assert proc.stderr is not None
    try:
        found = re.search(r"serving MCP at (\S+) ", read_line(proc.stderr))
        assert found
        yield found.group(1)
    finally:
        assert stopped(proc, signal.SIGTERM)[0] == 0


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["no-token", "wrong-token"])
def test_the_http_example_without_the_right_token_says_401_and_what_to_set(
    guarded_server: str, token: str | None
) -> None:
    settings = {"MEMTREE_URL": guarded_server, **({"MEMTREE_AUTH_TOKEN": token} if token else {})}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "http_client.py"), "I prefer tea over coffee"],
        capture_output=True,
        text=True,
        env=environment(**settings),
        timeout=TIMEOUT,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "401 Unauthorized" in done.stderr and "set MEMTREE_AUTH_TOKEN" in done.stderr


def test_the_http_example_with_the_token_remembers_and_recalls(guarded_server: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "http_client.py"), "I prefer tea over coffee"],
        capture_output=True,
        text=True,
        env=environment(MEMTREE_URL=guarded_server, MEMTREE_AUTH_TOKEN="right-token"),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"^1\. \[[0-9.]+ · [0-9-]+\] I prefer tea over coffee \{m[0-9a-f]+\}$", done.stdout, re.M
    )


# -- 7. offline --------------------------------------------------------------------------------------

# Python's own sockets, noted by every process that puts this directory first on its path.
SOCKET_AUDIT = """
import os, socket

_log = os.environ["MEMTREE_TEST_SOCKET_LOG"]


def _note(what, *args):
    with open(_log, "a") as out:
        out.write(f"{os.getpid()} {what} {args!r}\\n")


def _wrap(owner, name):
    real = getattr(owner, name)

    def noted(*args, **kwargs):
        _note(name, *args[:3])
        return real(*args, **kwargs)

    setattr(owner, name, noted)


_note("started")
for owner, name in [
    (socket, "getaddrinfo"),
    (socket, "gethostbyname"),
    (socket, "create_connection"),
    (socket.socket, "connect"),
    (socket.socket, "connect_ex"),
    (socket.socket, "sendto"),
]:
    _wrap(owner, name)
"""
# What the operating system saw, native libraries included (onnxruntime's telemetry is C++): a
# connection or a datagram to an Internet address (a DNS lookup is one to port 53), or a lookup
# through nscd. Creating a socket is not traffic: urllib3 binds one to ::1 to learn whether IPv6 works.
NETWORK_CALLS = re.compile(r"^\d+\s+(connect|sendto|sendmsg)\(.*(AF_INET6?\b|/nscd/)")
# onnxruntime's telemetry looked its host up about 8 s after the model loaded.
SESSION_SECONDS = 15.0


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-f", "-o", os.devnull, "true"], capture_output=True).returncode == 0


async def _a_session(params: StdioServerParameters) -> None:
    with anyio.fail_after(TIMEOUT + SESSION_SECONDS):
        async with Client(params) as client:
            stored = await client.call_tool("remember", {"content": "The staging database listens on 5433."})
            assert not stored.is_error, stored.content
            started = time.monotonic()
            while time.monotonic() - started < SESSION_SECONDS:  # a session of use, not a sleep
                found = await client.call_tool("recall", {"query": "which port does staging use?", "k": 1})
                assert not found.is_error and found.structured_content is not None
                assert found.structured_content["hits"][0]["id"] == stored.structured_content["ids"][0]  # type: ignore[index]
                assert "The staging database listens on 5433." in found.content[0].text  # type: ignore[union-attr]


def test_a_default_server_makes_no_network_lookup_or_connection(tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "sitecustomize.py").write_text(SOCKET_AUDIT)
    python_log, system_log = tmp_path / "python-sockets.log", tmp_path / "system-calls.log"
    python_path = os.pathsep.join([str(audit), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {
        "PYTHONPATH": python_path,
        "MEMTREE_TEST_SOCKET_LOG": str(python_log),
        "MEMTREE_HOME": str(tmp_path / "store"),
    }
    traced = _strace_works()
    if traced:
        trace = ["-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(system_log)]
        params = StdioServerParameters(command="strace", args=[*trace, COMMAND, "serve"], env=env)
    else:
        params = StdioServerParameters(command=COMMAND, args=["serve"], env=env)
    anyio.run(_a_session, params)

    noted = python_log.read_text().splitlines()
    assert noted and all(line.endswith(" started ()") for line in noted), "\n".join(noted[:20])
    if not traced:
        pytest.skip("strace cannot run here: only Python's sockets were audited")
    seen = [line for line in system_log.read_text().splitlines() if NETWORK_CALLS.search(line)]
    assert seen == [], "\n".join(seen[:20])

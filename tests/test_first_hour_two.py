"""What a new user still tripped over in the first hour, round two (issue 32), through the MCP
client the model uses: a recall budget too small for any hit, an inverted time range, a move
down without a child, and argument errors the model reads as one line."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memtree_mcp.service import MemoryService
from memtree_mcp.transports.stdio import NOT_JSON_ON_A_TERMINAL, WAITING_ON_A_TERMINAL
from tests.interrupts import WITH_DEFAULT_SIGINT
from tests.mcp_text import client_remembering, text_of
from tests.test_first_hour import environment

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120.0


def run_cli(
    *args: str, home: Path, stdin: str | None = None, **settings: str
) -> subprocess.CompletedProcess[str]:
    """``memtree-mcp args`` in a subprocess over the store at ``home``, with this process's
    environment (PYTHONPATH included, so the code under test runs) less its MEMTREE_* settings."""
    env = environment(MEMTREE_HOME=str(home), **settings)
    return subprocess.run(
        [COMMAND, *args], capture_output=True, text=True, env=env, input=stdin, timeout=TIMEOUT
    )


RUNBOOK = (
    "Runbook for the staging database: stop the writers, take a snapshot with pg_dump to the "
    "backups bucket, check its size against yesterday's, then restart the writers one by one "
    "and watch the replication lag until it is under a second."
)
MEMORIES = [
    ("2026-11-20T09:00:00Z", "s1", RUNBOOK),
    ("2026-11-21T09:00:00Z", "s2", "The staging database is Postgres 16 on port 5433."),
]


@pytest.mark.parametrize("budget", [5, 30])
@pytest.mark.anyio
async def test_recall_within_a_budget_too_small_says_what_matched_and_the_budget_that_holds_it(
    service: MemoryService, budget: int
) -> None:
    async with client_remembering(service, MEMORIES) as client:
        text = text_of(await client.call_tool("recall", {"query": "runbook", "k": 3, "max_tokens": budget}))
        assert "Nothing in memory" not in text
        assert f"but none fits in max_tokens {budget}" in text
        needed = int(text.rsplit("max_tokens ", 1)[1].split()[0])
        roomy = text_of(await client.call_tool("recall", {"query": "runbook", "k": 3, "max_tokens": needed}))
        assert "pg_dump" in roomy


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["recall", "summarize"])
async def test_an_inverted_time_range_says_it_is_inverted(service: MemoryService, tool: str) -> None:
    args = {"time_from": "2026-11-22", "time_to": "2026-11-19"}
    if tool == "recall":
        args["query"] = "staging database"
    async with client_remembering(service, MEMORIES) as client:
        result = await client.call_tool(tool, args)
    assert result.is_error
    assert text_of(result).endswith(
        ": time_from 2026-11-22 is after time_to 2026-11-19: the range is empty; swap them."
    )


@pytest.mark.anyio
async def test_moving_down_without_index_or_query_takes_an_only_child_and_is_refused_between_several(
    service: MemoryService,
) -> None:
    async with client_remembering(service, MEMORIES) as client:
        only = await client.call_tool("navigate", {"move": "down"})  # the root holds one cluster
        cluster = only.structured_content["node_id"]
        refused = await client.call_tool("navigate", {"node_id": cluster, "move": "down"})
        chosen = await client.call_tool("navigate", {"node_id": cluster, "move": "down", "query": "port"})
    assert not only.is_error and "  1. " in text_of(only)
    assert refused.is_error
    assert text_of(refused).endswith(
        f": {cluster} has 2 children: give index (0 to 1) or a query to move 'down'"
    )
    assert "5433" in text_of(chosen)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "args", "says"),
    [
        (
            "recall",
            {"query": "port", "k": 500},
            "argument k: Input should be less than or equal to 100 (got 500).",
        ),
        ("recall", {"k": 3}, "argument query is required."),
        ("navigate", {"move": "sideways"}, "argument move: Input should be 'stay', "),
        (
            "remember",
            {"content": "x", "tags": "infra"},
            "argument tags: Input should be a valid list (got 'infra').",
        ),
    ],
)
async def test_an_argument_the_schema_refuses_is_one_line_naming_it_and_what_it_takes(
    service: MemoryService, tool: str, args: dict[str, object], says: str
) -> None:
    async with client_remembering(service, []) as client:
        result = await client.call_tool(tool, args)
    text = text_of(result)
    assert result.is_error
    assert "\n" not in text and "pydantic" not in text
    assert text.startswith(f"Error executing tool {tool}: {says}")


@pytest.mark.slow
def test_a_home_inside_a_namespace_folder_is_one_line_naming_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    remembered = run_cli("remember", "The staging database is Postgres 16.", home=store)
    assert remembered.returncode == 0, remembered.stderr
    inside = store / "default.lance"
    done = run_cli("recall", "staging", home=inside)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"memtree-mcp: MEMTREE_HOME: '{inside}' is the folder of namespace 'default', inside a store; "
        f"set MEMTREE_HOME to the store, {store}"
    )


def history_of(home: Path) -> list[tuple[int, str, str, int]]:
    """``memtree-mcp history``: (version, action, change, memories after) a line."""
    done = run_cli("history", home=home)
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    return [(int(v), action, change, int(count)) for v, _, action, change, count in rows]


@pytest.mark.slow
def test_restore_says_what_it_would_change_and_needs_yes_and_history_says_what_each_version_did(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    records = "\n".join(
        f'{{"content": "Imported fact number {i} about the build.", "timestamp": "2026-11-0{i}T09:00:00Z"}}'
        for i in range(1, 4)
    )
    (tmp_path / "in.jsonl").write_text(records + "\n")
    assert run_cli("import", str(tmp_path / "in.jsonl"), home=home).returncode == 0
    assert run_cli("remember", "The staging database is Postgres 16.", home=home).returncode == 0
    (staging,) = [
        line.split("{")[-1].rstrip("}")
        for line in run_cli("recall", "staging database", home=home).stdout.splitlines()
        if "Postgres" in line
    ]
    assert run_cli("forget", staging, home=home).returncode == 0
    history = history_of(home)
    assert [(action, change, count) for _, action, change, count in history] == [
        ("import", "+3 -0", 3),
        ("remember", "+1 -0", 4),
        ("forget", "+0 -1", 3),
    ]
    before_forget, first = history[1][0], history[0][0]

    asked = run_cli("restore", "--to", str(first), home=home)
    assert asked.returncode == 0
    assert asked.stdout.strip() == (
        f"restoring version {first} would bring 0 memories back and 0 deleted (3 now, 3 after); "
        "nothing changed. Add --yes to restore."
    )
    asked = run_cli("restore", "--to", str(before_forget), home=home)
    assert "would bring 1 memory back and 0 deleted (3 now, 4 after)" in asked.stdout
    assert len(history_of(home)) == 3  # nothing written

    done = run_cli("restore", "--to", str(before_forget), "--yes", home=home)
    assert done.returncode == 0, done.stderr
    assert f"restored version {before_forget} as the new version" in done.stdout
    assert f"restore --to {history[2][0]} --yes` undoes it" in done.stdout
    assert history_of(home)[-1][1:] == ("restore", "+1 -0", 4)

    assert run_cli("restore", "--to", str(first), "--yes", home=home).returncode == 0
    assert history_of(home)[-1][1:] == ("restore", "+0 -1", 3)  # a restore that only deletes
    assert run_cli("purge", home=home).returncode == 0
    assert history_of(home)[0][1] == "purge"


# What a process wrote on standard error past the line stderr_until returned, by pid.
_UNREAD: dict[int, bytes] = {}


def stderr_until(proc: subprocess.Popen[bytes], wanted: str, within: float = TIMEOUT) -> list[str]:
    """The lines ``proc`` writes on standard error up to the first holding ``wanted`` (bounded).

    Read from the descriptor itself: two lines written at once would otherwise sit in the file
    object's buffer, where ``select`` does not see the second, and the wait would run out."""
    assert proc.stderr is not None
    descriptor = proc.stderr.fileno()
    lines: list[str] = []
    pending = _UNREAD.pop(proc.pid, b"")
    deadline = time.monotonic() + within
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            lines.append(line.decode() + "\n")
            if wanted in lines[-1]:
                _UNREAD[proc.pid] = pending
                return lines
        left = deadline - time.monotonic()
        ready, _, _ = select.select([descriptor], [], [], max(left, 0))
        assert ready, f"no {wanted!r} within {within} s: {lines}"
        chunk = os.read(descriptor, 65536)
        assert chunk, f"the server ended before {wanted!r}: {lines}"
        pending += chunk


@pytest.mark.slow
@pytest.mark.parametrize(
    ("transport", "llm"), [("streamable-http", "litellm:openai/gpt-4o-mini"), ("sse", "none")]
)
def test_an_http_server_warms_up_when_it_starts_before_any_client(
    tmp_path: Path, transport: str, llm: str
) -> None:
    """The model and the store load when the server listens, not on the first call; with an LLM
    configured, litellm is imported then too, not on the first remember (issue 32)."""
    settings = {
        "MEMTREE_HOME": str(tmp_path / "store"),
        "MEMTREE_LOG_LEVEL": "INFO",
        "MEMTREE_LLM": llm,
        "MEMTREE_LLM_API_BASE": "http://127.0.0.1:9/v1",  # never called: nothing is remembered
    }
    proc = subprocess.Popen(
        [COMMAND, "serve", "--transport", transport, "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environment(**settings),
    )
    try:
        lines = stderr_until(proc, "warm-up done")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(TIMEOUT)
    said = "".join(lines)
    assert "serving MCP at" in said
    assert ("warm-up imported litellm" in said) == (llm != "none")


@pytest.mark.slow
def test_cli_forget_query_tells_a_shell_user_the_command_not_the_mcp_argument(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_cli("remember", "The staging database is Postgres 16.", home=home).returncode == 0
    listed = run_cli("forget", "--query", "staging database", home=home)
    assert listed.returncode == 0, listed.stderr
    assert "run `memtree-mcp forget ID...` with their ids" in listed.stdout
    assert "as ids" not in listed.stdout


@pytest.mark.slow
def test_install_write_twice_says_already_there_and_keeps_no_second_backup(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {"other": {"command": "x"}}}\n')
    first = run_cli("install", "--client", "cursor", "--write", home=tmp_path / "m", HOME=str(tmp_path))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"memtree added to {config}")
    written = config.read_text()
    second = run_cli("install", "--client", "cursor", "--write", home=tmp_path / "m", HOME=str(tmp_path))
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == f"memtree is already in {config} as it would be written; nothing changed"
    assert config.read_text() == written
    assert len(list(config.parent.glob("*.bak"))) == 1


@pytest.mark.slow
def test_install_without_write_says_which_file_the_json_belongs_in(tmp_path: Path) -> None:
    done = run_cli("install", "--client", "cursor", home=tmp_path / "m", HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert '"mcpServers"' in done.stdout  # standard output is still the JSON alone
    assert done.stderr.strip() == (
        f"memtree-mcp: this goes into {tmp_path / '.cursor' / 'mcp.json'}; --write merges it there"
    )


@pytest.mark.slow
def test_ctrl_c_during_import_says_how_many_were_imported_and_that_a_rerun_continues(tmp_path: Path) -> None:
    # The import reads and checks every record, sorts them by time, then commits them 256 at a time:
    # Ctrl-C once the first batch is in keeps the batches committed, and a rerun adds the rest.
    home, source = tmp_path / "home", tmp_path / "records.jsonl"
    total = 2_000
    source.write_text(
        "".join(
            f'{{"content": "Build note {i}: step {i} of the release checklist passed."}}\n'
            for i in range(total)
        )
    )
    proc = subprocess.Popen(
        [*WITH_DEFAULT_SIGINT, COMMAND, "import", str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(MEMTREE_HOME=str(home)),
    )
    deadline = time.monotonic() + TIMEOUT
    while (
        int(
            dict(line.split("\t") for line in run_cli("namespaces", home=home).stdout.splitlines()).get(
                "default", 0
            )
        )
        < 256
    ):
        assert time.monotonic() < deadline and proc.poll() is None, "the first batch was never committed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err
    told = err.decode().strip().splitlines()[-1]
    found = re.fullmatch(
        r"interrupted: (\d+) memories imported; run the same import again to continue "
        r"\(what is already there is skipped\)",
        told,
    )
    assert found is not None, told
    done = int(found.group(1))
    assert 256 <= done < total and done % 256 == 0
    again = run_cli("import", str(source), home=home)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"imported {total - done:,} memories ({done:,} already there)"


@pytest.mark.slow
def test_the_http_example_with_no_server_running_says_so_in_one_line() -> None:
    with socket.create_server(("127.0.0.1", 0)) as free:
        port = free.getsockname()[1]
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "http_client.py"), "I prefer tea"],
        capture_output=True,
        text=True,
        env=environment(MEMTREE_URL=f"http://127.0.0.1:{port}/mcp"),
        timeout=TIMEOUT,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"no server answers at http://127.0.0.1:{port}/mcp: start one with `memtree-mcp serve "
        "--transport streamable-http --port 8765`, or set MEMTREE_URL to where yours serves\n"
    )


@pytest.mark.slow
def test_a_line_that_is_not_json_typed_into_serve_on_a_terminal_gets_a_hint(tmp_path: Path) -> None:
    terminal, child_side = pty.openpty()
    try:
        proc = subprocess.Popen(
            [COMMAND, "serve"],
            stdin=child_side,
            stdout=child_side,
            stderr=subprocess.PIPE,
            env=environment(MEMTREE_HOME=str(tmp_path / "store")),
        )
        try:
            assert stderr_until(proc, "waiting for an MCP client")[-1] == WAITING_ON_A_TERMINAL + "\n"
            os.write(terminal, b"remember that I like tea\n")
            assert stderr_until(proc, "not JSON")[-1] == NOT_JSON_ON_A_TERMINAL + "\n"
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(TIMEOUT)
    finally:
        os.close(terminal)
        os.close(child_side)

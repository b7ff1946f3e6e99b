"""The real command: `memtree-mcp serve` on stdio in a subprocess, stopped, killed and started again."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp_types.version import LATEST_HANDSHAKE_VERSION

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
TIMEOUT = 60.0


def server_env(home: Path, **variables: str) -> dict[str, str]:
    """The environment of a server in a subprocess: its home, and the PYTHONPATH of this run, so the
    command imports the code under test (the MCP client passes on only a few variables)."""
    inherited = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    return {**inherited, "MEMTREE_HOME": str(home), **variables}


def server_params(home: Path, **variables: str) -> StdioServerParameters:
    return StdioServerParameters(command=COMMAND, args=["serve"], env=server_env(home, **variables))


async def call(params: StdioServerParameters, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured content, with what the model reads of the result under "text"."""
    with anyio.fail_after(TIMEOUT):
        async with Client(params) as client:
            result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return {**result.structured_content, "text": result.content[0].text}  # type: ignore[union-attr]


def test_memories_survive_a_restart_of_the_server(tmp_path: Path) -> None:
    params = server_params(tmp_path / "store")
    facts = [
        "The user's laptop is a ThinkPad X1 running Fedora.",
        "The user's team ships a release every second Thursday.",
        "The user dislikes meetings before 10am.",
    ]
    for fact in facts:
        anyio.run(call, params, "remember", {"content": fact})
    before = anyio.run(call, params, "recall", {"query": "when does the team release?", "k": 5})
    after = anyio.run(call, params, "recall", {"query": "when does the team release?", "k": 5})
    assert before == after
    assert "The user's team ships a release every second Thursday." in after["text"].splitlines()[0]


class RawSession:
    """Just enough JSON-RPC over a child's stdio to kill it at a moment of our choosing."""

    def __init__(self, home: Path, errlog: Path) -> None:
        env = {**os.environ, "MEMTREE_HOME": str(home)}
        self.stderr = errlog.open("wb")
        self.proc = subprocess.Popen(
            [COMMAND, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env
        )
        self.next_id = 1

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
            assert ready, f"no answer to {method} within {TIMEOUT} s"
            assert self.proc.stdout is not None
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == request_id:
                return message

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(TIMEOUT)
        self.stderr.close()


def test_a_killed_server_keeps_every_memory_it_acknowledged(tmp_path: Path) -> None:
    home = tmp_path / "store"
    session = RawSession(home, tmp_path / "stderr.log")
    try:
        init = session.request(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        assert init["result"]["serverInfo"]["name"] == "memtree-mcp"
        session.notify("notifications/initialized")
        answer = session.request(
            "tools/call",
            {"name": "remember", "arguments": {"content": "The backup key is in the blue safe."}},
        )
        assert answer["result"]["isError"] is False
        stored_id = answer["result"]["structuredContent"]["ids"][0]
    finally:
        session.kill()  # SIGKILL: no shutdown code runs

    found = anyio.run(call, server_params(home), "recall", {"query": "where is the backup key?", "k": 1})
    assert [hit["id"] for hit in found["hits"]] == [stored_id]


def test_the_cli_and_the_server_share_one_store(tmp_path: Path) -> None:
    home = tmp_path / "store"
    env = {**os.environ, "MEMTREE_HOME": str(home)}
    subprocess.run(
        [COMMAND, "remember", "The user's cat is called Miso.", "--tag", "pets"],
        env=env,
        check=True,
        timeout=TIMEOUT,
    )
    found = anyio.run(call, server_params(home), "recall", {"query": "what is the cat's name?", "k": 1})
    assert "The user's cat is called Miso." in found["text"].splitlines()[0]
    anyio.run(call, server_params(home), "remember", {"content": "Miso is afraid of the vacuum cleaner."})
    shown = subprocess.run(
        [COMMAND, "recall", "vacuum", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert json.loads(shown.stdout)["hits"][0]["text"] == "Miso is afraid of the vacuum cleaner."


def test_the_cli_reports_bad_input_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "MEMTREE_HOME": str(tmp_path / "store")}
    subprocess.run(
        [COMMAND, "remember", "The user's cat is called Miso."], env=env, check=True, timeout=TIMEOUT
    )
    done = subprocess.run(
        [COMMAND, "recall", "x", "-k", "0"], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 2
    assert "k must be a whole number from 1 to 100" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(
        [COMMAND, "--namespace", "../x", "remember", "hi"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2 and "namespace" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(
        [COMMAND, "recall", "x"],
        env={**env, "MEMTREE_EMBEDDER": "nope"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2 and "unknown embedder 'nope'" in done.stderr and "local" in done.stderr


def test_doctor_finds_a_corrupted_tree_and_repair_rebuilds_it(tmp_path: Path) -> None:
    from memtree_mcp.config import Settings
    from memtree_mcp.core.memory import Memory
    from memtree_mcp.service import MemoryService

    home = tmp_path / "store"
    env = {**os.environ, "MEMTREE_HOME": str(home)}
    service = MemoryService(Settings(home=str(home)))
    facts = [f"Fact number {i}: the build server {i} runs Debian." for i in range(6)]
    for fact in facts:
        service.remember(fact, session="s1")
    healthy = subprocess.run([COMMAND, "doctor"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert healthy.returncode == 0 and "default: ok" in healthy.stdout

    table = service.store.open("default", create=False)
    assert table is not None
    snapshot = table.read()
    broken = next(b for b in snapshot.branches if b.kind == "internal")
    broken.leaf_count += 5  # a stored summary that no longer matches its memories
    damaged = Memory(384)
    damaged.load(snapshot.leaves, snapshot.branches)
    table.commit(damaged, {broken.id})

    found = subprocess.run([COMMAND, "doctor"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert found.returncode == 1 and broken.id in found.stdout
    repaired = subprocess.run(
        [COMMAND, "doctor", "--repair"], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert repaired.returncode == 0 and "default: repaired" in repaired.stdout
    again = subprocess.run([COMMAND, "doctor"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert again.returncode == 0
    memory = MemoryService(Settings(home=str(home))).memory()
    assert memory is not None and sorted(leaf.text for leaf in memory.leaves.values()) == sorted(facts)


# The writer remembers one fact each time the parent sends a line, then acknowledges it: it can never
# get ahead of what the parent has read, so the parent knows exactly which writes were acknowledged
# and that at most one more was under way when it killed the writer.
KILLED_WRITER = """
import sys
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService
service = MemoryService(Settings(home=sys.argv[1]))
number = int(sys.argv[2])
print("ready", flush=True)
for _ in sys.stdin:
    service.remember(f"Imported fact number {number} about subject {number % 7}.")
    print(number, flush=True)
    number += 1
"""


def _answer(process: subprocess.Popen[str]) -> str:
    """The next line ``process`` prints, waiting at most ``TIMEOUT`` seconds for it."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
    assert ready, "the writer stopped answering"
    return process.stdout.readline().strip()


def test_a_writer_killed_at_random_points_leaves_a_prefix_and_a_valid_store(tmp_path: Path) -> None:
    import random

    from memtree_mcp.config import Settings
    from memtree_mcp.core.checks.memory import memory_problems
    from memtree_mcp.service import MemoryService

    home = str(tmp_path / "store")
    rng = random.Random(7)
    acknowledged = -1
    for _ in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, home, str(acknowledged + 1)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert writer.stdin is not None and writer.stdout is not None
        assert _answer(writer) == "ready"
        for _ in range(rng.randint(1, 12)):  # kill after a random number of acknowledged writes
            writer.stdin.write("go\n")
            writer.stdin.flush()
            acknowledged = int(_answer(writer))
        writer.stdin.write("go\n")  # one more write, killed at a random point (or before it starts)
        writer.stdin.flush()
        time.sleep(rng.uniform(0.0, 0.25))
        writer.kill()  # SIGKILL
        writer.wait(TIMEOUT)
        writer.stdin.close()
        writer.stdout.close()
        service = MemoryService(Settings(home=home))
        memory = service.memory()
        assert memory is not None
        assert memory_problems(memory) == []
        numbers = sorted(int(leaf.text.split()[3]) for leaf in memory.leaves.values())
        # every acknowledged write is there; at most the one in flight follows it, never a gap
        assert numbers[: acknowledged + 1] == list(range(acknowledged + 1))
        assert numbers == list(range(len(numbers))) and len(numbers) <= acknowledged + 2
        acknowledged = len(numbers) - 1
        service.close()


def test_the_store_is_readable_by_its_user_only(tmp_path: Path) -> None:
    home = tmp_path / "store"
    env = {**os.environ, "MEMTREE_HOME": str(home)}
    subprocess.run([COMMAND, "remember", "A private note."], env=env, check=True, timeout=TIMEOUT)
    for path in [home, *home.rglob("*")]:
        assert path.stat().st_mode & 0o077 == 0, f"{path} is open to others"


def test_the_cli_lists_namespaces_and_prints_a_tree(tmp_path: Path) -> None:
    env = {**os.environ, "MEMTREE_HOME": str(tmp_path / "store")}
    for namespace, text in [("work", "The sprint ends on Friday."), ("home", "Water the plants on Sunday.")]:
        subprocess.run(
            [COMMAND, "--namespace", namespace, "remember", text], env=env, check=True, timeout=TIMEOUT
        )
    listed = subprocess.run([COMMAND, "namespaces"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert listed.stdout.splitlines() == ["home\t1", "work\t1"]
    tree = subprocess.run(
        [COMMAND, "--namespace", "work", "tree", "--tree", "temporal"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert "The sprint ends on Friday." in tree.stdout and "plants" not in tree.stdout


def test_install_write_keeps_the_other_servers_of_a_client_config(tmp_path: Path) -> None:
    config = tmp_path / "home" / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    original = '{"mcpServers": {"other": {"command": "other-server"}}, "theme": "dark"}\n'
    config.write_text(original)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "MEMTREE_HOME": str(tmp_path / "store")}
    shown = subprocess.run(
        [COMMAND, "install", "--client", "cursor"], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert json.loads(shown.stdout)["mcpServers"]["memtree"]["args"] == ["serve"]
    assert config.read_text() == original  # printing changes nothing
    done = subprocess.run(
        [COMMAND, "install", "--client", "cursor", "--write"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    merged = json.loads(config.read_text())
    assert merged["mcpServers"]["other"] == {"command": "other-server"} and merged["theme"] == "dark"
    assert merged["mcpServers"]["memtree"]["command"].endswith("memtree-mcp")
    backups = list(config.parent.glob("mcp.json.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == original


def test_import_then_export_round_trips_exactly(tmp_path: Path) -> None:
    records = [
        {"content": f"Imported note {i} about the {['garden', 'budget', 'trip'][i % 3]}.", "role": "user"}
        for i in range(40)
    ]
    records[3].update(
        {"session": "s1", "tags": ["home", "plants"], "timestamp": "2024-04-01T08:30:00.250000+00:00"}
    )
    records.append(records[5])  # an exact repeat is skipped
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    first = {**os.environ, "MEMTREE_HOME": str(tmp_path / "first")}
    done = subprocess.run(
        [COMMAND, "import", str(source)], env=first, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    assert "imported 40 memories (1 already there)" in done.stdout
    exported = tmp_path / "out.jsonl"
    subprocess.run([COMMAND, "export", str(exported)], env=first, check=True, timeout=TIMEOUT)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    # In time order: the record dated 2024 first, then the undated ones in the file's order.
    assert [r["content"] for r in lines] == [r["content"] for r in [records[3], *records[:3], *records[4:40]]]
    assert lines[0]["tags"] == ["home", "plants"] and lines[0]["session"] == "s1"
    assert lines[0]["timestamp"] == "2024-04-01T08:30:00.250000+00:00"

    second = {**os.environ, "MEMTREE_HOME": str(tmp_path / "second")}
    subprocess.run([COMMAND, "import", str(exported)], env=second, check=True, timeout=TIMEOUT)
    again = subprocess.run(
        [COMMAND, "export"], env=second, capture_output=True, text=True, check=True, timeout=TIMEOUT
    )
    assert again.stdout == exported.read_text()


def test_a_bad_import_line_is_named_and_nothing_of_its_batch_is_written(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"content": "Fine."}\n{"content": "Also fine."}\nnot json\n')
    env = {**os.environ, "MEMTREE_HOME": str(tmp_path / "store")}
    done = subprocess.run(
        [COMMAND, "import", str(source)], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 2 and "line 3" in done.stderr and "Traceback" not in done.stderr
    exported = subprocess.run([COMMAND, "export"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert exported.stdout == ""  # the records before it were in the same, uncommitted batch


def test_a_line_that_is_no_json_rpc_message_is_answered_with_a_json_rpc_error(tmp_path: Path) -> None:
    # Issue 31: these got no answer at all over stdio (HTTP answers a parse error), and bytes
    # that are not UTF-8 were read as replacement characters and stored.
    session = RawSession(tmp_path / "store", tmp_path / "stderr.log")
    try:
        session.request(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        )
        session.notify("notifications/initialized")
        remember = b'{"jsonrpc":"2.0","id":7,"method":"tools/call",'
        remember += b'"params":{"name":"remember","arguments":{"content":"'
        lines = {
            "a lone surrogate": remember + b'\\ud800 is half a character"}}}',
            "100,000-deep nesting": b"[" * 100_000,
            "a 5,000-digit number": b'{"jsonrpc":"2.0","id":' + b"9" * 5_000 + b',"method":"ping"}',
            "bytes that are not UTF-8": remember + b'caf\xe9 au lait"}}}',
        }
        assert session.proc.stdin is not None and session.proc.stdout is not None
        for what, line in lines.items():
            session.proc.stdin.write(line + b"\n")
            session.proc.stdin.flush()
            ready, _, _ = select.select([session.proc.stdout], [], [], TIMEOUT)
            assert ready, f"no answer to {what}"
            answer = json.loads(session.proc.stdout.readline())
            assert answer["id"] is None and answer["error"]["code"] == -32700, (what, answer)
            assert answer["error"]["message"].startswith("Parse error: "), answer
        session._send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        session.proc.stdin.write(b'{"not": "a message"}\n')
        session.proc.stdin.flush()
        answers = [json.loads(session.proc.stdout.readline()) for _ in range(2)]
        assert sorted(str(answer.get("id")) for answer in answers) == ["8", "None"]
        invalid = next(answer for answer in answers if answer.get("id") is None)
        assert invalid["error"]["code"] == -32600
        recalled = session.request(
            "tools/call", {"name": "recall", "arguments": {"query": "lait", "min_relevance": 0}}
        )
        assert "caf" not in json.dumps(recalled)  # nothing of the refused lines was stored
    finally:
        session.kill()

"""``memtree-mcp hook`` as Claude Code runs it: a subprocess with the hook's JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memtree_mcp

ROOT = Path(memtree_mcp.__file__).parent.parent
TIMEOUT = 120


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("MEMTREE_")}
    clean["MEMTREE_HOME"] = str(tmp_path / "store")
    clean["PYTHONPATH"] = str(ROOT) + os.pathsep + clean.get("PYTHONPATH", "")
    return clean


def memtree(env: dict[str, str], *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memtree_mcp", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )


def memories(env: dict[str, str]) -> list[dict[str, object]]:
    """Every memory stored under the environment's home; none when nothing made a namespace there."""
    if memtree(env, "namespaces").stdout.strip() == "":
        return []
    done = memtree(env, "export")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def transcript(tmp_path: Path, prompt: str, answer: str) -> Path:
    path = tmp_path / "transcript.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "an earlier question"}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "earlier"}]},
        },
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Read", "input": {}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "content": "file text"}]}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def stop_event(path: Path) -> str:
    return json.dumps(
        {
            "session_id": "abc-123",
            "transcript_path": str(path),
            "cwd": "/tmp",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        }
    )


def test_stop_remembers_the_turn_once_and_a_prompt_gets_it_back_as_context(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = transcript(tmp_path, "Which port does the billing service use?", "It listens on port 8443. " * 40)
    started = time.monotonic()
    stopped = memtree(env, "hook", "--queue-only", stdin=stop_event(path))
    assert stopped.returncode == 0 and stopped.stdout == "" and stopped.stderr == ""
    assert memtree(env, "hook", "--queue-only", stdin=stop_event(path)).returncode == 0  # the same turn again
    assert time.monotonic() - started < 30  # queueing loads no model
    assert memtree(env, "hook", "--drain").returncode == 0
    stored = memories(env)
    assert len(stored) == 1
    content = str(stored[0]["content"])
    assert content.startswith(
        "User: Which port does the billing service use?\n\nAssistant: It listens on port 8443."
    )
    assert len(content) < 800 and "tool" not in content and "earlier" not in content
    assert stored[0]["session"] == "abc-123" and stored[0]["tags"] == ["claude-code"]

    prompt = {"session_id": "abc-123", "transcript_path": str(path), "cwd": "/tmp"}
    prompt |= {"hook_event_name": "UserPromptSubmit", "prompt": "billing service port"}
    answered = memtree(env, "hook", "--seconds", "60", stdin=json.dumps(prompt))
    assert answered.returncode == 0, answered.stderr
    context = json.loads(answered.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert "port 8443" in context["additionalContext"]


def test_stop_without_queue_only_stores_the_turn_in_the_background(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = transcript(tmp_path, "Where do the backups go?", "To the NAS in the hall cupboard.")
    assert memtree(env, "hook", stdin=stop_event(path)).returncode == 0
    assert memtree(env, "hook", "--drain").returncode == 0  # waits for the background drain's lock
    assert [str(m["content"]) for m in memories(env)] == [
        "User: Where do the backups go?\n\nAssistant: To the NAS in the hall cupboard."
    ]


@pytest.mark.parametrize(
    ("stdin", "named"),
    [
        ("{not json", "hook input is not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"hook_event_name": "PreToolUse"}', "hook_event_name is 'PreToolUse'"),
        ('{"hook_event_name": "UserPromptSubmit"}', "has no prompt text"),
        ('{"hook_event_name": "Stop"}', "has no transcript_path"),
        ('{"hook_event_name": "Stop", "transcript_path": "/nowhere/t.jsonl"}', "cannot read the transcript"),
    ],
)
def test_a_malformed_hook_input_is_one_line_exit_1_and_stores_nothing(
    stdin: str, named: str, env: dict[str, str]
) -> None:
    done = memtree(env, "hook", "--queue-only", stdin=stdin)
    assert done.returncode == 1  # Claude Code shows it and goes on; 2 would block the prompt
    assert done.stdout == ""
    assert (
        done.stderr.count("\n") == 1 and named in done.stderr and done.stderr.startswith("memtree-mcp hook: ")
    )
    assert memtree(env, "hook", "--drain").returncode == 0
    assert memories(env) == []


def test_install_prints_the_claude_code_hooks_that_run_the_hook_command(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = memtree(env, "--namespace", "work", "install", "--client", "claude-code", "--hooks")
    assert done.returncode == 0, done.stderr
    hooks = json.loads(done.stdout)["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "Stop"}
    line = hooks["Stop"][0]["hooks"][0]
    assert line["type"] == "command" and line["command"].startswith("MEMTREE_NAMESPACE=work ")
    assert line["command"].endswith(" hook")
    assert "settings.json" in done.stderr
    refused = memtree(env, "install", "--client", "cursor", "--hooks")
    assert refused.returncode == 2 and "--client claude-code" in refused.stderr


def test_a_refused_setting_is_exit_1_so_the_prompt_still_goes_through(env: dict[str, str]) -> None:
    prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "hello", "session_id": "s"})
    done = memtree(env | {"MEMTREE_EMBEDDER": "bogus"}, "hook", stdin=prompt)
    assert done.returncode == 1 and done.stdout == "" and "MEMTREE_EMBEDDER" in done.stderr

"""What Claude Code gets from ``memtree-mcp hook``, in this process: the hook fed the JSON Claude
Code sends, its warm worker's answers, and the round trip between them on the worker's socket.

``test_hook.py`` runs the same hooks as separate processes (the slow tier); here the hook's quick
path (``hook.client.quick``) and the worker (``hook.worker.serve_worker``) run in the test's
process, so the quick loop checks what a user sees: the context a prompt gets, fenced and within
its characters, the brief a session starts with, why a hook added nothing (in ``hook.log``), a
turn queued and stored, and the one-line errors of input that is not Claude Code's.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import signal
import socket
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memtree_mcp.config import Settings
from memtree_mcp.hook import client
from memtree_mcp.hook.settings import caller_of, home_of, queue_folder, store_key, worker_key, worker_paths
from memtree_mcp.hook.worker import _Worker, serve_worker
from memtree_mcp.service import MemoryService
from tests.test_hook import prompt_event, stop_event, transcript
from tests.waiting import wait_until

BILLING = "The billing service listens on port 8443 behind the internal load balancer."
CAT = "The user's cat Miso sleeps on the warm keyboard every afternoon."


@pytest.fixture
def worker_starts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The flags of each worker process a hook started: none is started here (one would load the
    model in a process of its own); the hook is told it started."""
    started: list[list[str]] = []

    def start_worker(_caller: object, flags: list[str]) -> bool:
        started.append(flags)
        return True

    monkeypatch.setattr(client, "start_worker", start_worker)
    return started


@pytest.fixture
def hook_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker_starts: list[list[str]]
) -> Iterator[Path]:
    """A store of its own named by MEMTREE_HOME, a short runtime folder for the worker's socket,
    and no other MEMTREE_ setting."""
    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    home = tmp_path / "store"
    monkeypatch.setenv("MEMTREE_HOME", str(home))
    runtime = tempfile.mkdtemp(prefix="mt")
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    yield home
    shutil.rmtree(runtime, ignore_errors=True)


def run_hook(stdin: str, *argv: str) -> tuple[int | None, str]:
    """``memtree-mcp hook ARGV`` on the quick path with ``stdin``: its exit status and output. Its
    budget counts from now (a hook's own process starts with it)."""
    out = io.StringIO()
    client.STARTED = time.monotonic()
    status = client.quick(list(argv), stdin=io.StringIO(stdin), stdout=out)
    return status, out.getvalue()


def context_in(output: str, event: str) -> str:
    """The additionalContext of a hook's output, checked to be the JSON Claude Code reads."""
    (line,) = output.splitlines()
    told = json.loads(line)["hookSpecificOutput"]
    assert told["hookEventName"] == event
    return str(told["additionalContext"])


def hook_log(home: Path) -> str:
    path = queue_folder(str(home)) / "hook.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def serving(home: Path, embedder: object, hooks: Callable[[MemoryService], None]) -> None:
    """Run the worker of ``home`` in this thread (it takes SIGHUP, which a signal handler must be
    set for in the main thread) while ``hooks`` runs in another, then stop it with SIGHUP."""
    settings = Settings(home=str(home), namespace="default")
    service = MemoryService(settings, embedder=embedder, background=False)  # type: ignore[arg-type]
    address, _ = worker_paths(home_of(settings.home), worker_key(home_of(settings.home), os.environ))
    failed: list[BaseException] = []

    def run() -> None:
        try:
            wait_until(address.exists, within=60, what="the worker to listen")
            hooks(service)
        except BaseException as exc:  # re-raised in the test's thread
            failed.append(exc)
        finally:
            os.kill(os.getpid(), signal.SIGHUP)  # the worker stops in order, its socket removed

    # A SIGHUP that came after the worker put back the handler it found is ignored, not fatal.
    previous = signal.signal(signal.SIGHUP, lambda _number, _frame: None)
    thread = threading.Thread(target=run, name="test-hooks", daemon=True)
    try:
        thread.start()
        home_key = worker_key(home_of(settings.home), os.environ)
        assert serve_worker(settings, service, home_key, store_key(home_of(settings.home), os.environ)) == 0
        thread.join(60)
    finally:
        signal.signal(signal.SIGHUP, previous)
        service.close()
    if failed:
        raise failed[0]
    assert not address.exists(), "the worker leaves no socket behind"


def test_a_stop_signal_that_lands_while_the_worker_accepts_a_connection_stops_it(
    hook_home: Path, embedder: object, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The signal's handler raises in the worker's main thread wherever it is. Taking a connection,
    # that is inside socketserver's handling of it, which catches every Exception and serves on:
    # the stop was lost (and the handler, which ignores a second signal while the worker cleans
    # up, had already been set aside), so the worker served until idle. Found as a test that hung.
    settings = Settings(home=str(hook_home), namespace="default", worker_idle=8)
    service = MemoryService(settings, embedder=embedder, background=False)  # type: ignore[arg-type]
    home = home_of(settings.home)
    key = worker_key(home, os.environ)
    address, _ = worker_paths(home, key)
    accept = socketserver.ThreadingMixIn.process_request

    def process_request(server: Any, request: Any, client_address: Any) -> None:
        os.kill(os.getpid(), signal.SIGHUP)  # handled here, in the main thread, before it returns
        accept(server, request, client_address)

    monkeypatch.setattr(socketserver.ThreadingMixIn, "process_request", process_request)

    def connect() -> None:
        wait_until(address.exists, within=60, what="the worker to listen")
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(str(address))

    previous = signal.signal(signal.SIGHUP, lambda _number, _frame: None)
    caplog.set_level(logging.INFO, logger="memtree_mcp")
    try:
        threading.Thread(target=connect, name="test-connect", daemon=True).start()
        assert serve_worker(settings, service, key, store_key(home, os.environ)) == 0
    finally:
        signal.signal(signal.SIGHUP, previous)
        service.close()
    assert "stopped by a signal" in caplog.text
    assert "idle for" not in caplog.text
    assert not address.exists(), "the worker leaves no socket behind"


# -- the hook and its worker, on the worker's socket --------------------------------------------------


def test_a_prompt_gets_the_memory_close_to_it_fenced_and_a_session_start_gets_a_brief(
    hook_home: Path, embedder: object, worker_starts: list[list[str]]
) -> None:
    writer = MemoryService(Settings(home=str(hook_home)), embedder=embedder)  # type: ignore[arg-type]
    writer.remember(BILLING)
    writer.remember(CAT)
    writer.close()
    said: dict[str, tuple[int | None, str]] = {}

    def hooks(_service: MemoryService) -> None:
        started = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})
        said["start"] = run_hook(started, "--seconds", "30")
        said["prompt"] = run_hook(
            prompt_event("which port does the billing service use?", "s1"), "--seconds", "30"
        )
        said["far"] = run_hook(prompt_event("quantum chromodynamics of gluons", "s1"), "--seconds", "30")

    serving(hook_home, embedder, hooks)

    status, output = said["start"]
    brief = context_in(output, "SessionStart")
    assert status == 0
    assert "Latest memories:" in brief and BILLING in brief and CAT in brief
    status, output = said["prompt"]
    context = context_in(output, "UserPromptSubmit")
    assert status == 0 and len(context) <= 2_000
    assert "Close to this prompt:" in context and BILLING in context
    assert "Latest memories:" not in context, "the session's start got its brief: not again"
    # Nothing close: Claude Code gets nothing, and the log says why.
    assert said["far"] == (0, "")
    assert "UserPromptSubmit: no context: nothing remembered is close enough to the prompt" in hook_log(
        hook_home
    )


def test_a_stop_hook_queues_the_turn_and_the_worker_stores_it(
    hook_home: Path, embedder: object, tmp_path: Path
) -> None:
    path = transcript(tmp_path, "Where do the backups go?", "To the NAS in the hall cupboard.")
    stored: list[str] = []

    def hooks(service: MemoryService) -> None:
        assert run_hook(stop_event(path), "--seconds", "30") == (0, "")
        folder = queue_folder(str(hook_home))
        wait_until(lambda: not list(folder.glob("*.json")), within=60, what="the worker to store the turn")
        memory = service.memory()
        assert memory is not None
        stored.extend(leaf.text for leaf in memory.leaves.values())

    serving(hook_home, embedder, hooks)
    assert stored == ["User: Where do the backups go?\n\nAssistant: To the NAS in the hall cupboard."]


def test_the_worker_follows_another_client_s_remember_before_the_next_prompt_asks(
    hook_home: Path, embedder: object
) -> None:
    # The agent remembers through its MCP server, another process: the worker's memory catches up
    # in the background, so the prompt after it does not wait for the follow.
    writer = MemoryService(Settings(home=str(hook_home)), embedder=embedder)  # type: ignore[arg-type]
    writer.remember(CAT)
    writer.close()
    followed: list[bool] = []

    def hooks(service: MemoryService) -> None:
        spaces = service.spaces
        wait_until(lambda: "default" in spaces and spaces["default"].version >= 0, within=60, what="warm")
        space = spaces["default"]
        before = space.version
        other = MemoryService(Settings(home=str(hook_home)), embedder=embedder)  # type: ignore[arg-type]
        try:
            other.remember(BILLING)
            latest = other.spaces["default"].version
        finally:
            other.close()
        assert latest > before
        wait_until(lambda: space.version == latest, within=30, what="the worker to follow the remember")
        followed.append(BILLING in {leaf.text for leaf in space.memory.leaves.values()})

    serving(hook_home, embedder, hooks)
    assert followed == [True]


def test_a_hook_queues_a_turn_without_a_worker_and_prints_nothing(hook_home: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path, "Which editor does the team use?", "Helix, with the default keymap.")
    assert run_hook(stop_event(path), "--queue-only") == (0, "")
    (queued,) = queue_folder(str(hook_home)).glob("*.json")
    record = json.loads(queued.read_text(encoding="utf-8"))
    assert (
        record["content"]
        == "User: Which editor does the team use?\n\nAssistant: Helix, with the default keymap."
    )
    assert record["session"] == "abc-123" and record["tags"] == ["claude-code"]
    assert queued.stat().st_mode & 0o077 == 0, "a queued turn is its user's only"


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
def test_input_that_is_not_claude_code_s_is_one_line_and_exit_1(
    stdin: str, named: str, hook_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_hook(stdin, "--queue-only") == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("memtree-mcp hook: ") and err.count("\n") == 1 and named in err
    assert not queue_folder(str(hook_home)).exists() or not list(queue_folder(str(hook_home)).glob("*.json"))


def test_a_refused_setting_is_one_line_naming_it_and_exit_1(
    hook_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMTREE_HOOK_MEMORIES", "lots")
    assert run_hook(prompt_event("hello"), "--seconds", "30") == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("memtree-mcp hook: MEMTREE_HOOK_MEMORIES") and err.count("\n") == 1


# -- the worker's answers ---------------------------------------------------------------------------


@pytest.fixture
def worker(hook_home: Path, service: MemoryService) -> _Worker:
    """A worker of the service's store, its model loaded."""
    caller = caller_of({"MEMTREE_HOME": service.settings.home})
    serving_worker = _Worker(service.settings, service, caller.key, caller.store)
    serving_worker.model_ready.set()
    return serving_worker


def asked(worker: _Worker, **fields: Any) -> dict[str, Any]:
    request = {"op": "recall", "key": worker.key, "namespace": "default", "timezone": "UTC"}
    request |= {"memories": 3, "chars": 2_000, "deadline": time.time() + 30}
    return worker.answer(request | fields)


def test_the_worker_refuses_a_request_it_cannot_serve_and_says_why(worker: _Worker) -> None:
    assert worker.answer({"op": "ping"}) == {"ok": True, "pid": os.getpid()}
    assert "started with other settings" in asked(worker, key="another")["error"]
    assert asked(worker, op="forget")["error"] == "unknown request 'forget'"
    assert asked(worker)["error"] == "unknown request 'recall'"  # a recall with no prompt
    assert asked(worker, prompt="x", memories=21)["error"] == "memories must be a whole number from 0 to 20"
    assert asked(worker, prompt="x", chars=10)["error"] == "chars must be a whole number from 200 to 20000"
    assert "Mars/Olympus" in asked(worker, prompt="x", timezone="Mars/Olympus")["error"]


def test_the_worker_says_why_a_prompt_or_a_session_start_gets_nothing(worker: _Worker) -> None:
    assert asked(worker, op="brief") == {"context": None, "why": "nothing remembered in this namespace yet"}
    assert asked(worker, prompt="anything", memories=0) == {
        "context": None,
        "why": "MEMTREE_HOOK_MEMORIES is 0",
    }
    worker.model_ready.clear()  # the model still loads: the hook's budget runs out first
    assert asked(worker, prompt="anything", deadline=time.time()) == {
        "context": None,
        "why": "the worker is still loading its model",
    }


def test_a_session_whose_start_got_no_brief_gets_it_with_its_first_prompt_within_its_characters(
    worker: _Worker, service: MemoryService
) -> None:
    for i in range(12):
        service.remember(
            f"Release note {i}: the billing service moved to port {8400 + i}. " + "Details. " * 20
        )
    first = asked(worker, prompt="which port does the billing service use?", session="s9", chars=600)
    assert first["context"] is not None and len(first["context"]) <= 600
    assert "Latest sessions:" in first["context"]
    again = asked(worker, prompt="which port does the billing service use?", session="s9")
    assert "Close to this prompt:" in again["context"] and "Latest sessions:" not in again["context"]


# -- no worker up, or one that could not start ----------------------------------------------------------


def test_with_no_worker_up_a_prompt_adds_nothing_within_its_budget_and_the_log_says_why(
    hook_home: Path, worker_starts: list[list[str]]
) -> None:
    started = time.monotonic()
    assert run_hook(prompt_event("which port does billing use?"), "--seconds", "0.5") == (0, "")
    assert time.monotonic() - started < 5  # its half second, on however busy a machine
    why = (
        f"UserPromptSubmit: no context: no worker was ready for {hook_home}; started one (later hooks use it)"
    )
    assert why in hook_log(hook_home)
    assert worker_starts == [["--namespace=default"]]


def test_a_worker_that_could_not_start_is_named_by_the_next_hook_in_one_line(
    hook_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    caller = caller_of(os.environ)
    client.leave_problem(caller.home, caller.key, "it cannot listen on its socket (no room left)")
    assert run_hook(prompt_event("hello"), "--seconds", "30") == (1, "")
    assert capsys.readouterr().err == "memtree-mcp hook: it cannot listen on its socket (no room left)\n"
    assert run_hook(prompt_event("hello"), "--seconds", "0.3") == (0, ""), "said once, then tried again"


def test_a_stop_hook_with_no_worker_up_keeps_the_turn_queued_and_starts_one(
    hook_home: Path, tmp_path: Path, worker_starts: list[list[str]]
) -> None:
    path = transcript(tmp_path, "Where do the backups go?", "To the NAS.")
    assert run_hook(stop_event(path), "--seconds", "30") == (0, "")
    assert len(list(queue_folder(str(hook_home)).glob("*.json"))) == 1
    assert f"Stop: the turn is queued; no worker was up for {hook_home}; started one" in hook_log(hook_home)
    assert worker_starts == [["--namespace=default"]]


# -- the full command: a drain, and a hook the quick path does not take -----------------------------------


@pytest.fixture
def in_process(hook_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., int]]:
    """``memtree-mcp ARGV`` with ``stdin`` in this process, as the shell would run it (its
    budget counted from now, the umask it sets put back)."""
    from memtree_mcp.cli import main
    from memtree_mcp.hook import worker

    umask = os.umask(0o022)
    os.umask(umask)

    def run(*argv: str, stdin: str = "") -> int:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        monkeypatch.setattr(worker, "STARTED", time.monotonic())
        client.STARTED = time.monotonic()
        return main(list(argv))

    yield run
    os.umask(umask)


def test_the_drain_stores_queued_turns_moves_an_unreadable_one_aside_and_names_those_that_wait(
    hook_home: Path, tmp_path: Path, in_process: Callable[..., int], capsys: pytest.CaptureFixture[str]
) -> None:
    path = transcript(tmp_path, "Which editor does the team use?", "Helix.")
    assert run_hook(stop_event(path), "--queue-only") == (0, "")
    folder = queue_folder(str(hook_home))
    (folder / "0000-broken.json").write_text("{half a record", encoding="utf-8")
    (folder / "0001-elsewhere.json").write_text(
        json.dumps({"content": "User: x", "store": "another-store"}), encoding="utf-8"
    )
    capsys.readouterr()
    assert in_process("hook", "--drain") == 0
    err = capsys.readouterr().err
    assert "memtree-mcp: hook queue: 0000-broken.json moved aside" in err
    waits = "1 turn waits for a hook with another embedder or store (its worker stores them)"
    assert err.endswith(f"memtree-mcp: hook queue: {waits}\n")
    assert (folder / "bad" / "0000-broken.json").exists()
    assert sorted(p.name for p in folder.glob("*.json")) == ["0001-elsewhere.json"]
    assert in_process("export") == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["content"] == "User: Which editor does the team use?\n\nAssistant: Helix."


def test_a_hook_with_a_flag_the_quick_path_does_not_take_answers_from_its_own_process(
    hook_home: Path, in_process: Callable[..., int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert in_process("remember", BILLING) == 0
    capsys.readouterr()
    asked_for = prompt_event("which port does the billing service use?")
    assert in_process("hook", "--llm", "none", "--seconds", "60", stdin=asked_for) == 0
    context = context_in(capsys.readouterr().out, "UserPromptSubmit")
    assert "Close to this prompt:" in context and BILLING in context
    assert in_process("hook", "--llm", "none", stdin="{not json") == 1
    assert capsys.readouterr().err.startswith("memtree-mcp hook: hook input is not JSON")

"""The seams of Claude Code's hooks (issue 47): whose settings a worker serves, where its socket
lives, who can read what the hooks write, what is left when a worker goes, and what a hostile
queue, input or socket can do to a hook. Hooks run as Claude Code runs them: a fresh process with
the event's JSON on stdin (the helpers come from ``test_hook.py``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_hook import (
    ROOT,
    TIMEOUT,
    context_of,
    memtree,
    prompt_event,
    stop_event,
    transcript,
    wait_for_worker,
    worker_pids,
)
from tests.waiting import wait_until

AWS_KEY = "AKIAIOSFODNN7" + "QWERTYU"  # an access key id of the documented shape, split for scanners


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """As ``test_hook.py``'s: a home of its own and a short runtime folder of its own; every worker
    of the home (there may be several: one per key) is stopped at the end."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith("MEMTREE_")}
    clean |= {"MEMTREE_HOME": str(tmp_path / "store"), "MEMTREE_WORKER_IDLE": "120"}
    clean["PYTHONPATH"] = str(ROOT) + os.pathsep + clean.get("PYTHONPATH", "")
    runtime = tempfile.mkdtemp(prefix="mt")
    clean["XDG_RUNTIME_DIR"] = runtime
    yield clean
    for pid in worker_pids(clean):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(runtime, ignore_errors=True)


def hook(
    env: dict[str, str], *argv: str, stdin: str, timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memtree_mcp", "hook", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def queue(env: dict[str, str]) -> Path:
    return Path(env["MEMTREE_HOME"]) / "hook-queue"


def queued(env: dict[str, str]) -> list[Path]:
    return sorted(queue(env).glob("*.json")) if queue(env).is_dir() else []


def stored(env: dict[str, str], namespace: str = "default") -> list[str]:
    if namespace not in memtree(env, "namespaces").stdout:
        return []
    done = memtree(env | {"MEMTREE_NAMESPACE": namespace}, "export")
    assert done.returncode == 0, done.stderr
    return [str(json.loads(line)["content"]) for line in done.stdout.splitlines()]


def runtime_folder(env: dict[str, str]) -> Path:
    return Path(env["XDG_RUNTIME_DIR"]) / f"memtree-mcp-{os.getuid()}"


def stop(env: dict[str, str], tmp_path: Path, prompt: str, answer: str, *argv: str) -> None:
    done = hook(env, *argv, stdin=stop_event(transcript(tmp_path, prompt, answer)))
    assert done.returncode == 0 and done.stderr == "", done.stderr


# -- each request is served by its caller's settings ---------------------------------------------------


@pytest.mark.slow
def test_a_keep_mode_worker_never_stores_the_secret_of_a_redact_or_refuse_mode_project(
    env: dict[str, str], tmp_path: Path
) -> None:
    wait_for_worker(env | {"MEMTREE_SECRETS": "keep"})  # the worker is started by a keep-mode project
    stop(env, tmp_path, f"Deploy with key {AWS_KEY} please", "Deployed.")  # redact, the default
    stop(env | {"MEMTREE_SECRETS": "refuse"}, tmp_path, f"And again with {AWS_KEY}", "Again.")
    wait_until(lambda: not queued(env), within=60, what="the worker to drain the queue")
    (content,) = stored(env)
    assert content.startswith("User: Deploy with key [redacted: aws-access-key] please")
    assert AWS_KEY not in content


@pytest.mark.slow
def test_a_turn_queued_without_telling_the_worker_is_stored_within_seconds(
    env: dict[str, str], tmp_path: Path
) -> None:
    wait_for_worker(env)
    # A Stop hook whose budget is gone before it can tell the worker (a busy machine): the turn is
    # queued and the hook's log says so; the worker notices the queue by itself.
    stop(env, tmp_path, "Where do the nightly backups go?", "To the NAS.", "--seconds", "0.3")
    assert "not told in time" in (queue(env) / "hook.log").read_text()
    wait_until(lambda: not queued(env), within=30, what="the worker to store the turn nobody told it of")
    assert stored(env) == ["User: Where do the nightly backups go?\n\nAssistant: To the NAS."]


@pytest.mark.slow
def test_a_hook_without_a_namespace_never_gets_or_feeds_another_project_s_memory(
    env: dict[str, str], tmp_path: Path
) -> None:
    project = env | {"MEMTREE_NAMESPACE": "projA"}
    assert memtree(project, "remember", "The projA billing service listens on port 7001.").returncode == 0
    wait_for_worker(project)  # the worker is started by projA's hooks
    asked = context_of(hook(env, "--seconds", "30", stdin=prompt_event("billing service port", "s2")))
    assert "7001" not in asked
    stop(env, tmp_path, "Where do the nightly backups go?", "To the NAS.")
    wait_until(lambda: not queued(env), within=60, what="the worker to drain the queue")
    assert stored(env) == ["User: Where do the nightly backups go?\n\nAssistant: To the NAS."]
    assert stored(env, "projA") == ["The projA billing service listens on port 7001."]


@pytest.mark.slow
def test_a_hook_s_own_limits_and_time_zone_are_served_whoever_started_the_worker(env: dict[str, str]) -> None:
    moment = "2026-03-14T23:30:00Z"  # the 14th in UTC, the 15th in Tokyo
    assert (
        memtree(
            env, "remember", "The build cache lives on bucket ci-cache.", "--timestamp", moment
        ).returncode
        == 0
    )
    wait_for_worker(env)  # UTC, three memories, 2,000 characters
    # A namespace counts its days in the zone stored with it: a hook set to another zone shows the
    # namespace's dates (the MCP server shows the same) and does not move it.
    tokyo = env | {"MEMTREE_TIMEZONE": "Asia/Tokyo"}
    context = context_of(hook(tokyo, "--seconds", "30", stdin=prompt_event("build cache bucket")))
    assert "· 2026-03-14]" in context
    # A namespace the Tokyo project's hooks create counts its days in Tokyo, in the same worker.
    tokyo_project = tokyo | {"MEMTREE_NAMESPACE": "tokyo"}
    assert (
        memtree(
            tokyo_project, "remember", "The Tokyo build cache is bucket ci-cache-jp.", "--timestamp", moment
        ).returncode
        == 0
    )
    context = context_of(hook(tokyo_project, "--seconds", "30", stdin=prompt_event("Tokyo build cache")))
    assert "· 2026-03-15]" in context and "· 2026-03-14]" not in context
    none = context_of(hook(env | {"MEMTREE_HOOK_MEMORIES": "0"}, stdin=prompt_event("build cache bucket")))
    assert "Close to this prompt" not in none
    short = context_of(
        hook(env | {"MEMTREE_HOOK_CHARS": "200"}, stdin=prompt_event("build cache bucket", "s3"))
    )
    assert 0 < len(short) <= 200


@pytest.mark.slow
def test_a_hook_with_another_llm_talks_to_a_worker_of_its_own(env: dict[str, str]) -> None:
    wait_for_worker(env)
    wait_for_worker(env | {"MEMTREE_LLM": "sampling"})
    assert len(worker_pids(env)) == 2
    wait_for_worker(env | {"MEMTREE_EMBEDDER": "local", "MEMTREE_LLM": "none"})  # the defaults, spelt out
    assert len(worker_pids(env)) == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEMTREE_SECRETS", "bogus"),
        ("MEMTREE_NAMESPACE", "a b"),
        ("MEMTREE_HOOK_MEMORIES", "21"),
        ("MEMTREE_HOOK_CHARS", "lots"),
        ("MEMTREE_TIMEZONE", "Mars/Olympus"),
        ("MEMTREE_HOOK_PROJECT", "maybe"),
        ("MEMTREE_MAX_CONTENT_CHARS", "1" * 10_000),
        ("MEMTREE_EMBEDDER", "bogus"),
        ("MEMTREE_LLM", " none "),
    ],
)
def test_a_bad_setting_in_the_hook_s_own_environment_is_refused_in_one_line_even_with_a_worker_up(
    variable: str, value: str, env: dict[str, str], tmp_path: Path
) -> None:
    wait_for_worker(env)
    bad = env | {variable: value}
    for stdin in (prompt_event("anything"), stop_event(transcript(tmp_path, "A question", "An answer"))):
        done = hook(bad, stdin=stdin)
        assert done.returncode == 1 and done.stdout == "", done.stderr
        assert done.stderr.startswith(f"memtree-mcp hook: {variable}: ") and done.stderr.count("\n") == 1
    assert queued(env) == []


# -- where the worker's socket lives ----------------------------------------------------------------------


@pytest.fixture
def places(env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    """``env`` with a temporary folder and a cache folder of its own (short paths: a socket's path
    has at most 107 bytes), so that no fallback reaches the machine's own."""
    short = Path(tempfile.mkdtemp(prefix="mt"))
    (short / "tmp").mkdir()
    yield env | {"TMPDIR": str(short / "tmp"), "XDG_CACHE_HOME": str(short / "cache")}
    shutil.rmtree(short, ignore_errors=True)


def squat(kind: str, path: Path) -> None:
    """Put at ``path`` what another local user (or a mistake) could leave there."""
    if kind == "a folder others can write":
        path.mkdir()
        path.chmod(0o777)
        if os.getuid() == 0:
            shutil.chown(path, "nobody")
    elif kind == "a link to a folder":
        (path.parent / "elsewhere").mkdir()
        path.symlink_to(path.parent / "elsewhere")
    elif kind == "a dangling link":
        path.symlink_to(path.parent / "nowhere")


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind",
    ["a folder others can write", "a link to a folder", "a dangling link", "a runtime folder that is gone"],
)
def test_a_worker_folder_someone_else_made_first_neither_loses_a_turn_nor_stops_the_hooks(
    kind: str, places: dict[str, str], tmp_path: Path
) -> None:
    name = f"memtree-mcp-{os.getuid()}"
    if kind == "a runtime folder that is gone":
        places = places | {"XDG_RUNTIME_DIR": str(tmp_path / "gone")}
    else:  # both the runtime folder's and the temporary folder's: the hooks fall back to the cache
        squat(kind, Path(places["XDG_RUNTIME_DIR"]) / name)
        squat(kind, Path(places["TMPDIR"]) / name)
    stop(places, tmp_path, "Which port does the wiki use?", "Port 8090.")
    assert memtree(places, "remember", "The wiki listens on port 8090.").returncode == 0
    context = context_of(hook(places, "--seconds", "60", stdin=prompt_event("wiki port")))
    assert "8090" in context
    wait_until(lambda: not queued(places), within=60, what="the worker to drain the queue")
    assert "User: Which port does the wiki use?\n\nAssistant: Port 8090." in stored(places)
    if kind != "a runtime folder that is gone":
        assert list((Path(places["XDG_CACHE_HOME"]) / "memtree-mcp" / "run").glob("worker-*.sock"))


@pytest.mark.slow
def test_a_worker_folder_under_a_long_path_still_works(env: dict[str, str], tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    long = env | {"XDG_RUNTIME_DIR": str(deep)}
    assert memtree(long, "remember", "The staging database is on port 5433.").returncode == 0
    assert "5433" in context_of(hook(long, "--seconds", "60", stdin=prompt_event("staging database port")))
    (address,) = (deep / f"memtree-mcp-{os.getuid()}").glob("worker-*.sock")
    assert len(os.fsencode(str(address))) > 108


# -- private files --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_file_and_folder_the_hooks_make_is_private_even_under_umask_022(
    places: dict[str, str], tmp_path: Path
) -> None:
    def run(*argv: str, stdin: str = "") -> None:
        done = subprocess.run(
            [sys.executable, "-m", "memtree_mcp", *argv],
            input=stdin,
            capture_output=True,
            text=True,
            env=places,
            timeout=TIMEOUT,
            umask=0o022,
        )
        assert done.returncode == 0, done.stderr

    home = Path(places["MEMTREE_HOME"])
    (home / "hook-queue").mkdir(parents=True)
    home.chmod(0o700)  # the user's own choice for the store's folder; the queue and log are the hook's
    (home / "hook-queue").chmod(0o755)  # as an older version left them
    (home / "hook-queue" / "hook.log").write_text("")
    (home / "hook-queue" / "hook.log").chmod(0o644)
    run("hook", stdin=stop_event(transcript(tmp_path, "Where are the runbooks?", "In docs/runbooks.")))
    run("hook", "--seconds", "60", stdin=prompt_event("runbooks"))
    wait_until(lambda: not queued(places), within=60, what="the worker to drain the queue")
    run(
        "hook",
        "--queue-only",
        stdin=stop_event(transcript(tmp_path, "And the on-call rota?", "In the wiki.")),
    )
    run("hook", "--drain")
    made = [Path(places["MEMTREE_HOME"]), runtime_folder(places)]
    found = [path for top in made for path in (top, *top.rglob("*"))]
    assert len(found) > 10 and all(path.exists() for path in found)
    shared = [
        f"{path} {stat.filemode(path.lstat().st_mode)}" for path in found if path.lstat().st_mode & 0o077
    ]
    assert shared == []


# -- when the worker goes --------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_worker_leaves_no_socket_when_stopped_or_idle_and_a_dead_one_s_is_cleared(
    env: dict[str, str],
) -> None:
    wait_for_worker(env)
    (address,) = runtime_folder(env).glob("worker-*.sock")
    (pid,) = worker_pids(env)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not worker_pids(env), within=30, what="the worker to exit")
    assert not address.exists()

    idle = env | {"MEMTREE_WORKER_IDLE": "1"}
    wait_for_worker(idle)
    wait_until(lambda: not worker_pids(env), within=60, what="the idle worker to exit")
    assert not address.exists()

    wait_for_worker(env)
    (pid,) = worker_pids(env)
    os.kill(pid, signal.SIGKILL)  # nothing can clean up after this
    wait_until(lambda: not listening(address), within=30, what="the worker to die")
    assert address.exists()
    started = time.monotonic()
    done = hook(env, "--seconds", "1", stdin=prompt_event("anything"))
    assert done.returncode == 0 and time.monotonic() - started < 3
    assert not address.exists() or listening(address)  # gone, or a new worker's


def listening(address: Path) -> bool:
    """Whether a process listens on the socket at ``address`` (a dead worker's refuses)."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(address))
        except (ConnectionRefusedError, FileNotFoundError):
            return False
    return True


@pytest.mark.slow
def test_a_cold_session_start_stays_within_its_budget(env: dict[str, str]) -> None:
    assert memtree(env, "remember", "The release train leaves on Thursdays.").returncode == 0
    event = json.dumps(
        {"session_id": "s", "transcript_path": "/x", "cwd": "/tmp", "hook_event_name": "SessionStart"}
    )
    started = time.monotonic()
    done = hook(env, stdin=event)
    took = time.monotonic() - started
    assert done.returncode == 0 and done.stderr == ""
    assert took < 3.0  # one second, and a loaded machine's interpreter start and exit


def test_the_first_prompt_gets_its_session_s_brief_while_the_model_still_loads(
    tmp_path: Path, embedder: object
) -> None:
    from memtree_mcp.config import Settings
    from memtree_mcp.hook.settings import caller_of
    from memtree_mcp.hook.worker import _Worker
    from memtree_mcp.service import MemoryService

    settings = Settings(home=str(tmp_path / "store"))
    writing = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    writing.remember("The release train leaves on Thursdays.")
    writing.close()

    class Loading:
        """The real model, still loading: every embedding waits until ``loaded`` is set."""

        loaded = threading.Event()

        def __getattr__(self, name: str) -> object:
            return getattr(embedder, name)

        def embed_batch(self, texts: list[str]) -> object:
            self.loaded.wait()
            return embedder.embed_batch(texts)  # type: ignore[attr-defined]

    service = MemoryService(settings, embedder=Loading(), background=False)  # type: ignore[arg-type]
    caller = caller_of({"MEMTREE_HOME": settings.home})
    worker = _Worker(settings, service, caller.key, caller.store)
    worker.warm("default")
    request = {"op": "recall", "key": caller.key, "namespace": "default", "timezone": "UTC"}
    request |= {
        "memories": 3,
        "chars": 2_000,
        "session": "s1",
        "prompt": "when does the release train leave?",
    }
    started = time.monotonic()
    answer = worker.answer(request | {"deadline": time.time() + 0.5})
    assert time.monotonic() - started < 2.0
    assert "Latest memories:" in answer["context"] and "Thursdays" in answer["context"]
    assert "Close to this prompt" not in answer["context"]
    Loading.loaded.set()
    warm = worker.answer(request | {"session": "s2", "deadline": time.time() + 30})
    assert "Close to this prompt:" in warm["context"]
    assert worker.warming is not None
    worker.warming.join(30)
    service.close()


# -- a hostile queue, input or socket ---------------------------------------------------------------------


def test_a_fifo_in_the_queue_is_moved_aside_and_the_drain_goes_on(
    env: dict[str, str], tmp_path: Path
) -> None:
    stop(env, tmp_path, "What does the deploy script need?", "Python 3.11.", "--queue-only")
    os.mkfifo(queue(env) / "0000-fifo.json")
    done = memtree(env, "hook", "--drain")  # TIMEOUT: a drain that waits on the FIFO fails here
    assert done.returncode == 0 and "0000-fifo.json moved aside" in done.stderr
    assert stat.S_ISFIFO((queue(env) / "bad" / "0000-fifo.json").lstat().st_mode)
    assert stored(env) == ["User: What does the deploy script need?\n\nAssistant: Python 3.11."]


def test_a_turn_an_older_hook_queued_without_a_namespace_goes_to_default_not_the_drain_s(
    env: dict[str, str],
) -> None:
    queue(env).mkdir(parents=True)
    record = {"content": "User: Is the VPN needed for staging?", "tags": ["claude-code"], "namespace": None}
    (queue(env) / "0001-old.json").write_text(json.dumps(record))
    assert memtree(env | {"MEMTREE_NAMESPACE": "projA"}, "hook", "--drain").returncode == 0
    assert stored(env) == ["User: Is the VPN needed for staging?"]


def test_a_ten_thousand_digit_integer_is_one_line_in_the_input_and_skipped_in_a_transcript(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = hook(env, "--queue-only", stdin='{"hook_event_name": "Stop", "n": ' + "7" * 10_000 + "}")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("memtree-mcp hook: hook input is not JSON") and done.stderr.count("\n") == 1
    path = transcript(tmp_path, "Which branch is released?", "The main branch.")
    path.write_text('{"type": "user", "n": ' + "7" * 10_000 + "}\n" + path.read_text())
    done = hook(env, "--queue-only", stdin=stop_event(path))
    assert done.returncode == 0 and done.stderr == ""
    assert len(queued(env)) == 1


@contextlib.contextmanager
def impostor(env: dict[str, str], answer: bytes, every: float) -> Iterator[None]:
    """A process of the user's own on the worker's socket (it holds the worker's lock) that answers
    ``answer`` a byte every ``every`` seconds, or all at once."""
    done = hook(env, "--seconds", "0.3", stdin=prompt_event("find the place"))  # makes the folder and lock
    assert done.returncode == 0, done.stderr
    for pid in worker_pids(env):  # the worker it started: the impostor takes its place
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not worker_pids(env), within=30, what="the worker to die")
    (lock,) = runtime_folder(env).glob("worker-*.lock")
    address = lock.with_suffix(".sock")
    address.unlink(missing_ok=True)
    with lock.open("a") as held, socket.socket(socket.AF_UNIX) as server:
        fcntl.flock(held, fcntl.LOCK_EX)
        server.bind(str(address))
        server.listen()
        stopping = threading.Event()

        def serve() -> None:
            server.settimeout(0.2)
            while not stopping.is_set():
                try:
                    channel, _ = server.accept()
                except TimeoutError:
                    continue
                with channel:
                    channel.recv(65_536)
                    with contextlib.suppress(OSError):
                        if every:
                            for byte in answer:
                                if stopping.wait(every):
                                    break
                                channel.sendall(bytes([byte]))
                        else:
                            channel.sendall(answer)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stopping.set()
            thread.join(10)


@pytest.mark.slow
def test_a_process_on_the_worker_s_socket_can_neither_hold_a_hook_nor_flood_claude_code(
    env: dict[str, str],
) -> None:
    trickle = json.dumps({"context": "a slow answer that never ends " * 4}).encode() + b"\n"
    with impostor(env, trickle, every=0.2):
        started = time.monotonic()
        done = hook(env, stdin=prompt_event("anything"), timeout=30)
        assert done.returncode == 0 and done.stdout == ""
        assert time.monotonic() - started < 3.0
    flood = json.dumps({"context": "x" * 200_000}).encode() + b"\n"
    with impostor(env, flood, every=0):
        done = hook(env, stdin=prompt_event("anything"), timeout=30)
        assert done.returncode == 0 and len(done.stdout) <= 2_000 + 200


# -- forget and purge reach the queue ---------------------------------------------------------------------


def test_forget_by_query_reaches_a_turn_still_in_the_queue(env: dict[str, str], tmp_path: Path) -> None:
    assert memtree(env, "remember", "The office plants are watered on Mondays.").returncode == 0
    stop(env, tmp_path, "What is the old deploy host?", "It is zeus.internal, retired.", "--queue-only")
    forgot = memtree(env, "forget", "--query", "old deploy host zeus.internal", "--yes")
    assert forgot.returncode == 0, forgot.stderr
    assert "deleted 1 memory" in forgot.stdout
    assert memtree(env, "hook", "--drain").returncode == 0
    assert stored(env) == ["The office plants are watered on Mondays."]


def test_doctor_redact_reaches_a_keep_mode_turn_still_in_the_queue(
    env: dict[str, str], tmp_path: Path
) -> None:
    keep = env | {"MEMTREE_SECRETS": "keep"}
    stop(keep, tmp_path, f"Use the key {AWS_KEY} for uploads", "Noted.", "--queue-only")
    assert AWS_KEY in queued(env)[0].read_text()  # the project keeps its secrets: its own choice
    redacting = memtree(env, "doctor", "--redact")
    assert "rewritten without secrets" in redacting.stdout, redacting.stdout + redacting.stderr
    assert memtree(keep, "hook", "--drain").returncode == 0  # a keep-mode drain later finds nothing
    (content,) = stored(env)
    assert AWS_KEY not in content and "[redacted: aws-access-key]" in content


# -- the groups of settings ------------------------------------------------------------------------------


def test_every_setting_is_served_per_request_or_names_the_worker_or_is_the_process_s_own() -> None:
    from memtree_mcp import config
    from memtree_mcp.config import OTHER_VARIABLES, Settings
    from memtree_mcp.hook import settings as hook_settings

    groups = [
        hook_settings.PER_REQUEST,
        hook_settings.APPLIED_BY_CALLER,
        hook_settings.WORKER_KEY,
        hook_settings.PROCESS_ONLY,
    ]
    named = [field for group in groups for field in group]
    every = [*Settings.model_fields, *(name.removeprefix("MEMTREE_").lower() for name in OTHER_VARIABLES)]
    assert sorted(named) == sorted(every)  # each once: a new setting must be put in a group
    assert set(hook_settings.STORE_KEY) <= set(hook_settings.WORKER_KEY)
    bounds = {"hook_memories": hook_settings.HOOK_MEMORIES, "hook_chars": hook_settings.HOOK_CHARS}
    bounds["max_content_chars"] = hook_settings.CONTENT_CHARS
    for field, (low, high) in bounds.items():
        limits = {type(item).__name__: item for item in Settings.model_fields[field].metadata}
        assert getattr(limits["Ge"], "ge", None) == low
        assert Settings.model_fields[field].default == hook_settings.DEFAULTS[field]
        if "Le" in limits:
            assert limits["Le"].le == high
    for field, default in hook_settings.KEY_DEFAULTS.items():
        assert Settings.model_fields[field].default == default
    assert (hook_settings.EMBEDDERS, hook_settings.LLMS) == (config.EMBEDDERS, config.LLMS)


def test_the_quick_path_still_imports_no_settings_library() -> None:
    probe = (
        "import sys, io\n"
        "from memtree_mcp.hook import client as hook_client\n"
        "hook_client.caller_of({'MEMTREE_HOME': '/tmp/x', 'MEMTREE_TIMEZONE': 'Europe/Berlin'})\n"
        "print(sorted(m for m in ('pydantic', 'numpy', 'lancedb', 'platformdirs') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

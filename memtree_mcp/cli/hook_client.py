"""``memtree-mcp hook``'s quick path: Claude Code's hooks answered by a warm worker.

Every hook is a fresh process, and loading the embedder and opening the store takes seconds on a
busy machine, more than a prompt can wait. So the hook process imports only the standard library
(no numpy, onnxruntime, lancedb, pyarrow, not even the settings' pydantic) and asks one local
worker per home, ``memtree-mcp hook --worker``, that keeps the model and the store open:

- ``SessionStart`` starts the worker when none is up and prints a short brief of the project when
  it answers in time; ``UserPromptSubmit`` prints what the worker recalls for the prompt, fenced as
  remembered reference data; ``Stop`` writes the turn to the queue and tells the worker to store it.
- A hook that finds no worker starts one and adds nothing: it never waits past its budget
  (``--seconds``). Why a hook added nothing is logged at INFO to ``hook.log`` beside the queue.
- The channel is a Unix socket in a folder only the user can enter (mode 0700, owned by the user,
  checked) and is itself mode 0600: the kernel keeps every other user out, with no port to find
  and no token to leak, which loopback TCP could not give (any local user can connect to a port).
- One worker per home: the worker holds an exclusive lock on a file beside the socket for its
  whole life; a second one started at the same time finds it taken and exits before loading
  anything. The worker exits after MEMTREE_WORKER_IDLE without a request (30 minutes).

Where Unix sockets are missing (Windows), the hook does its work in its own process as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

STARTED = time.monotonic()
"""About when this process started: a hook's time counts from here."""
HOOK_SECONDS = 1.0
"""The longest a hook keeps Claude Code waiting."""
GIST_CHARS = 600
"""How much of the answer a remembered turn keeps."""
TRANSCRIPT_TAIL = 2_000_000
"""How much of the end of a transcript is read for the last turn."""
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")
TRUE = ("1", "true", "yes", "on")
LOG_BYTES = 1_000_000
"""``hook.log`` is moved to ``hook.log.1`` past this size."""
POLL_SECONDS = 0.05
"""How often a hook that started the worker tries it again while its budget lasts."""
EXIT_ALLOWANCE = 0.1
"""Seconds kept back from a hook's budget for printing and leaving."""


class HookInputError(Exception):
    """The hook's input is not what Claude Code sends; the message says what is wrong."""


class WorkerProblem(Exception):
    """The worker could not start (a refused setting); the message is its own."""


# -- where things are --------------------------------------------------------------------------------


def home_of(flag: str | None = None) -> str:
    """The home the settings would name (``--home``, else MEMTREE_HOME, else the user data folder),
    as an absolute path when it is local."""
    raw = (flag or os.environ.get("MEMTREE_HOME", "")).strip()
    if not raw:
        import platformdirs

        return platformdirs.user_data_dir("memtree-mcp", appauthor=False)
    return raw if "://" in raw else os.path.abspath(os.path.expanduser(raw))


def queue_folder(home: str) -> Path:
    """Where Stop leaves the turns to store: beside the store when it is local."""
    if "://" in home:
        import platformdirs

        return Path(platformdirs.user_cache_dir("memtree-mcp")) / "hook-queue"
    return Path(home) / "hook-queue"


def worker_folder() -> Path:
    """The folder of the workers' sockets and locks: only its user may enter it. Raises
    PermissionError when it exists with other owners or permissions."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"memtree-mcp-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not a folder only you can use; remove it and try again")
    return folder


def worker_paths(home: str) -> tuple[Path, Path]:
    """The socket and the lock file of the worker of ``home``."""
    key = hashlib.sha256(home.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    folder = worker_folder()
    return folder / f"worker-{key}.sock", folder / f"worker-{key}.lock"


def problem_path(home: str) -> Path:
    """Where a worker that could not start (a refused setting) leaves why, for the next hook to say."""
    socket_path, _ = worker_paths(home)
    return socket_path.with_suffix(".problem")


def log(home: str, message: str) -> None:
    """One INFO line in ``hook.log`` beside the queue (never fails the hook)."""
    try:
        folder = queue_folder(home)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "hook.log"
        if path.exists() and path.stat().st_size > LOG_BYTES:
            path.replace(folder / "hook.log.1")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with path.open("a", encoding="utf-8") as file:
            file.write(f"{stamp} INFO {message}\n")
    except OSError:
        pass


# -- the worker, from the hook's side ----------------------------------------------------------------


def ask(address: Path, request: Mapping[str, Any], seconds: float) -> dict[str, Any] | None:
    """The worker's answer to ``request`` within ``seconds``; None when no worker listens (or it
    is still loading), and TimeoutError when it listens but does not answer in time."""
    if seconds <= 0:
        raise TimeoutError
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.settimeout(seconds)
        try:
            channel.connect(str(address))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        channel.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        received = bytearray()
        while not received.endswith(b"\n"):
            chunk = channel.recv(65_536)
            if not chunk:
                break
            received += chunk
    answer = json.loads(received.decode("utf-8") or "null")
    return answer if isinstance(answer, dict) else None


def worker_running(lock: Path) -> bool:
    """Whether a worker holds ``lock`` (is up, or starting)."""
    import fcntl

    with lock.open("a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(file, fcntl.LOCK_UN)
    return False


def start_worker(home: str, flags: Sequence[str]) -> bool:
    """Start the worker of ``home`` in the background unless one is up or starting; whether one
    was started. The worker takes the lock first thing, so a second start exits at once."""
    _, lock = worker_paths(home)
    if worker_running(lock):
        return False
    subprocess.Popen(
        [sys.executable, "-m", "memtree_mcp", "hook", "--worker", *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return True


_held: list[IO[str]] = []  # the worker's lock file, open for the process's life


def hold_worker_lock(home: str) -> bool:
    """Take the worker lock of ``home`` for this process's life; False when another worker has it."""
    import fcntl

    _, lock = worker_paths(home)
    file = lock.open("a")
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        return False
    _held.append(file)
    return True


# -- what Claude Code sends --------------------------------------------------------------------------


def read_event(stream: IO[str]) -> dict[str, Any]:
    """The hook's JSON object from ``stream``; HookInputError says what is wrong with it."""
    try:
        event = json.loads(stream.read() or "null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HookInputError(f"hook input is not JSON ({exc}); run this from a Claude Code hook") from None
    except RecursionError:
        raise HookInputError(
            "hook input is nested too deeply to read; run this from a Claude Code hook"
        ) from None
    if not isinstance(event, dict):
        raise HookInputError("hook input is not a JSON object; run this from a Claude Code hook")
    name = event.get("hook_event_name")
    if name not in EVENTS:
        raise HookInputError(
            f"hook_event_name is {name!r}; memtree-mcp hook handles SessionStart, UserPromptSubmit and Stop"
        )
    if name == "UserPromptSubmit" and not isinstance(event.get("prompt"), str):
        raise HookInputError("UserPromptSubmit input has no prompt text; run this from a Claude Code hook")
    if name == "Stop" and not isinstance(event.get("transcript_path"), str):
        raise HookInputError("Stop input has no transcript_path; run this from a Claude Code hook")
    return event


def last_turn(event: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the user's last prompt, the answer) of the session, from the transcript and the event;
    None when the transcript holds no prompt. Raises HookInputError for an unreadable transcript."""
    path = Path(str(event["transcript_path"]))
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # /dev/zero, a FIFO: never read without end
            raise HookInputError(f"the transcript {path} is not a regular file")
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            # The last turn is near the end; a long last answer pushes its prompt further back.
            for tail in (TRANSCRIPT_TAIL, 16 * TRANSCRIPT_TAIL):
                file.seek(max(0, size - tail))
                lines = file.read(tail).decode("utf-8", errors="replace").splitlines()
                turn = _turn_in(lines, event)
                if turn is not None or tail >= size:
                    return turn
            return turn
    except OSError as exc:
        raise HookInputError(f"cannot read the transcript {path} ({exc.strerror or exc})") from None


def _turn_in(lines: list[str], event: Mapping[str, Any]) -> tuple[str, str] | None:
    prompt: str | None = None
    answers: list[str] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # the first line of a tail, or a line being written
        if not isinstance(entry, dict) or not isinstance(entry.get("message"), dict):
            continue
        text = _text(entry["message"].get("content"))
        if entry.get("type") == "user" and text:
            prompt, answers = text, []
        elif entry.get("type") == "assistant" and text:
            answers.append(text)
    answer = event.get("last_assistant_message")
    if not isinstance(answer, str) or not answer.strip():
        answer = answers[-1] if answers else ""
    return (prompt, answer) if prompt else None


def _text(content: object) -> str:
    """The text of a transcript message: a string, or the ``text`` blocks of a list (tool calls
    and tool results are not what the user said)."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [
            block.get("text") for block in content if isinstance(block, dict) and block.get("type") == "text"
        ]
        return "\n".join(part for part in parts if isinstance(part, str)).strip()
    return ""


def gist(answer: str) -> str:
    """The start of ``answer``, cut at a sentence or word end near :data:`GIST_CHARS`."""
    answer = answer.strip()
    if len(answer) <= GIST_CHARS:
        return answer
    cut = answer[:GIST_CHARS]
    end = max(cut.rfind(". "), cut.rfind("\n"))
    if end < GIST_CHARS // 2:
        end = cut.rfind(" ")
    return cut[: end + 1 if end > 0 else GIST_CHARS].rstrip() + " …"


def turn_record(event: Mapping[str, Any], namespace: str | None) -> dict[str, Any] | None:
    """The record of the session's last turn, as import reads it; None when there is no turn."""
    turn = last_turn(event)
    if turn is None:
        return None
    prompt, answer = turn
    record: dict[str, Any] = {
        "content": f"User: {prompt}" + (f"\n\nAssistant: {gist(answer)}" if answer else ""),
        "tags": ["claude-code"],
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "namespace": namespace,
    }
    if isinstance(event.get("session_id"), str) and event["session_id"].strip():
        record["session"] = event["session_id"][:128]
    return record


def without_secrets(record: dict[str, Any], mode: str, home: str) -> dict[str, Any] | None:
    """``record`` with its secrets redacted (MEMTREE_SECRETS ``mode``); None when ``refuse`` keeps
    it out. No secret of a turn reaches the queue on disk."""
    if mode == "keep":
        return record
    from memtree_mcp.core.secrets import find_secrets, redacted  # detect-secrets: a fifth of a second

    found = find_secrets(str(record["content"]))
    if not found:
        return record
    if mode == "refuse":
        log(home, f"Stop: the turn holds a secret ({found[0].kind}) and MEMTREE_SECRETS=refuse: not stored")
        return None
    return record | {"content": redacted(str(record["content"]), found)}


def write_queued(home: str, record: Mapping[str, Any]) -> None:
    """Add ``record`` to the queue: one file a turn, written whole then renamed, so that a drain
    never reads half a record."""
    folder = queue_folder(home)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{uuid.uuid4().hex}.tmp"
    partial.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    partial.replace(folder / f"{time.time_ns()}-{uuid.uuid4().hex[:8]}.json")


def queue_turn(event: Mapping[str, Any], home: str, namespace: str | None, mode: str = "redact") -> bool:
    """Add the session's last turn to the queue, its secrets redacted; False when there is none
    (or MEMTREE_SECRETS=refuse kept it out)."""
    record = turn_record(event, namespace)
    record = without_secrets(record, mode, home) if record is not None else None
    if record is None:
        return False
    write_queued(home, record)
    return True


# -- the quick path ----------------------------------------------------------------------------------


def quick(argv: Sequence[str], stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int | None:
    """Run ``memtree-mcp hook`` (``argv``: what follows ``hook``) on the quick path and return its
    exit status; None when it must take the full path (``--drain``, ``--help``, an option it does
    not know, or no Unix sockets here)."""
    options = _options(argv)
    if options is None or not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return None
    home = home_of(options.get("home"))
    flags = [f"--{name}={options[name]}" for name in ("home", "namespace") if options.get(name)]
    if options.get("worker"):
        return None if hold_worker_lock(home) else 0  # the full path serves; another worker is up
    try:
        event = read_event(stdin or sys.stdin)
        namespace = options.get("namespace") or os.environ.get("MEMTREE_NAMESPACE") or None
        if options.get("project") or os.environ.get("MEMTREE_HOOK_PROJECT", "").lower() in (
            "1",
            "true",
            "yes",
        ):
            from memtree_mcp.core.folders import folder_namespace, project_root

            if isinstance(event.get("cwd"), str) and event["cwd"]:
                namespace = folder_namespace(project_root(event["cwd"]))
        return _answer(event, home, namespace, flags, options, stdout or sys.stdout)
    except (HookInputError, WorkerProblem) as exc:
        print(f"memtree-mcp hook: {exc}", file=sys.stderr)
        return 1
    except PermissionError as exc:
        print(f"memtree-mcp hook: {exc}", file=sys.stderr)
        log(home, f"no worker: {exc}")
        return 1


def _options(argv: Sequence[str]) -> dict[str, Any] | None:
    """The hook's options, or None for what the quick path does not take."""
    options: dict[str, Any] = {"seconds": HOOK_SECONDS}
    words = list(argv)
    while words:
        word = words.pop(0)
        name, _, value = word.partition("=")
        if name in ("--queue-only", "--project", "--worker") and not value:
            options[name[2:].replace("-", "_")] = True
        elif name in ("--seconds", "--home", "--namespace"):
            if not value:
                if not words:
                    return None
                value = words.pop(0)
            options[name[2:]] = value
        else:
            return None
    try:
        options["seconds"] = float(options["seconds"])
    except ValueError:
        return None
    return options


def _answer(
    event: Mapping[str, Any],
    home: str,
    namespace: str | None,
    flags: Sequence[str],
    options: Mapping[str, Any],
    out: IO[str],
) -> int:
    name = str(event["hook_event_name"])
    address, _ = worker_paths(home)
    if name == "Stop":
        record = turn_record(event, namespace)
        if record is None:
            return 0
        if not options.get("queue_only"):  # a worker that is up redacts, queues and stores it
            try:
                answer = ask(address, {"op": "turn", "record": record}, _left(options, 0.3))
            except (TimeoutError, OSError, ValueError):
                answer = None
            if answer is not None and answer.get("ok"):
                return 0
        mode = os.environ.get("MEMTREE_SECRETS", "redact").strip().lower()
        kept = without_secrets(record, mode, home)
        if kept is not None:
            write_queued(home, kept)
            if not options.get("queue_only"):
                state = "started one" if start_worker(home, flags) else "one is starting"
                log(home, f"Stop: the turn is queued; no worker was up for {home}; {state}")
        return 0
    deadline = time.time() + _left(options, 0.0)
    request: dict[str, Any] = {
        "op": "brief" if name == "SessionStart" else "recall",
        "namespace": namespace,
        "session": event.get("session_id") if isinstance(event.get("session_id"), str) else None,
        "deadline": deadline,
    }
    if name == "UserPromptSubmit":
        request["prompt"] = event["prompt"]
    answer = _tell(address, home, flags, request, _left(options, EXIT_ALLOWANCE), name)
    context = answer.get("context") if answer else None
    if isinstance(context, str) and context:
        output = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}}
        out.write(json.dumps(output, ensure_ascii=False) + "\n")
        out.flush()
    elif answer is not None and answer.get("why"):
        log(home, f"{name}: no context: {answer['why']}")
    return 0


def _left(options: Mapping[str, Any], keep: float) -> float:
    return float(options["seconds"]) - (time.monotonic() - STARTED) - keep


def _tell(
    address: Path, home: str, flags: Sequence[str], request: Mapping[str, Any], seconds: float, name: str
) -> dict[str, Any] | None:
    """Ask the worker; when none answers, start one (unless one is starting), wait for it while the
    budget lasts, and log why the hook added nothing."""
    began = time.monotonic()
    try:
        answer = ask(address, request, seconds)
    except TimeoutError:
        log(home, f"{name}: no context: the worker did not answer within the hook's budget")
        return None
    except (OSError, ValueError) as exc:
        log(home, f"{name}: no context: the worker's channel failed ({exc})")
        answer = None
    if answer is not None:
        return answer
    _say_problem(home)
    started = start_worker(home, flags)
    while (left := seconds - (time.monotonic() - began)) > POLL_SECONDS:
        time.sleep(POLL_SECONDS)  # the budget leaves room to wait for the worker to come up
        _say_problem(home)
        try:
            answer = ask(address, request, left - POLL_SECONDS)
        except (TimeoutError, OSError, ValueError):
            break
        if answer is not None:
            return answer
    state = "started one" if started else "one is starting"
    log(home, f"{name}: no context: no worker was ready for {home}; {state} (later hooks use it)")
    return None


def leave_problem(home: str, problem: str) -> None:
    """What a worker that cannot start says, for the hook that waits for it (and the log)."""
    log(home, f"the hook worker cannot start: {problem}")
    with contextlib.suppress(OSError):
        problem_path(home).write_text(problem + "\n", encoding="utf-8")


def _say_problem(home: str) -> None:
    """Raise WorkerProblem with what a worker that could not start left behind."""
    path = problem_path(home)
    try:
        told = path.read_text(encoding="utf-8").strip()
    except OSError:
        return
    path.unlink(missing_ok=True)
    raise WorkerProblem(told or "the worker could not start")

"""``memtree-mcp hook``'s quick path: Claude Code's hooks answered by a warm worker.

Every hook is a fresh process, and loading the embedder and opening the store takes seconds on a
busy machine, more than a prompt can wait. So the hook process imports only the standard library
(no numpy, onnxruntime, lancedb, pyarrow, not even the settings' pydantic) and asks a local
worker, ``memtree-mcp hook --worker``, that keeps the model and the store open:

- ``SessionStart`` starts the worker when none is up and prints a short brief of the project when
  it answers in time; ``UserPromptSubmit`` prints what the worker recalls for the prompt, fenced as
  remembered reference data; ``Stop`` queues the turn first, then tells the worker to store it.
- A hook never waits past its budget (``--seconds``, counted from the start of its process): one
  that finds no worker clears a dead one's socket, starts one and adds nothing. Why a hook added
  nothing is logged at INFO to ``hook.log`` beside the queue.
- Each request carries its caller's settings and is served by them; the settings that change what
  a worker loads name it, so hooks whose settings differ there never share one
  (:mod:`memtree_mcp.hook.settings`).

The channel is a Unix socket in a folder only the user can enter (mode 0700, owned by the user,
checked, and one under the user's cache folder when another user made it first) and is itself
mode 0600: the kernel keeps every other user out, with no port to find and no token to leak,
which loopback TCP could not give (any local user can connect to a port). One worker per key: it
holds an exclusive lock on a file beside the socket for its whole life; a second one started at
the same time finds it taken and exits before loading anything. A hook reads a bounded answer,
within its budget however slowly the answer comes.

Where Unix sockets are missing (Windows), the hook does its work in its own process.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from memtree_mcp.hook.settings import (
    Caller,
    SettingProblem,
    caller_of,
    home_of,
    log,
    private_open,
    problem_path,
    queue_folder,
    worker_key,
    worker_paths,
)
from memtree_mcp.hook.turns import HookInputError, read_event, turn_record, without_secrets, write_queued


def _process_start() -> float:
    """``time.monotonic()`` when this process started, where the system says (Linux); else now.

    A hook's budget is what Claude Code waits, from the start of the process: the interpreter's own
    start (40 ms, several times that on a loaded machine) counts, which the time this module is
    imported would leave out (a cold SessionStart took 1.1 to 1.3 s against its one second)."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 10 else now


STARTED = _process_start()
"""When this process started: a hook's time counts from here."""
HOOK_SECONDS = 1.0
"""The longest a hook keeps Claude Code waiting."""
POLL_SECONDS = 0.05
"""How often a hook that started the worker tries it again while its budget lasts."""
EXIT_ALLOWANCE = 0.1
"""Seconds kept back from a hook's budget for printing and leaving."""
ANSWER_BYTES = 6 * 20_000 + 4_096
"""The longest answer a hook reads from the worker: MEMTREE_HOOK_CHARS' maximum, each character
escaped at worst, and the JSON around it. A longer one is not a worker's."""
SOCKET_PATH_BYTES = 100
"""The longest socket path bound or connected as it is: an address holds 108 bytes on Linux and
104 on macOS, with its final NUL; a longer path is reached from inside its folder."""


class WorkerProblem(Exception):
    """The worker could not start (a refused setting); the message is its own."""


# -- the worker, from the hook's side ----------------------------------------------------------------


@contextlib.contextmanager
def reachable(path: Path) -> Iterator[str]:
    """The address to bind or connect the socket at ``path`` by: the path itself, or, when it is
    longer than a socket address holds (:data:`SOCKET_PATH_BYTES`), its bare name from inside its
    folder, for the moment (this process's working folder changes meanwhile: callers do it while
    they are single-threaded). Raises OSError when the folder cannot be entered."""
    full = str(path)
    if len(os.fsencode(full)) <= SOCKET_PATH_BYTES:
        yield full
        return
    back = os.getcwd()
    os.chdir(path.parent)
    try:
        yield path.name
    finally:
        os.chdir(back)


def ask(
    address: Path, request: Mapping[str, Any], seconds: float, limit: int = ANSWER_BYTES
) -> dict[str, Any] | None:
    """The worker's answer to ``request`` within ``seconds`` in all; None when no worker listens.
    Raises TimeoutError when it listens but has not answered whole in time (however it trickles),
    and ValueError for an answer longer than ``limit`` bytes or not JSON."""
    if seconds <= 0:
        raise TimeoutError
    deadline = time.monotonic() + seconds
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.settimeout(seconds)
        try:
            with reachable(address) as name:
                channel.connect(name)
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        channel.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        received = bytearray()
        while not received.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            channel.settimeout(left)
            chunk = channel.recv(65_536)
            if not chunk:
                break
            received += chunk
            if len(received) > limit:
                raise ValueError(f"the answer on the worker's socket is longer than {limit:,} bytes")
    answer = json.loads(received.decode("utf-8") or "null")
    return answer if isinstance(answer, dict) else None


def worker_running(lock: Path) -> bool:
    """Whether a worker holds ``lock`` (is up, or starting)."""
    import fcntl

    with os.fdopen(private_open(lock, os.O_RDWR), "r+") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(file, fcntl.LOCK_UN)
    return False


def remove_stale(address: Path, lock: Path) -> bool:
    """Remove the socket a worker left behind (killed, or gone before it could), whether one was:
    one is stale when nobody holds the lock, since a worker holds it for its whole life. The lock
    is held while the socket goes, so that a worker starting meanwhile cannot bind a socket that
    this then removes."""
    import fcntl

    if not address.exists() and not address.is_symlink():
        return False
    with os.fdopen(private_open(lock, os.O_RDWR), "r+") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            address.unlink(missing_ok=True)
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)
    return True


def start_worker(caller: Caller, flags: Sequence[str]) -> bool:
    """Start the worker of ``caller`` in the background unless one is up or starting; whether one
    was started. It inherits this process's environment, so it has the caller's settings; it takes
    the lock first thing, so a second start exits at once."""
    _, lock = worker_paths(caller.home, caller.key)
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


_held: dict[Path, IO[str]] = {}  # the worker's lock file, open for the process's life


def hold_worker_lock(home: str, key: str) -> bool:
    """Take the lock of the worker ``key`` of ``home`` for this process's life; False when another
    worker has it. Raises PermissionError as :func:`worker_folder`."""
    import fcntl

    _, lock = worker_paths(home, key)
    if lock in _held:
        return True
    file = os.fdopen(private_open(lock, os.O_RDWR), "r+")
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        return False
    _held[lock] = file
    return True


# -- the quick path ----------------------------------------------------------------------------------


def quick(argv: Sequence[str], stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int | None:
    """Run ``memtree-mcp hook`` (``argv``: what follows ``hook``) on the quick path and return its
    exit status; None when it must take the full path (``--drain``, ``--help``, an option it does
    not know, no Unix sockets here, or a worker that took its lock and now loads)."""
    options = _options(argv)
    if options is None or not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return None
    os.umask(0o077)  # as the CLI: whatever this process creates is its user's only
    if options.get("worker"):
        home = home_of(options.get("home"))
        try:
            held = hold_worker_lock(home, worker_key(home, os.environ))
        except OSError as exc:
            print(f"memtree-mcp hook: {exc}", file=sys.stderr)
            log(home, f"the hook worker cannot start: {exc}")
            return 1
        return None if held else 0  # the full path serves; another worker is up
    home = home_of(options.get("home"))
    try:
        event = read_event(stdin or sys.stdin)
        caller = caller_of(os.environ, options, event)
        return _answer(event, caller, options, stdout or sys.stdout)
    except (HookInputError, SettingProblem, WorkerProblem) as exc:
        print(f"memtree-mcp hook: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # no private folder for the worker anywhere, a queue that cannot be written
        print(f"memtree-mcp hook: {exc}", file=sys.stderr)
        log(home, f"hook failed: {exc}")
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


def _worker_flags(caller: Caller, options: Mapping[str, Any]) -> list[str]:
    """The worker's flags: the home as the hook was given it, and the caller's namespace, which
    the worker loads while it warms."""
    flags = [f"--home={options['home']}"] if options.get("home") else []
    return [*flags, f"--namespace={caller.namespace}"]


def _answer(event: Mapping[str, Any], caller: Caller, options: Mapping[str, Any], out: IO[str]) -> int:
    name = str(event["hook_event_name"])
    if name == "Stop":
        record = turn_record(event, caller)
        kept = without_secrets(record, caller.secrets, caller.home) if record is not None else None
        if kept is None:
            return 0
        try:  # queued first, whatever the worker's state: a turn is on disk before anything else
            write_queued(caller.home, kept)
        except OSError as exc:
            raise OSError(
                f"cannot queue the turn in {queue_folder(caller.home)} ({exc.strerror or exc})"
            ) from None
        if not options.get("queue_only"):
            _store_soon(caller, options)
        return 0
    # When this hook stops listening at the latest (a poll's wait ends before the budget's): an
    # answer the worker finishes later is not seen, and its brief must not count as given.
    deadline = time.time() + _left(options, EXIT_ALLOWANCE + POLL_SECONDS)
    request: dict[str, Any] = {
        "op": "brief" if name == "SessionStart" else "recall",
        "key": caller.key,
        "namespace": caller.namespace,
        "timezone": caller.timezone,
        "memories": caller.memories,
        "chars": caller.chars,
        "session": event.get("session_id") if isinstance(event.get("session_id"), str) else None,
        "deadline": deadline,
    }
    if name == "UserPromptSubmit":
        request["prompt"] = event["prompt"]
    answer = _tell(caller, options, request, _left(options, EXIT_ALLOWANCE), name)
    context = answer.get("context") if answer else None
    if isinstance(context, str) and len(context) > caller.chars:
        log(caller.home, f"{name}: no context: the answer is longer than MEMTREE_HOOK_CHARS ({caller.chars})")
    elif isinstance(context, str) and context:
        output = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}}
        out.write(json.dumps(output, ensure_ascii=False) + "\n")
        out.flush()
    elif answer is not None and (answer.get("why") or answer.get("error")):
        log(caller.home, f"{name}: no context: {answer.get('why') or answer.get('error')}")
    return 0


def _store_soon(caller: Caller, options: Mapping[str, Any]) -> None:
    """Tell the caller's worker to store the queue, or start one (which stores it when warm). The
    turn is queued already: nothing here can lose it, so a failure is only logged."""
    try:
        address, lock = worker_paths(caller.home, caller.key)
        try:
            answer = ask(address, {"op": "drain", "key": caller.key}, _left(options, 0.3))
        except TimeoutError:
            log(
                caller.home,
                "Stop: the turn is queued; the worker was not told in time (its next drain stores it)",
            )
            return
        except (OSError, ValueError):
            answer = None
        if answer is not None and answer.get("ok"):
            return
        remove_stale(address, lock)
        state = "started one" if start_worker(caller, _worker_flags(caller, options)) else "one is starting"
        log(caller.home, f"Stop: the turn is queued; no worker was up for {caller.home}; {state}")
    except OSError as exc:
        log(caller.home, f"Stop: the turn is queued; no worker can be asked to store it ({exc})")


def _left(options: Mapping[str, Any], keep: float) -> float:
    return float(options["seconds"]) - (time.monotonic() - STARTED) - keep


def _tell(
    caller: Caller, options: Mapping[str, Any], request: Mapping[str, Any], seconds: float, name: str
) -> dict[str, Any] | None:
    """Ask the caller's worker; when none answers, clear a dead one's socket, start one (unless one
    is starting), wait for it while the budget lasts, and log why the hook added nothing."""
    address, lock = worker_paths(caller.home, caller.key)
    began = time.monotonic()
    try:
        answer = ask(address, request, seconds)
    except TimeoutError:
        log(caller.home, f"{name}: no context: the worker did not answer within the hook's budget")
        return None
    except (OSError, ValueError) as exc:
        log(caller.home, f"{name}: no context: the worker's channel failed ({exc})")
        return None
    if answer is not None:
        return answer
    _say_problem(caller)
    if remove_stale(address, lock):
        log(caller.home, f"{name}: removed the socket of a worker that is gone")
    started = start_worker(caller, _worker_flags(caller, options))
    while (left := seconds - (time.monotonic() - began)) > POLL_SECONDS:
        time.sleep(POLL_SECONDS)  # the budget leaves room to wait for the worker to come up
        _say_problem(caller)
        try:
            answer = ask(address, request, left - POLL_SECONDS)
        except (TimeoutError, OSError, ValueError):
            break
        if answer is not None:
            return answer
    state = "started one" if started else "one is starting"
    log(
        caller.home,
        f"{name}: no context: no worker was ready for {caller.home}; {state} (later hooks use it)",
    )
    return None


def leave_problem(home: str, key: str, problem: str) -> None:
    """What a worker that cannot start says, for the hook that waits for it (and the log)."""
    log(home, f"the hook worker cannot start: {problem}")
    with contextlib.suppress(OSError):
        path = problem_path(home, key)
        path.unlink(missing_ok=True)
        with os.fdopen(private_open(path, os.O_WRONLY | os.O_EXCL), "w", encoding="utf-8") as file:
            file.write(problem + "\n")


def _say_problem(caller: Caller) -> None:
    """Raise WorkerProblem with what a worker that could not start left behind."""
    path = problem_path(caller.home, caller.key)
    try:
        told = path.read_text(encoding="utf-8").strip()
    except OSError:
        return
    path.unlink(missing_ok=True)
    raise WorkerProblem(told or "the worker could not start")

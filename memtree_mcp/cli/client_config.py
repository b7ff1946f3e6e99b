"""What ``memtree-mcp install --client …`` prints or writes: the MCP client configuration.

Claude Desktop and Cursor read a JSON file with a top-level ``"mcpServers"`` object; VS Code reads the
workspace file ``.vscode/mcp.json`` with a top-level ``"servers"`` object whose entries carry
``"type": "stdio"``; Claude Code is configured with its own ``claude mcp add`` command, so for it
there is no file, only the command to run.

``write_config`` merges the ``"memtree"`` entry into an existing file: every other server and every
other top-level key is kept, the original is copied to a timestamped backup first and the new file
replaces it atomically. A file that is not a JSON object is refused and left untouched, and so is
one whose meaning a rewrite would change: a key given twice (JSON readers keep either one) or a
non-finite number (``NaN``, ``Infinity``: not JSON, and rewritten they would stop being what the
client read). VS Code's file may hold comments and trailing commas (its format is JSONC): the entry
is then spliced into the text so that the comments stay. A read-only file is left alone unless
``force`` is given, and a file with several hard links is rewritten in place, so that every name
keeps pointing at the one file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from memtree_mcp.config import Settings
from memtree_mcp.errors import InvalidInput
from memtree_mcp.secrets.detection import quoted

__all__ = [
    "CLIENTS",
    "E5_NOTE",
    "SERVER_NAME",
    "client_env",
    "config_path",
    "default_command",
    "render",
    "server_entry",
    "servers_key",
    "write_config",
]

CLIENTS = ("claude-desktop", "cursor", "vscode", "claude-code")
SERVER_NAME = "memtree"


def _check_client(client: str) -> None:
    if client not in CLIENTS:
        raise InvalidInput(f"unknown client {quoted(client)}: use one of {', '.join(CLIENTS)}")


def default_command() -> str:
    """The absolute path of the ``memtree-mcp`` script of this installation."""
    found = shutil.which("memtree-mcp")
    if found:
        return str(Path(found).absolute())
    name = "memtree-mcp.exe" if sys.platform == "win32" else "memtree-mcp"
    return str(Path(sys.executable).absolute().parent / name)


def server_entry(command: str, env: Mapping[str, str]) -> dict[str, Any]:
    """The server block: ``{"command": …, "args": ["serve"], "env": {…}}`` (no ``env`` when empty)."""
    entry: dict[str, Any] = {"command": command, "args": ["serve"]}
    if env:
        entry["env"] = dict(env)
    return entry


def servers_key(client: str) -> str:
    """The top-level key holding the servers: ``"servers"`` for VS Code, ``"mcpServers"`` otherwise."""
    _check_client(client)
    if client == "claude-code":
        raise InvalidInput(
            "claude-code has no config file: it is configured with `claude mcp add`; "
            "run the command `memtree-mcp install --client claude-code` prints"
        )
    return "servers" if client == "vscode" else "mcpServers"


def _client_entry(client: str, command: str, env: Mapping[str, str]) -> dict[str, Any]:
    entry = server_entry(command, env)
    if client == "vscode":
        entry = {"type": "stdio", **entry}
    return entry


def config_path(
    client: str,
    *,
    home: Path | None = None,
    platform: str = sys.platform,
    cwd: Path | None = None,
) -> Path | None:
    """The client's config file, or None for claude-code (configured by a command, see ``render``).

    On Windows, Claude Desktop's file is under ``%APPDATA%``; when that variable is unset,
    ``<home>/AppData/Roaming`` is used.
    """
    _check_client(client)
    home = Path.home() if home is None else home
    if client == "claude-desktop":
        if platform == "darwin":
            base = home / "Library" / "Application Support"
        elif platform == "win32":
            appdata = os.environ.get("APPDATA")
            base = Path(appdata) if appdata else home / "AppData" / "Roaming"
        else:
            base = home / ".config"
        return base / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        return (Path.cwd() if cwd is None else cwd) / ".vscode" / "mcp.json"
    return None


def _claude_code_command(command: str, env: Mapping[str, str]) -> str:
    parts = ["claude", "mcp", "add", SERVER_NAME]
    for key, value in env.items():
        parts += ["--env", f"{key}={value}"]
    parts += ["--", command, "serve"]
    return shlex.join(parts)


def _dumps(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render(client: str, command: str, env: Mapping[str, str]) -> str:
    """The text to paste: a JSON document for file-based clients, the shell command for claude-code."""
    _check_client(client)
    if client == "claude-code":
        return _claude_code_command(command, env) + "\n"
    return _dumps({servers_key(client): {SERVER_NAME: _client_entry(client, command, env)}})


def _backup_path(path: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.{stamp}.bak")
    counter = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{stamp}-{counter}.bak")
        counter += 1
    return candidate


def _atomic_write(path: Path, text: str, mode: int | None) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def blank_comments(raw: str) -> str:
    """``raw`` with JSONC's comments and trailing commas turned into spaces (offsets unchanged)."""
    out = list(raw)
    i, n = 0, len(raw)
    last_comma: int | None = None  # a comma seen with only blanks or comments after it
    while i < n:
        char = raw[i]
        if char == '"':
            i += 1
            while i < n and raw[i] != '"':
                i += 2 if raw[i] == "\\" else 1
            i += 1
            last_comma = None
            continue
        if raw.startswith("//", i):
            end = raw.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        if raw.startswith("/*", i):
            end = raw.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = [c if c == "\n" else " " for c in raw[i:end]]
            i = end
            continue
        if char == ",":
            last_comma = i
        elif char in "}]" and last_comma is not None:
            out[last_comma] = " "
            last_comma = None
        elif not char.isspace():
            last_comma = None
        i += 1
    return "".join(out)


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise ValueError(f"the key {quoted(key)} is given twice in one object")
        document[key] = value
    return document


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        loaded = json.loads(text, object_pairs_hook=_strict_object, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON ({exc}); nothing was changed. Fix or move it and retry"
        ) from exc
    except ValueError as exc:
        raise InvalidInput(
            f"{path}: {exc}; nothing was changed, since a rewrite would change what the client "
            "reads. Fix it and retry"
        ) from exc
    if not isinstance(loaded, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; nothing was changed")
    return loaded


_DECODER = json.JSONDecoder()


def _members(text: str, brace: int) -> list[tuple[str, int, int]]:
    """The members of the object whose ``{`` is at ``brace``: (key, value start, value end)."""
    found: list[tuple[str, int, int]] = []
    i = brace + 1
    while True:
        while text[i].isspace() or text[i] == ",":
            i += 1
        if text[i] == "}":
            return found
        key, i = _DECODER.raw_decode(text, i)
        while text[i].isspace() or text[i] == ":":
            i += 1
        _, end = _DECODER.raw_decode(text, i)
        found.append((key, i, end))
        i = end


def _indented(value: Any, depth: int) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def _splice(raw: str, blanked: str, key: str, entry: dict[str, Any]) -> str:
    """``raw`` with ``entry`` set as ``[key]["memtree"]``, every other character (comments) kept."""
    top = blanked.index("{")
    members = _members(blanked, top)
    servers = next((m for m in members if m[0] == key), None)
    if servers is None:
        pair = f"{json.dumps(key)}: {_indented({SERVER_NAME: entry}, 1)}"
        return _insert_member(raw, top, pair, depth=1, empty=not members)
    _, start, _ = servers
    inside = _members(blanked, start)
    current = next((m for m in inside if m[0] == SERVER_NAME), None)
    if current is not None:
        _, value_start, value_end = current
        return raw[:value_start] + _indented(entry, 2) + raw[value_end:]
    pair = f"{json.dumps(SERVER_NAME)}: {_indented(entry, 2)}"
    return _insert_member(raw, start, pair, depth=2, empty=not inside)


def _insert_member(raw: str, brace: int, pair: str, *, depth: int, empty: bool) -> str:
    indent = "\n" + "  " * depth
    text = indent + pair + ("" if empty else ",")
    if empty:
        text += "\n" + "  " * (depth - 1)
    elif not raw[brace + 1 :].lstrip(" \t").startswith(("\n", "\r")):
        text += indent  # the first member sat on the brace's line: it gets a line of its own
    return raw[: brace + 1] + text + raw[brace + 1 :]


def _read_only(path: Path) -> bool:
    """Read-only as the user set it: no write bit at all, or none this user may use (root included)."""
    return not path.stat().st_mode & 0o222 or not os.access(path, os.W_OK)


def _write_in_place(path: Path, text: str, mode: int) -> None:
    """Rewrite ``path`` itself (its hard links keep pointing at it); a read-only file (refused
    earlier unless forced) is made writable for the write and given its ``mode`` back."""
    writable = mode | 0o200
    if writable != mode:
        os.chmod(path, writable)
    try:
        with open(path, "r+", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
    finally:
        if writable != mode:
            os.chmod(path, mode)


def configured(client: str, command: str, env: Mapping[str, str], path: Path) -> bool:
    """Whether ``path`` already holds the ``"memtree"`` entry :func:`write_config` would write (a
    second ``install --write`` then changes nothing and keeps no second backup)."""
    try:
        raw = path.read_text(encoding="utf-8-sig")
        document = _parse(path, blank_comments(raw) if client == "vscode" else raw)
    except (OSError, UnicodeDecodeError, InvalidInput):
        return False  # write_config says what is wrong with it
    servers = document.get(servers_key(client))
    return isinstance(servers, dict) and servers.get(SERVER_NAME) == _client_entry(client, command, env)


def _merged(client: str, key: str, entry: dict[str, Any], path: Path, force: bool) -> str:
    """The text of the existing config ``path`` with ``entry`` as its ``"memtree"`` server (see
    :func:`write_config`, which raises what this raises)."""
    if not path.is_file():
        raise InvalidInput(f"{path} is not a file; nothing was changed")
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}; nothing was changed") from exc
    if _read_only(path) and not force:
        raise InvalidInput(
            f"{path} is read-only; nothing was changed. Make it writable, or run again with "
            "--force to replace it anyway (a backup is kept)"
        )
    if not raw.strip():
        return _dumps({key: {SERVER_NAME: entry}})
    blanked = blank_comments(raw) if client == "vscode" else raw
    document = _parse(path, blanked)
    servers = document.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInput(f"{path}: {quoted(key)} is not a JSON object; nothing was changed")
    if blanked != raw:
        text = _splice(raw, blanked, key, entry)
        _parse(path, blank_comments(text))  # the splice must leave valid JSONC
        return text
    document.setdefault(key, {})[SERVER_NAME] = entry
    return _dumps(document)


def write_config(
    client: str,
    command: str,
    env: Mapping[str, str],
    *,
    path: Path | None = None,
    force: bool = False,
) -> Path | None:
    """Merge the ``"memtree"`` entry into ``path`` (default: ``config_path(client)``).

    Creates the file and its parent directories when missing. Otherwise the file must hold a JSON
    object (whitespace only counts as empty; for VS Code, JSONC's comments and trailing commas are
    allowed and kept); it is copied to ``<name>.<YYYYMMDD-HHMMSS>.bak`` next to it, then rewritten
    atomically with every other server and key kept and only ``"memtree"`` replaced. Returns the
    backup's path, or None when the file was created. A symlinked config is written through to its
    target; a hard-linked one is rewritten in place (the backup holds the original meanwhile).

    Raises InvalidInput for an unknown client, for claude-code (no file), for a file that is not a
    JSON object or holds a duplicate key or a non-finite number, and for a read-only file unless
    ``force``; nothing is changed then.
    """
    key = servers_key(client)
    if path is None:
        path = config_path(client)
        assert path is not None  # servers_key already refused claude-code
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()

    entry = _client_entry(client, command, env)
    existing = path.exists()
    text = _merged(client, key, entry, path, force) if existing else _dumps({key: {SERVER_NAME: entry}})

    if not existing:
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, text, None)
        return None
    backup = _backup_path(path)
    shutil.copy2(path, backup)
    status = path.stat()
    if status.st_nlink > 1:
        _write_in_place(path, text, status.st_mode & 0o7777)
    else:
        _atomic_write(path, text, status.st_mode & 0o7777)
    return backup


def hooks_settings(command: str, env: Mapping[str, str], seconds: int = 5) -> str:
    """The ``hooks`` of Claude Code's settings.json that run ``memtree-mcp hook`` when a session
    starts (start the warm worker; a brief of the project), on each prompt (recall, as context) and
    at the end of each turn (remember it), with ``env`` set for it. ``seconds`` is Claude Code's own
    limit; the hook keeps to one second by itself."""
    prefix = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
    line = f"{prefix} {shlex.quote(command)} hook".strip()
    entry = [{"hooks": [{"type": "command", "command": line, "timeout": seconds}]}]
    return _dumps({"hooks": {"SessionStart": entry, "UserPromptSubmit": entry, "Stop": entry}})


# Settings a client's configuration carries when they were set (flags or MEMTREE_* variables), except
# secrets, which install never copies into a file, and the HTTP token, which stdio does not use.
SECRETS = ("llm_api_key", "embedder_api_key")
NOT_FOR_STDIO = ("auth_token",)


# What install says when it writes MEMTREE_EMBEDDER=e5-small (README: "Memories in other languages").
E5_NOTE = (
    "memtree-mcp: MEMTREE_EMBEDDER=e5-small finds memories across languages (multilingual-e5-small); "
    "at 10k memories a remember takes about 42 ms and a recall 32 ms (20 and 12 with the default), and "
    "a namespace built with another embedder needs `memtree-mcp reindex` first (with its servers stopped)"
)


def client_env(settings: Settings) -> tuple[dict[str, str], list[str]]:
    """The ``env`` of a client's configuration: MEMTREE_NAMESPACE, then every other setting given
    here (as a flag or a MEMTREE_* variable); and the names of the secrets left out."""
    given = settings.model_fields_set - {"namespace"}
    env = {"MEMTREE_NAMESPACE": settings.namespace}
    left_out = []
    for name in Settings.model_fields:
        if name not in given or name in NOT_FOR_STDIO:
            continue
        if name in SECRETS:
            left_out.append(f"MEMTREE_{name.upper()}")
            continue
        value = getattr(settings, name)
        env[f"MEMTREE_{name.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return env, left_out

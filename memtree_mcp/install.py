"""What ``memtree-mcp install --client …`` prints or writes: the MCP client configuration.

Claude Desktop and Cursor read a JSON file with a top-level ``"mcpServers"`` object; VS Code reads the
workspace file ``.vscode/mcp.json`` with a top-level ``"servers"`` object whose entries carry
``"type": "stdio"``; Claude Code is configured with its own ``claude mcp add`` command, so for it
there is no file, only the command to run.

``write_config`` merges the ``"memtree"`` entry into an existing file: every other server and every
other top-level key is kept, the original is copied to a timestamped backup first and the new file
replaces it atomically. A file that is not a JSON object is refused and left untouched.
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

from memtree_mcp.errors import InvalidInput

__all__ = [
    "CLIENTS",
    "SERVER_NAME",
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
        raise InvalidInput(f"unknown client {client!r}: use one of {', '.join(CLIENTS)}")


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


def write_config(
    client: str,
    command: str,
    env: Mapping[str, str],
    *,
    path: Path | None = None,
) -> Path | None:
    """Merge the ``"memtree"`` entry into ``path`` (default: ``config_path(client)``).

    Creates the file and its parent directories when missing. Otherwise the file must hold a JSON
    object (whitespace only counts as empty); it is copied to ``<name>.<YYYYMMDD-HHMMSS>.bak`` next
    to it, then rewritten atomically with every other server and key kept and only ``"memtree"``
    replaced. Returns the backup's path, or None when the file was created. A symlinked config is
    written through to its target.

    Raises InvalidInput for an unknown client, for claude-code (no file) and for a file that is not
    a JSON object; nothing is changed then.
    """
    key = servers_key(client)
    if path is None:
        path = config_path(client)
        assert path is not None  # servers_key already refused claude-code
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()

    document: dict[str, Any] = {}
    existing = path.exists()
    if existing:
        try:
            raw = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {path}: {exc}; nothing was changed") from exc
        if raw.strip():
            try:
                loaded = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    f"{path} is not valid JSON ({exc}); nothing was changed. Fix or move it and retry"
                ) from exc
            if not isinstance(loaded, dict):
                raise InvalidInput(f"{path} does not hold a JSON object; nothing was changed")
            document = loaded
        servers = document.get(key)
        if servers is not None and not isinstance(servers, dict):
            raise InvalidInput(f"{path}: {key!r} is not a JSON object; nothing was changed")

    servers = document.setdefault(key, {})
    servers[SERVER_NAME] = _client_entry(client, command, env)
    text = _dumps(document)

    backup: Path | None = None
    mode: int | None = None
    if existing:
        backup = _backup_path(path)
        shutil.copy2(path, backup)
        mode = path.stat().st_mode & 0o7777
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, text, mode)
    return backup

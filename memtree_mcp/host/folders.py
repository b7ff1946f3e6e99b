"""The namespace of a project folder: its name and a short hash of its path.

Used where a project names its memory: the MCP server with ``MEMTREE_NAMESPACE=auto`` (the client's
first workspace folder) and Claude Code's hooks with ``--project`` (the repository the session
runs in). Plain standard library, so that the hook's quick path can import it, and the rule of a
namespace's name with it (the settings and the hook both check a name by it).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

NAMESPACE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # always used with fullmatch
NAMESPACE_RULE = "1 to 64 letters, digits, '-' or '_', starting with a letter or digit"
# MEMTREE_NAMESPACE=auto: each client's workspace folder (MCP roots) names its namespace.
AUTO_NAMESPACE = "auto"
ROOT_HASH_CHARS = 8
MAX_NAMESPACE_CHARS = 64


def folder_namespace(path: str, where: str | None = None) -> str:
    """The namespace of the folder at ``path`` (``where``: what the hash is taken of, the path
    itself by default): ``Billing-Service-1f3a9c2e``.

    The name keeps the namespace readable; the hash (8 hex digits of the SHA-256 of the folder's
    full path) keeps two projects with the same folder name, such as ``~/work/api`` and
    ``~/play/api``, in separate memories. The name is reduced to the namespace rule (ASCII letters,
    digits, '-' and '_'; accents dropped) and cut so the whole fits in 64 characters; a folder
    without a usable name (``/``) is ``workspace-<hash>``.
    """
    path = path.rstrip("/") or "/"
    digest = hashlib.sha256((where or path).encode("utf-8", "surrogatepass")).hexdigest()[:ROOT_HASH_CHARS]
    room = MAX_NAMESPACE_CHARS - ROOT_HASH_CHARS - 1
    folder = unicodedata.normalize("NFKD", path.rsplit("/", 1)[-1])
    folder = "".join(c for c in folder if not unicodedata.combining(c))  # "Über" keeps its "U"
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", folder).strip("-_")[:room].rstrip("-_")
    return f"{name or 'workspace'}-{digest}"


def project_root(folder: str) -> str:
    """The repository ``folder`` is in (the nearest folder up with a ``.git``), else ``folder``."""
    start = Path(folder).expanduser().resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return str(start)

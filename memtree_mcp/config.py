"""Settings from ``MEMTREE_*`` environment variables; every one can also be given as a CLI flag."""

from __future__ import annotations

import re
from typing import Literal

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

NAMESPACE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # always used with fullmatch
NAMESPACE_RULE = "1 to 64 letters, digits, '-' or '_', starting with a letter or digit"
# MEMTREE_NAMESPACE=auto: each client's workspace folder (MCP roots) names its namespace.
AUTO_NAMESPACE = "auto"
EMBEDDERS = ("local",)
# 'sampling': the connected client's own model (MCP sampling/createMessage).
LLMS = ("none", "sampling")
# MEMTREE_RETENTION: seconds, or a number with a unit (``30m``, ``12h``, ``7d``, ``2w``).
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?) *([smhdw]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def default_home() -> str:
    """Where memories live unless MEMTREE_HOME says otherwise: the user's data directory."""
    return platformdirs.user_data_dir("memtree-mcp", appauthor=False)


class Settings(BaseSettings):
    """What a memtree-mcp process needs to know; read from the environment with the prefix MEMTREE_."""

    model_config = SettingsConfigDict(env_prefix="MEMTREE_", extra="ignore")

    home: str = Field(default_factory=default_home, description="Directory (or s3:// URI) of the store.")
    namespace: str = Field(default="default", description="Namespace used when a call names none.")
    embedder: str = Field(default="local", description="'local' (ONNX all-MiniLM-L6-v2, offline).")
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
    retention: float = Field(
        default=7 * 86_400.0,
        ge=0,
        allow_inf_nan=False,
        description="How long forgotten memories stay on disk (and earlier versions in the history) "
        "before they are purged: seconds or 30m, 12h, 7d, 2w; 0 purges at each forget.",
    )

    @field_validator("embedder")
    @classmethod
    def _embedder_is_known(cls, value: str) -> str:
        if value not in EMBEDDERS and not (value.startswith("litellm:") and len(value) > len("litellm:")):
            raise ValueError(
                f"unknown embedder {value!r}; use 'local' (offline) or 'litellm:<model>' "
                "(e.g. litellm:text-embedding-3-small)"
            )
        return value

    @field_validator("llm")
    @classmethod
    def _llm_is_known(cls, value: str) -> str:
        if value not in LLMS and not (value.startswith("litellm:") and len(value) > len("litellm:")):
            raise ValueError(
                f"unknown LLM {value!r}; use 'none' (extractive summaries), 'litellm:<model>' "
                "(e.g. litellm:openai/gpt-4o-mini or litellm:ollama/llama3) "
                "or 'sampling' (the client's model)"
            )
        return value

    @field_validator("retention", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        found = _DURATION.fullmatch(value.strip().lower())
        if found is None:
            raise ValueError(f"{value[:40]!r} is not a duration; use seconds or a unit: 30m, 12h, 7d, 2w")
        return float(found.group(1)) * _UNIT_SECONDS[found.group(2)]

    @field_validator("namespace")
    @classmethod
    def _namespace_is_safe(cls, value: str) -> str:
        if not NAMESPACE_PATTERN.fullmatch(value):
            raise ValueError(f"namespace must be {NAMESPACE_RULE}")
        return value

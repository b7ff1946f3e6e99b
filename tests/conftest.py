"""Shared fixtures: the real default embedder (loaded once) and services on temporary stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memtree_mcp.config import Settings
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=str(tmp_path / "store"), namespace="default")


@pytest.fixture
def service(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[MemoryService]:
    svc = MemoryService(settings, embedder=embedder)
    yield svc
    svc.close()

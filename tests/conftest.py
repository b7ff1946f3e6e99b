"""Shared fixtures: the real default embedder (loaded once) and services on temporary stores.

Tests of the trees' shape and of navigation give their module a hashing embedder instead
(tests/hashing_embedder.py: deterministic, nothing to load, microseconds a text); tests of what
recall finds keep the real model.

Also the two tiers of the suite. ``pytest`` runs everything (CI, and before a commit);
``pytest -m "not slow"`` leaves out the tests marked ``slow`` (pyproject.toml says which); the
README gives the counts and times. The modules in :data:`SLOW_MODULES` are slow throughout and are
marked here; in the other modules the slow tests carry ``@pytest.mark.slow`` themselves.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memtree_mcp import providers
from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService

SLOW_MODULES = (
    "test_stdio.py",  # the real command in subprocesses: restarts, kills, the CLI beside the server
    "test_concurrent_servers.py",  # servers in subprocesses writing one store
    "test_s3.py",  # S3 and DynamoDB on moto
    "test_bucket_writers.py",  # servers in subprocesses writing one bucket namespace on moto
    "test_ui_browser.py",  # the explorer page in Chromium
    "test_litellm_providers.py",  # litellm against the loopback fake OpenAI, timeouts and retries
    "test_refinement.py",  # summaries from slow fake models in the background, closing mid-answer
    "test_first_hour.py",  # the command stopped by signals, its errors, the examples, a network audit
    "test_hook.py",  # memtree-mcp hook in subprocesses, as Claude Code runs it, and its background drain
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, as the server does."""
    return "asyncio"


_MODEL: list[MiniLMEmbedder] = []


def the_model() -> MiniLMEmbedder:
    """The real default model, loaded on first use and once per test run."""
    if not _MODEL:
        _MODEL.append(MiniLMEmbedder())
    return _MODEL[0]


@pytest.fixture(scope="session")
def model_embedder() -> MiniLMEmbedder:
    """The real default model, loaded once: for what recall finds and for the model itself, and
    for stores other processes (which load it themselves) write too."""
    return the_model()


@pytest.fixture(autouse=True)
def one_model_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A service built without an embedder in this process (a command run by ``cli.main``) gets the
    model already loaded, the same model with the same identity: loading it anew took 0.4 s a
    command on two busy cores. Other processes and other embedders load their own."""
    made_by_the_product = providers.make_embedder

    def make_embedder(spec: str, **endpoint: str | None) -> Embedder:
        return the_model() if spec == "local" else made_by_the_product(spec, **endpoint)

    monkeypatch.setattr(providers, "make_embedder", make_embedder)


@pytest.fixture(scope="session")
def embedder(model_embedder: MiniLMEmbedder) -> MiniLMEmbedder:
    """The embedder of the services the tests build. A module that tests the trees' shape or
    navigation, not recall, overrides it with :class:`tests.hashing_embedder.HashingEmbedder`
    (a fixture named ``embedder`` of its own), which the ``service`` fixture then uses too."""
    return model_embedder


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=str(tmp_path / "store"), namespace="default")


@pytest.fixture
def service(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[MemoryService]:
    svc = MemoryService(settings, embedder=embedder)
    yield svc
    svc.close()


@pytest.fixture
def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store folder not yet made, named by MEMTREE_HOME, with no other MEMTREE_ setting left over
    from the environment (for commands run in this process, as a user's shell runs them)."""
    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    store = tmp_path / "store"
    monkeypatch.setenv("MEMTREE_HOME", str(store))
    return store

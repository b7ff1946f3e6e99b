"""A setting memtree-mcp cannot work with is one line naming it and the fix, in a shell and over MCP.

In process: the checks of Settings, the fallback a server starts with, the tool errors an agent
reads (through a real client connected in memory), and a store the operating system refuses. As
root (CI) ``chmod`` does not stop writes, so a home that cannot be created is a path under a
regular file (ENOTDIR, whoever runs the test); a real read-only file system is in
``test_first_hour.py`` (a tmpfs mounted read-only in a user namespace).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from mcp import Client

from memtree_mcp.config import Settings, install_extra, settings_or_problem
from memtree_mcp.errors import ConfigurationError, StoreError
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    yield


def problem_with(**settings: str) -> str:
    """The problem with ``settings`` given as MEMTREE_* variables, as a user's shell gives them."""
    variables = {f"MEMTREE_{name.upper()}": value for name, value in settings.items()}
    with mock.patch.dict(os.environ, variables):
        refused, problem = settings_or_problem()
    assert problem is not None, f"{settings} was accepted as {refused}"
    text = str(problem)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    ("home", "says"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("memories", "relative path"),
        ("./store", "relative path"),
        ("/dev/null", "kernel file system"),
        ("/proc/self/memtree", "kernel file system"),
        ("/sys/memtree", "kernel file system"),
        ("s3://", "names no bucket"),
        ("s3://My_Bucket/memtree", "bucket name 'My_Bucket' is not valid"),
        ("s3://bucket:9000/x", "is not valid"),
        ("memory://", "would keep nothing"),
        ("gs://bucket/prefix", "not a place memtree-mcp can keep a store"),
    ],
)
def test_a_home_that_cannot_hold_a_store_is_refused_in_one_line_naming_memtree_home(
    home: str, says: str, clean_environment: None
) -> None:
    text = problem_with(home=home)
    assert text.startswith("MEMTREE_HOME: ") and says in text


def test_a_home_that_is_a_file_is_refused(tmp_path: Path, clean_environment: None) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("not a store")
    text = problem_with(home=str(afile))
    assert text == (
        f"MEMTREE_HOME: '{afile}' is a file; set MEMTREE_HOME to a directory (it is created when missing)"
    )


def test_a_home_with_a_tilde_is_expanded(clean_environment: None) -> None:
    assert Settings(home="~/memtree-test-home").home == os.path.expanduser("~/memtree-test-home")


def test_valid_homes_are_kept_as_given(tmp_path: Path, clean_environment: None) -> None:
    for home in (
        str(tmp_path / "new" / "store"),
        "s3://team-bucket/memtree",
        "s3+ddb://b-1.x/p?ddbTableName=t",
    ):
        assert Settings(home=home).home == home


def test_the_environment_is_named_as_the_user_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMTREE_LLM_TIMEOUT", "-3")
    text = problem_with()
    assert text == "MEMTREE_LLM_TIMEOUT: '-3' is not valid (Input should be greater than 0)"


def test_a_refused_setting_falls_back_to_its_default_and_the_others_are_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMTREE_LLM", "garbage")
    settings, problem = settings_or_problem(home=str(tmp_path), namespace="work")
    assert isinstance(problem, ConfigurationError)
    assert str(problem).startswith("MEMTREE_LLM: unknown LLM 'garbage'; use 'none'")
    assert (settings.llm, settings.home, settings.namespace) == ("none", str(tmp_path), "work")


@pytest.mark.parametrize("setting", ["llm", "embedder"])
def test_a_litellm_setting_without_litellm_says_which_extra_to_install(
    setting: str, monkeypatch: pytest.MonkeyPatch, clean_environment: None
) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # how Python spells "not importable"
    text = problem_with(**{setting: "litellm:ollama/llama3.2"})
    assert text == (
        f"MEMTREE_{setting.upper()}: 'litellm:ollama/llama3.2' needs litellm, which is not installed: "
        + install_extra("llm")
    )


def test_a_setting_given_as_a_flag_is_named_as_the_flag(clean_environment: None) -> None:
    _, problem = settings_or_problem(embedder="e5-large")
    assert str(problem).startswith("--embedder: unknown embedder 'e5-large'; use 'local'")


def test_importing_litellm_without_it_installed_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memtree_mcp.errors import ProviderError
    from memtree_mcp.llm.endpoint import import_litellm

    monkeypatch.setitem(sys.modules, "litellm", None)
    with pytest.raises(ProviderError) as refused:
        import_litellm()
    assert str(refused.value) == f"litellm is not installed: {install_extra('llm')}"


# -- over MCP: the agent reads the reason ------------------------------------------------------------


TOOL_CALLS = [
    ("remember", {"content": "The staging database listens on port 5433."}),
    ("recall", {"query": "staging database"}),
    ("navigate", {}),
    ("summarize", {}),
    ("forget", {"query": "staging"}),
]


@pytest.mark.anyio
async def test_every_tool_answers_a_refused_setting_with_its_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    monkeypatch.setenv("MEMTREE_LLM", "garbage")
    settings, problem = settings_or_problem(home=str(tmp_path / "store"))
    service = MemoryService(settings, embedder=embedder, unusable=problem)
    async with Client(build_server(service)) as client:
        for tool, arguments in TOOL_CALLS:
            answer = await client.call_tool(tool, arguments)
            assert answer.is_error
            text = answer.content[0].text  # type: ignore[union-attr]
            assert text == f"Error executing tool {tool}: {problem}", tool
    assert not (tmp_path / "store").exists(), "a refused configuration must not create a store"


@pytest.mark.anyio
async def test_a_home_that_cannot_be_created_is_a_tool_error_naming_memtree_home(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    (tmp_path / "a-file").write_text("")
    home = tmp_path / "a-file" / "store"  # under a regular file: refused whoever runs the test
    service = MemoryService(Settings(home=str(home)), embedder=embedder)
    async with Client(build_server(service)) as client:
        answer = await client.call_tool("remember", {"content": "The user's cat is called Miso."})
    assert answer.is_error
    assert answer.content[0].text == (  # type: ignore[union-attr]
        f"Error executing tool remember: cannot create the memory store at {home} (Not a directory); "
        "set MEMTREE_HOME to a place you can write to"
    )


def test_a_lock_directory_that_cannot_be_written_names_its_setting(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    (tmp_path / "a-file").write_text("")
    settings = Settings(home=str(tmp_path / "store"), lock_dir=str(tmp_path / "a-file" / "locks"))
    service = MemoryService(settings, embedder=embedder)
    with pytest.raises(StoreError, match=r"\(Not a directory\); set MEMTREE_LOCK_DIR to a directory you can"):
        service.remember("The user's cat is called Miso.")
    service.close()

"""The layers of DESIGN §3 are real: core is pure, and the server starts without the heavy libraries.

Every module of ``memtree_mcp.core`` is checked, found with pkgutil so a new one cannot slip by,
each imported alone in a fresh interpreter so a failure names the modules that load a library.
The interpreters run side by side: one after another they would cost seconds.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import memtree_mcp.core

TIMEOUT = 60.0
CORE_MODULES = [
    "memtree_mcp.core",
    *sorted(
        module.name for module in pkgutil.walk_packages(memtree_mcp.core.__path__, prefix="memtree_mcp.core.")
    ),
]
# I/O, the MCP SDK and the models stay out of core; pydantic too (its models are the server's).
NOT_IN_CORE = ("mcp", "lancedb", "onnxruntime", "litellm", "pyarrow", "tokenizers", "pydantic")
# What the server must not load before a client's handshake is answered.
AFTER_THE_HANDSHAKE = ("lancedb", "onnxruntime", "litellm", "pyarrow")


def libraries_loaded_by(modules: list[str], libraries: tuple[str, ...]) -> dict[str, list[str]]:
    """For each of ``modules``, the ``libraries`` a fresh interpreter holds once it imported that module."""
    running = {
        module: subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import sys, {module}; print(*(m for m in {libraries!r} if m in sys.modules))",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for module in modules
    }
    answers = {module: process.communicate(timeout=TIMEOUT) for module, process in running.items()}
    for module, process in running.items():
        assert process.returncode == 0, f"importing {module} failed:\n{answers[module][1]}"
    return {module: out.split() for module, (out, _err) in answers.items()}


@pytest.fixture(scope="module")
def loaded_by_core_module() -> dict[str, list[str]]:
    return libraries_loaded_by(CORE_MODULES, NOT_IN_CORE)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_a_core_module_imports_no_io_or_heavy_library(
    module: str, loaded_by_core_module: dict[str, list[str]]
) -> None:
    assert loaded_by_core_module[module] == [], f"importing {module} loads them"


def test_the_server_and_the_cli_leave_heavy_libraries_for_after_the_handshake() -> None:
    loaded = libraries_loaded_by(["memtree_mcp.server", "memtree_mcp.cli"], AFTER_THE_HANDSHAKE)
    assert loaded == {"memtree_mcp.server": [], "memtree_mcp.cli": []}

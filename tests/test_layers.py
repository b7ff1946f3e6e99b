"""The layers of DESIGN §3 are real: core is pure, and the server starts without the heavy libraries."""

from __future__ import annotations

import subprocess
import sys

import pytest

TIMEOUT = 60.0


@pytest.mark.parametrize(
    "module", ["memtree_mcp.core.memory", "memtree_mcp.core.semantic", "memtree_mcp.core"]
)
def test_core_imports_no_io_or_heavy_library(module: str) -> None:
    heavy = ["mcp", "lancedb", "onnxruntime", "litellm", "pyarrow", "tokenizers", "pydantic"]
    code = f"import sys, {module}; print([m for m in {heavy!r} if m in sys.modules])"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=TIMEOUT
    )
    assert loaded.stdout.strip() == "[]"


def test_the_server_module_leaves_heavy_libraries_for_after_the_handshake() -> None:
    code = (
        "import sys, memtree_mcp.server, memtree_mcp.cli; "
        "print([m for m in ['lancedb', 'onnxruntime', 'litellm', 'pyarrow'] if m in sys.modules])"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=TIMEOUT
    )
    assert loaded.stdout.strip() == "[]"

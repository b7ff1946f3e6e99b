"""Code versions side by side: what the benchmarks that time several versions of memtree-mcp share.

A case is ``NAME=CODE_DIR``: ``CODE_DIR`` holds a version's ``memtree_mcp`` package (``git archive
<commit> memtree_mcp | tar -x -C CODE_DIR``, with the commit in ``CODE_DIR/COMMIT``; ``.`` is this
checkout), run by this checkout's console script with ``PYTHONPATH=CODE_DIR``. Used by
``template_recall.py``, ``after_import.py`` and ``firstcall.py``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
from latency import CALL_TIMEOUT_S, console_script, machine_info, source_state


def parse_cases(given: Iterable[str]) -> dict[str, Path]:
    """``NAME=CODE_DIR`` options as {name: code folder}, in the order given."""
    return {name: Path(code) for name, _, code in (case.partition("=") for case in given)}


def code_commit(code: Path) -> str | None:
    """The commit whose code ``code`` holds: its git HEAD when it is a clean checkout, the
    ``COMMIT`` file written beside a ``git archive`` extract, else None (uncommitted code)."""
    marker = code / "COMMIT"
    if marker.is_file():
        return marker.read_text().strip() or None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        run = functools.partial(subprocess.run, cwd=code, capture_output=True, text=True, timeout=10)
        head, status = run(["git", "rev-parse", "HEAD"]), run(["git", "status", "--porcelain", "memtree_mcp"])
        if head.returncode == 0 and status.returncode == 0 and not status.stdout.strip():
            return head.stdout.strip()
    return None


def environment(code: Path, home: Path) -> dict[str, str]:
    """What a process of ``code``'s version runs with on ``home`` (nothing else of this shell's)."""
    return {
        "MEMTREE_HOME": str(home),
        "PYTHONPATH": str(code.resolve()),
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/root"),
        "OPENBLAS_NUM_THREADS": "1",
    }


def imported(code: Path, home: Path, records: Path, timeout: float = 7_200) -> float:
    """Seconds ``code``'s ``memtree-mcp import`` of ``records`` into ``home`` took."""
    started = time.perf_counter()
    subprocess.run(
        [str(console_script()), "import", str(records)],
        env=environment(code, home),
        check=True,
        capture_output=True,
        timeout=timeout,
    )
    return time.perf_counter() - started


@contextlib.asynccontextmanager
async def stdio_client(code: Path, home: Path) -> AsyncIterator[Any]:
    """A fresh ``memtree-mcp serve`` of ``code``'s version on ``home``, over stdio, driven by the
    SDK's client, once it has listed the tools (as a client does when it starts)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client as over_stdio

    params = StdioServerParameters(command=str(console_script()), args=["serve"], env=environment(code, home))
    with anyio.fail_after(CALL_TIMEOUT_S * 10), open(os.devnull, "w") as errlog:
        async with Client(over_stdio(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            await client.list_tools()
            yield client


async def timed_call(client: Any, tool: str, arguments: dict[str, Any]) -> float:
    """Milliseconds ``tool`` took at the client; RuntimeError when it answered with an error."""
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(str(result.content)[:300])
    return 1000 * (time.perf_counter() - started)


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[max(0, int(0.95 * len(ordered)) - 1)], 2),
        "n": len(ordered),
    }


def written(report: dict[str, Any], cases: dict[str, Path], load_start: list[float], out: Path) -> None:
    """Add to ``report`` which code each case ran, the load, the machine and the command; write it
    to ``out`` and print its summary."""
    report["cases"] = {name: {"code": str(code), "commit": code_commit(code)} for name, code in cases.items()}
    report.update(
        {
            "loadavg_at_start": load_start,
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
            "machine": machine_info(),
            "source": source_state(),
            "command": shlex.join([sys.executable, *sys.argv]),
        }
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["summary"], indent=1))

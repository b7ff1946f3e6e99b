"""The first tool call after the handshake: how long a client waits for the first recall or remember
of a freshly started `memtree-mcp serve` (stdio) on a populated store; with ``--http``, of a
streamable-HTTP server that has been up for ``--up`` seconds with no client.

Each run spawns the server through the MCP client, lists the tools (which starts the background
load of the model and the default namespace), then at once calls ``recall`` (k = 10) twice, or
``remember`` once then ``recall`` once; times are at the client, from the call to its answer.
Several code versions can be compared on their own stores, runs interleaved so that the machine's
load falls on all alike: ``--case NAME=CODE_DIR:STORE_DIR`` (CODE_DIR goes first on the server's
PYTHONPATH, so `git archive <commit> memtree_mcp | tar -x -C CODE_DIR` measures an older commit:
write the commit into ``CODE_DIR/COMMIT`` so that the results name it; a checkout's own HEAD is
found by itself; ``NAME=CODE_DIR:STORE_DIR:EMBEDDER`` runs that case's server with MEMTREE_EMBEDDER=EMBEDDER).
A store is copied afresh for every run that writes to it.

With ``--http`` each run starts ``memtree-mcp serve --transport streamable-http`` on a free port,
waits ``--up`` seconds (5 by default: a server someone started before their client), then connects
and calls ``recall`` twice: the first call against the second (warm) one.

Run from the repository root::

    python bench/firstcall.py --case before=/tmp/main-code:/tmp/store-v1 --case after=.:/tmp/store-v2 \\
        --namespace scale --runs 5 --out bench/results/firstcall-10k.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from cases import code_commit
from latency import CALL_TIMEOUT_S, RECALL_K, console_script, machine_info, source_state

QUERY = "What did Caroline say about the adoption agency?"


async def one_run(
    code: Path, home: Path, namespace: str, first: str, embedder: str = "local"
) -> dict[str, Any]:
    """Spawn, list the tools, then ``first`` ("recall" or "remember") and a recall, timed."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        "MEMTREE_HOME": str(home),
        "MEMTREE_NAMESPACE": namespace,
        "MEMTREE_EMBEDDER": embedder,
        "PYTHONPATH": str(code.resolve()),
        "PATH": os.environ.get("PATH", ""),
    }
    params = StdioServerParameters(command=str(console_script()), args=["serve"], env=env)
    row: dict[str, Any] = {}
    with anyio.fail_after(CALL_TIMEOUT_S), open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            await client.list_tools()
            row["tools_list_ms"] = round((time.perf_counter() - started) * 1000, 1)
            calls = [("recall", {"query": QUERY, "k": RECALL_K})] * 2
            if first == "remember":
                content = f"A note written by the first-call benchmark at {time.time():.6f}."
                calls = [("remember", {"content": content}), calls[0]]
            for number, (tool, arguments) in enumerate(calls, start=1):
                t0 = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                label = "first" if number == 1 else "second"
                row[f"{label}_{tool}_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                if result.is_error:
                    row["error"] = str(result.content)[:300]
                    break
    return row


async def one_http_run(
    code: Path, home: Path, namespace: str, up: float, embedder: str = "local"
) -> dict[str, Any]:
    """Start an HTTP server, leave it ``up`` seconds alone, then time two recalls at the client."""
    import socket

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "firstcall-bench-token"
    env = {
        "MEMTREE_HOME": str(home),
        "MEMTREE_NAMESPACE": namespace,
        "MEMTREE_AUTH_TOKEN": token,
        "MEMTREE_EMBEDDER": embedder,
        "PYTHONPATH": str(code.resolve()),
        "PATH": os.environ.get("PATH", ""),
    }
    command = [str(console_script()), "serve", "--transport", "streamable-http", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    row: dict[str, Any] = {}
    try:
        await anyio.sleep(up)
        headers = {"Authorization": f"Bearer {token}"}
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
                Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
            ):
                for label in ("first", "second"):
                    t0 = time.perf_counter()
                    result = await client.call_tool("recall", {"query": QUERY, "k": RECALL_K})
                    row[f"{label}_recall_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                    if result.is_error:
                        row["error"] = str(result.content)[:300]
                        break
    finally:
        server.terminate()
        server.wait(timeout=30)
    return row


async def measure_http(
    cases: dict[str, tuple[Path, Path, str]], namespace: str, runs: int, up: float
) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in cases}
    for _ in range(runs):
        for name, (code, store, embedder) in cases.items():
            rows[name].append(await one_http_run(code, store, namespace, up, embedder))
            print(name, rows[name][-1], file=sys.stderr, flush=True)
    summary: dict[str, Any] = {}
    for name, found in rows.items():
        first = [r["first_recall_ms"] for r in found if "first_recall_ms" in r]
        second = [r["second_recall_ms"] for r in found if "second_recall_ms" in r]
        summary[name] = {
            "first_recall_ms_median": statistics.median(first) if first else None,
            "second_recall_ms_median": statistics.median(second) if second else None,
            "first_over_second": round(statistics.median(first) / statistics.median(second), 2)
            if first and second
            else None,
        }
    return {"summary": summary, "runs": rows}


async def measure(cases: dict[str, tuple[Path, Path, str]], namespace: str, runs: int) -> dict[str, Any]:
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {n: {"recall": [], "remember": []} for n in cases}
    with tempfile.TemporaryDirectory(prefix="memtree-firstcall-") as scratch:
        for run in range(runs):
            for first in ("recall", "remember"):
                for name, (code, store, embedder) in cases.items():
                    home = store
                    if first == "remember":
                        home = Path(scratch) / f"{name}-{run}"
                        shutil.copytree(store, home)
                    rows[name][first].append(await one_run(code, home, namespace, first, embedder))
                    if first == "remember":
                        shutil.rmtree(home, ignore_errors=True)
                    print(name, first, rows[name][first][-1], file=sys.stderr, flush=True)
    summary: dict[str, Any] = {}
    for name, by_first in rows.items():
        summary[name] = {}
        for first, found in by_first.items():
            key = f"first_{first}_ms"
            values = [r[key] for r in found if key in r]
            summary[name][f"{key}_median"] = statistics.median(values) if values else None
            listed = [r["tools_list_ms"] for r in found]
            summary[name][f"tools_list_ms_median_{first}_runs"] = statistics.median(listed)
    return {"summary": summary, "runs": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--case", action="append", required=True, help="NAME=CODE_DIR:STORE_DIR[:EMBEDDER]")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/firstcall.json"))
    parser.add_argument("--http", action="store_true", help="a streamable-HTTP server instead of stdio")
    parser.add_argument("--up", type=float, default=5.0, help="with --http: seconds the server is up first")
    args = parser.parse_args(argv)
    cases: dict[str, tuple[Path, Path, str]] = {}
    for case in args.case:
        name, _, paths = case.partition("=")
        code, _, rest = paths.partition(":")
        store, _, embedder = rest.partition(":")
        cases[name] = (Path(code), Path(store), embedder or "local")
    load_start = [round(x, 2) for x in os.getloadavg()]
    if args.http:
        report = anyio.run(measure_http, cases, args.namespace, args.runs, args.up)
    else:
        report = anyio.run(measure, cases, args.namespace, args.runs)
    transport = f"streamable HTTP, up {args.up:g} s first" if args.http else "stdio"
    report.update(
        {
            "benchmark": f"first tool call after the handshake ({transport})",
            "cases": {
                name: {"code": str(c), "commit": code_commit(c), "store": str(s), "embedder": e}
                for name, (c, s, e) in cases.items()
            },
            "loadavg_at_start": load_start,
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
            "machine": machine_info(),
            "source": source_state(),
            "command": shlex.join([sys.executable, *sys.argv]),
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

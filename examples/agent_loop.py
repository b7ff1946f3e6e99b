"""A minimal agent loop that uses memtree-mcp as its long-term memory.

It starts `memtree-mcp serve` as a subprocess, recalls before each answer and remembers after each
turn. The "model" here just echoes what memory returned; put your LLM call where it says so.

    MEMTREE_HOME=/tmp/try-memtree python examples/agent_loop.py

The MEMTREE_* variables of this shell reach the server (the MCP stdio client passes only a few
variables such as PATH and HOME to the processes it starts, so they are handed over explicitly):
without MEMTREE_HOME the server uses your real store.
"""

from __future__ import annotations

import os
import shutil
import sys

import anyio
from mcp import Client, StdioServerParameters


def memtree_environment() -> dict[str, str]:
    """This shell's MEMTREE_* variables, to hand to the server."""
    return {name: value for name, value in os.environ.items() if name.startswith("MEMTREE_")}


async def main() -> None:
    command = shutil.which("memtree-mcp") or sys.exit("memtree-mcp is not on PATH: pip install . first")
    params = StdioServerParameters(command=command, args=["serve"], env=memtree_environment())
    async with Client(params) as memory:
        while True:
            try:
                question = input("you> ").strip()
            except EOFError:
                return
            if not question:
                continue
            recalled = await memory.call_tool("recall", {"query": question, "k": 5, "max_tokens": 600})
            hits = (recalled.structured_content or {}).get("hits", [])
            # The text is written for a model: one line per hit (rank, relevance, date, text, id).
            context = "\n".join(block.text for block in recalled.content if block.type == "text")
            # Replace this with a call to your model, giving it `context` and `question`.
            if hits:
                answer = f"(memory had {len(hits)} related item(s))\n{context}"
            else:
                answer = "(nothing in memory yet)"
            print(f"agent> {answer}")
            await memory.call_tool("remember", {"content": question, "role": "user"})


if __name__ == "__main__":
    anyio.run(main)

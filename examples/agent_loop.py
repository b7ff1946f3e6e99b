"""A minimal agent loop that uses memtree-mcp as its long-term memory.

It starts `memtree-mcp serve` as a subprocess, recalls before each answer and remembers after each
turn. The "model" here just echoes what memory returned; put your LLM call where it says so.

    python examples/agent_loop.py
"""

from __future__ import annotations

import shutil
import sys

import anyio
from mcp import Client, StdioServerParameters


async def main() -> None:
    command = shutil.which("memtree-mcp") or sys.exit("memtree-mcp is not on PATH: pip install . first")
    async with Client(StdioServerParameters(command=command, args=["serve"])) as memory:
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

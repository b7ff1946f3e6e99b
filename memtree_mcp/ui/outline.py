"""``memtree-mcp tree``: the outline of one tree in the terminal, drawn with rich.

Each branch shows its label, how many memories it holds and the days it spans; each memory its
first words. Colour only goes to a terminal: piped into a file or another program the outline is
plain text (rich's own detection, and ``NO_COLOR``), with lines long enough not to be wrapped.
"""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from memtree_mcp.core.extractive import gist
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Leaf
from memtree_mcp.errors import InvalidInput
from memtree_mcp.inputs import check_range, format_timestamp

__all__ = ["outline_tree", "print_outline"]

LEAF_CHARS = 80
MAX_DEPTH = 20
# Lines written to a pipe are not wrapped below this width, so grep and cut see whole lines.
PIPE_WIDTH = 400


def _days(first_ts: float, last_ts: float) -> str:
    first, last = format_timestamp(first_ts)[:10], format_timestamp(last_ts)[:10]
    return first if first == last else f"{first} → {last}"


def outline_tree(memory: Memory, tree: str, depth: int, max_children: int = 0) -> Tree:
    """``tree`` ('semantic' or 'temporal') of ``memory`` as a rich Tree, ``depth`` levels below the root.

    ``max_children`` (0: no limit) caps the children shown under each node; the rest are counted
    on one line. Raises InvalidInput for an unknown tree or a depth outside 1 to 20.
    """
    if tree not in ("semantic", "temporal"):
        raise InvalidInput(f"unknown tree {tree!r}; use 'semantic' or 'temporal'.")
    check_range(depth, "depth", 1, MAX_DEPTH)
    check_range(max_children, "max-children", 0, 1_000_000)
    hierarchy = memory.semantic if tree == "semantic" else memory.temporal
    root = hierarchy.root
    title = Text.assemble(
        (f"{tree} tree", "bold"),
        f" · {len(memory.leaves):,} memories",
        (f" · {_days(root.first_ts, root.last_ts)}" if memory.leaves else "", "dim"),
    )
    top = Tree(title, guide_style="dim")
    stack: list[tuple[Tree, list[str], int]] = [(top, list(root.children), 1)]
    while stack:
        parent, children, level = stack.pop()
        shown = children if max_children == 0 else children[:max_children]
        below: list[tuple[Tree, list[str], int]] = []
        for child_id in shown:
            node = memory.node(child_id)
            if isinstance(node, Leaf):
                line = Text.assemble(
                    gist(node.text, LEAF_CHARS),
                    (f" · {format_timestamp(node.timestamp)[:10]} [{node.id}]", "dim"),
                )
                parent.add(line)
                continue
            line = Text.assemble(
                (node.label or gist(node.text, LEAF_CHARS) or "(untitled)", "bold cyan"),
                f" · {node.leaf_count:,} {'memory' if node.leaf_count == 1 else 'memories'}",
                (f" · {_days(node.first_ts, node.last_ts)} [{node.id}]", "dim"),
            )
            branch = parent.add(line)
            if level < depth:
                below.append((branch, list(node.children), level + 1))
            elif node.children:
                count = len(node.children)
                branch.add(
                    Text(
                        f"… {count:,} {'child' if count == 1 else 'children'} (raise --depth)",
                        style="dim italic",
                    )
                )
        if len(children) > len(shown):
            parent.add(Text(f"… and {len(children) - len(shown):,} more", style="dim italic"))
        stack.extend(reversed(below))
    return top


def print_outline(
    memory: Memory | None,
    tree: str,
    depth: int,
    *,
    namespace: str,
    max_children: int = 0,
    file: IO[str] | None = None,
) -> None:
    """Print the outline of ``tree``, or say that the namespace holds no memories yet."""
    if tree not in ("semantic", "temporal"):
        raise InvalidInput(f"unknown tree {tree!r}; use 'semantic' or 'temporal'.")
    check_range(depth, "depth", 1, MAX_DEPTH)
    check_range(max_children, "max-children", 0, 1_000_000)
    console = Console(file=file, highlight=False)
    if not console.is_terminal:
        console = Console(file=file, highlight=False, width=PIPE_WIDTH, no_color=True)
    if memory is None or not memory.leaves:
        console.print(
            f"No memories in namespace '{namespace}' yet. Store one with: memtree-mcp remember \"…\"",
            markup=False,
        )
        return
    console.print(outline_tree(memory, tree, depth, max_children))

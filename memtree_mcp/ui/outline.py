"""The outline of one tree drawn with rich, for ``memtree-mcp tree``.

It comes from the same walk as the plain outline MCP clients read (``memtree_mcp/service/outline.py``),
so the terminal and the ``memtree://{namespace}/outline/{tree}`` resource show the same nodes in
the same order. The rich outline shows each branch's label, how many memories it holds and the days it spans;
each memory its first words. Colour only goes to a terminal: piped into a file or another
program the outline is plain text (rich's own detection, and ``NO_COLOR``), with lines long
enough not to be wrapped.
"""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.core.trees.extractive import gist
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.wording import counted
from memtree_mcp.service.outline import OutlineRow, checked_outline, outline_rows, superseded_note

__all__ = ["outline_tree", "print_outline"]

LEAF_CHARS = 80
# Lines written to a pipe are not wrapped below this width, so grep and cut see whole lines.
PIPE_WIDTH = 400


def _days(first_ts: float, last_ts: float, calendar: Calendar) -> str:
    first, last = calendar.shown_date(first_ts), calendar.shown_date(last_ts)
    return first if first == last else f"{first} → {last}"


def _rich_line(row: OutlineRow, calendar: Calendar) -> Text:
    node = row.node
    assert node is not None
    if isinstance(node, Leaf):
        return Text.assemble(
            gist(node.text, LEAF_CHARS),
            (f" · {calendar.shown_date(node.timestamp)} [{node.id}]", "dim"),
            (superseded_note(row), "yellow"),
        )
    return Text.assemble(
        (row.label() if node.label else gist(node.text, LEAF_CHARS) or "(untitled)", "bold cyan"),
        f" · {node.leaf_count:,} {'memory' if node.leaf_count == 1 else 'memories'}",
        (f" · {_days(node.first_ts, node.last_ts, calendar)} [{node.id}]", "dim"),
    )


def outline_tree(memory: Memory, tree: str, depth: int, max_children: int = 0) -> Tree:
    """``tree`` ('semantic' or 'temporal') of ``memory`` as a rich Tree, ``depth`` levels below the root.

    ``max_children`` (0: no limit) caps the children shown under each node; the rest are counted
    on one line. Raises InvalidInput for an unknown tree or a depth outside 1 to 20.
    """
    which = checked_outline(tree, depth, max_children)
    root = memory.tree(which).root
    title = Text.assemble(
        (f"{which} tree", "bold"),
        f" · {counted(len(memory.leaves), 'memory', 'memories')}",
        (f" · {_days(root.first_ts, root.last_ts, memory.calendar)}" if memory.leaves else "", "dim"),
    )
    top = Tree(title, guide_style="dim")
    # parents[level - 1] is the Tree that rows at ``level`` go under.
    parents = [top]
    for row in outline_rows(memory, which, depth, max_children):
        del parents[row.level :]
        parent = parents[-1]
        if row.node is None:
            parent.add(Text(f"… and {row.left_out:,} more", style="dim italic"))
            continue
        branch = parent.add(_rich_line(row, memory.calendar))
        parents.append(branch)
        if isinstance(row.node, Branch) and row.level == depth and row.node.children:
            count = len(row.node.children)
            branch.add(
                Text(
                    f"… {count:,} {'child' if count == 1 else 'children'} (raise --depth)",
                    style="dim italic",
                )
            )
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
    checked_outline(tree, depth, max_children)
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

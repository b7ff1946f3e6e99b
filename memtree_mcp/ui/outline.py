"""The outline of one tree as text: drawn with rich for ``memtree-mcp tree``, plain for MCP clients.

Both outlines come from one walk of the tree (:func:`outline_rows`), so the terminal and the
``memtree://{namespace}/outline/{tree}`` resource always show the same nodes in the same order.

The rich outline shows each branch's label, how many memories it holds and the days it spans;
each memory its first words. Colour only goes to a terminal: piped into a file or another
program the outline is plain text (rich's own detection, and ``NO_COLOR``), with lines long
enough not to be wrapped. The plain outline (:func:`plain_outline`) is indented lines for a
model to read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from memtree_mcp.core.extractive import gist
from memtree_mcp.core.hierarchy import Hierarchy
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.inputs import MAX_OUTLINE_DEPTH, TreeName, check_range, check_tree, format_timestamp

__all__ = ["OutlineRow", "outline_rows", "outline_tree", "plain_outline", "print_outline"]

LEAF_CHARS = 80
# Lines written to a pipe are not wrapped below this width, so grep and cut see whole lines.
PIPE_WIDTH = 400
NO_MEMORIES = "(no memories yet)"


@dataclass(frozen=True)
class OutlineRow:
    """One line of an outline, ``level`` steps below the root (1: a child of the root).

    Either a node, or (``node`` None) the count of its parent's children left out by ``max_children``.
    """

    level: int
    node: Leaf | Branch | None
    left_out: int = 0


def _checked(tree: str, depth: int, max_children: int = 0) -> TreeName:
    """The tree ``tree`` names, once it, ``depth`` (1 to 20) and ``max_children`` are found valid.

    Raises InvalidInput naming the first one that is not.
    """
    which = check_tree(tree)
    check_range(depth, "depth", 1, MAX_OUTLINE_DEPTH)
    check_range(max_children, "max-children", 0, 1_000_000)
    return which


def _hierarchy(memory: Memory, tree: TreeName) -> Hierarchy:
    return memory.semantic if tree == "semantic" else memory.temporal


def outline_rows(memory: Memory, tree: TreeName, depth: int, max_children: int = 0) -> Iterator[OutlineRow]:
    """The nodes of ``tree`` down to ``depth`` levels below the root, each followed by its children.

    ``max_children`` (0: no limit) caps the children shown under each node; a row counting the rest
    follows the ones shown.
    """
    yield from _rows(memory, _hierarchy(memory, tree).root.children, 1, depth, max_children)


def _rows(
    memory: Memory, children: Sequence[str], level: int, depth: int, max_children: int
) -> Iterator[OutlineRow]:
    shown = children if max_children == 0 else children[:max_children]
    for child_id in shown:
        node = memory.node(child_id)
        yield OutlineRow(level, node)
        if isinstance(node, Branch) and level < depth:
            yield from _rows(memory, node.children, level + 1, depth, max_children)
    if len(children) > len(shown):
        yield OutlineRow(level, None, len(children) - len(shown))


def plain_outline(memory: Memory | None, tree: str, depth: int) -> str:
    """``tree`` of ``memory`` as indented lines down to ``depth``: each branch's label, memories and span.

    Memories show their first 80 characters; every node ends with its id. Raises InvalidInput for
    an unknown tree or a depth outside 1 to 20.
    """
    which = _checked(tree, depth)
    if memory is None:
        return NO_MEMORIES
    lines = [f"{which} tree: {len(memory.leaves)} memories"]
    # Without max_children no row counts left-out children: every row is a node.
    for row in outline_rows(memory, which, depth):
        node, pad = row.node, "  " * (row.level - 1)
        if isinstance(node, Leaf):
            lines.append(f"{pad}- {node.text[:80]} [{node.id}]")
        elif isinstance(node, Branch):
            span = f"{format_timestamp(node.first_ts)[:10]} to {format_timestamp(node.last_ts)[:10]}"
            lines.append(
                f"{pad}+ {node.label or '(untitled)'}: {node.leaf_count} memories, {span} [{node.id}]"
            )
    return "\n".join(lines)


def _days(first_ts: float, last_ts: float) -> str:
    first, last = format_timestamp(first_ts)[:10], format_timestamp(last_ts)[:10]
    return first if first == last else f"{first} → {last}"


def _rich_line(node: Leaf | Branch) -> Text:
    if isinstance(node, Leaf):
        return Text.assemble(
            gist(node.text, LEAF_CHARS),
            (f" · {format_timestamp(node.timestamp)[:10]} [{node.id}]", "dim"),
        )
    return Text.assemble(
        (node.label or gist(node.text, LEAF_CHARS) or "(untitled)", "bold cyan"),
        f" · {node.leaf_count:,} {'memory' if node.leaf_count == 1 else 'memories'}",
        (f" · {_days(node.first_ts, node.last_ts)} [{node.id}]", "dim"),
    )


def outline_tree(memory: Memory, tree: str, depth: int, max_children: int = 0) -> Tree:
    """``tree`` ('semantic' or 'temporal') of ``memory`` as a rich Tree, ``depth`` levels below the root.

    ``max_children`` (0: no limit) caps the children shown under each node; the rest are counted
    on one line. Raises InvalidInput for an unknown tree or a depth outside 1 to 20.
    """
    which = _checked(tree, depth, max_children)
    root = _hierarchy(memory, which).root
    title = Text.assemble(
        (f"{which} tree", "bold"),
        f" · {len(memory.leaves):,} memories",
        (f" · {_days(root.first_ts, root.last_ts)}" if memory.leaves else "", "dim"),
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
        branch = parent.add(_rich_line(row.node))
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
    _checked(tree, depth, max_children)
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

"""One tree as an outline: the rows of its top levels, and the plain text a model reads of them.

Every outline comes from one walk of the tree (:func:`outline_rows`): the plain text here (the
``memtree://{namespace}/outline/{tree}`` resource) and the rich one of ``memtree-mcp tree``
(``ui/outline.py``) show the same nodes in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.names import TreeName
from memtree_mcp.core.wording import counted
from memtree_mcp.service.inputs import MAX_OUTLINE_DEPTH, check_range, check_tree, format_timestamp

__all__ = ["NO_MEMORIES", "OutlineRow", "checked_outline", "outline_rows", "plain_outline"]

LEAF_CHARS = 80
NO_MEMORIES = "(no memories yet)"


@dataclass(frozen=True)
class OutlineRow:
    """One line of an outline, ``level`` steps below the root (1: a child of the root).

    Either a node, or (``node`` None) the count of its parent's children left out by ``max_children``.
    """

    level: int
    node: Leaf | Branch | None
    left_out: int = 0


def checked_outline(tree: str, depth: int, max_children: int = 0) -> TreeName:
    """The tree ``tree`` names, once it, ``depth`` (1 to 20) and ``max_children`` are found valid.

    Raises InvalidInput naming the first one that is not.
    """
    which = check_tree(tree)
    check_range(depth, "depth", 1, MAX_OUTLINE_DEPTH)
    check_range(max_children, "max-children", 0, 1_000_000)
    return which


def outline_rows(memory: Memory, tree: TreeName, depth: int, max_children: int = 0) -> Iterator[OutlineRow]:
    """The nodes of ``tree`` down to ``depth`` levels below the root, each followed by its children.

    ``max_children`` (0: no limit) caps the children shown under each node; a row counting the rest
    follows the ones shown.
    """
    yield from _rows(memory, memory.tree(tree).root.children, 1, depth, max_children)


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
    which = checked_outline(tree, depth)
    if memory is None:
        return NO_MEMORIES
    lines = [f"{which} tree: {counted(len(memory.leaves), 'memory', 'memories')}"]
    # Without max_children no row counts left-out children: every row is a node.
    for row in outline_rows(memory, which, depth):
        node, pad = row.node, "  " * (row.level - 1)
        if isinstance(node, Leaf):
            lines.append(f"{pad}- {node.text[:80]} [{node.id}]")
        elif isinstance(node, Branch):
            span = f"{format_timestamp(node.first_ts)[:10]} to {format_timestamp(node.last_ts)[:10]}"
            count = counted(node.leaf_count, "memory", "memories")
            lines.append(f"{pad}+ {node.label or '(untitled)'}: {count}, {span} [{node.id}]")
    return "\n".join(lines)

"""One tree as an outline: the rows of its top levels, and the plain text a model reads of them.

Every outline comes from one walk of the tree (:func:`outline_rows`): the plain text here (the
``memtree://{namespace}/outline/{tree}`` resource) and the rich one of ``memtree-mcp tree``
(``ui/outline.py``) show the same nodes in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import TreeName
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.representative import PERIOD_SEPARATOR
from memtree_mcp.core.wording import counted
from memtree_mcp.service.inputs import MAX_OUTLINE_DEPTH, check_range, check_tree

__all__ = ["NO_MEMORIES", "OutlineRow", "checked_outline", "outline_rows", "plain_outline", "superseded_note"]

LEAF_CHARS = 80
FOLD_MARK = " › "
NO_MEMORIES = "(no memories yet)"


@dataclass(frozen=True)
class OutlineRow:
    """One line of an outline, ``level`` steps below the root (1: a child of the root).

    Either a node, or (``node`` None) the count of its parent's children left out by ``max_children``.
    """

    level: int
    node: Leaf | Branch | None
    left_out: int = 0
    # Periods of one child each above ``node``, shown folded into its line (2026 › March 2026 › …).
    folded: tuple[Branch, ...] = ()
    # Of a memory: the id of the memory that updates it (an explicit link), when one does.
    superseded_by: str | None = None

    def label(self) -> str:
        """A branch's label led by the periods folded into it; '' for a memory or a count."""
        if not isinstance(self.node, Branch):
            return ""
        titles = [period_of(branch) for branch in self.folded]
        own, _, rest = (self.node.label or "(untitled)").partition(PERIOD_SEPARATOR)
        if titles and titles[-1].endswith(own):  # a session's one segment: its time said once
            own = titles.pop()
        return FOLD_MARK.join([*titles, own]) + (PERIOD_SEPARATOR + rest if rest else "")


def period_of(branch: Branch) -> str:
    """The period a temporal branch's label starts with (its whole label in the semantic tree)."""
    return (branch.label or "(untitled)").split(PERIOD_SEPARATOR, 1)[0]


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
    A chain of branches with one branch child each is one row, the lowest of them with the others
    ``folded`` into it (and counts as one level).

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
        if isinstance(node, Leaf):
            yield OutlineRow(level, node, superseded_by=memory.links.superseded_by(node.id))
            continue
        folded: list[Branch] = []
        while len(node.children) == 1 and isinstance(only := memory.node(node.children[0]), Branch):
            folded.append(node)  # a period with one period in it says nothing of its own
            node = only
        yield OutlineRow(level, node, folded=tuple(folded))
        if level < depth:
            yield from _rows(memory, node.children, level + 1, depth, max_children)
    if len(children) > len(shown):
        yield OutlineRow(level, None, len(children) - len(shown))


def superseded_note(row: OutlineRow) -> str:
    """What a memory's line says when a later memory updates it, as recall marks it; else ''."""
    return f" (superseded by {row.superseded_by})" if row.superseded_by else ""


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
            lines.append(f"{pad}- {node.text[:80]} [{node.id}]{superseded_note(row)}")
        elif isinstance(node, Branch):
            shown = memory.calendar.shown_date
            span = f"{shown(node.first_ts)} to {shown(node.last_ts)}"
            count = counted(node.leaf_count, "memory", "memories")
            lines.append(f"{pad}+ {row.label()}: {count}, {span} [{node.id}]")
    return "\n".join(lines)

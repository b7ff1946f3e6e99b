"""The current truth in a recall result: each stale hit comes with the memory that updates it.

A hit that a later memory updates (:class:`~memtree_mcp.core.updates.Updates`, the one way to
learn it) is marked ``superseded_by`` that memory, and the memory is always a hit of the same
result, so the mark names something the model can read:

- an update that is no hit yet joins the result, whatever ``k``, the relevance cut-off or the
  one-hit rule left out, and so does an update that a summary hit quotes (shown as the memory it
  is, its own line, and taken out of the summary's text so that it is not read twice);
- an update that is itself updated brings its own update (a chain, newest first);
- with ``move`` (a recall with a cut-off, as the tools ask it) each update is placed just before
  the hit it updates, so the newest comes first; without it (``min_relevance`` 0, the benchmarks'
  whole ranking) the ranked hits keep their order and the updates that join come after them;
- :func:`within_budget` takes a stale hit only with its update: when ``max_tokens`` cannot fit
  both, the stale hit is left out rather than shown unmarked or marked to something absent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memtree_mcp.core.hits import Hit, Shown, estimate_tokens, without_quote
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.updates import Updates

# An update that is itself updated brings its own update, this many links deep at most.
CHAIN_DEPTH = 8


class Current:
    """One recall's hits with their updates (:meth:`with_updates`), and which hits joined only as
    updates (``added``: they do not count towards ``k``)."""

    def __init__(self, memory: Memory, shown: Shown, hit_of: Callable[[Leaf, float], Hit]) -> None:
        self._memory = memory
        self._shown = shown
        self._hit_of = hit_of  # a leaf and the score it stands at -> its hit (with its relevance)
        self.added: set[str] = set()

    def with_updates(self, hits: Sequence[Hit], updates: Updates, *, move: bool) -> list[Hit]:
        """``hits`` with each stale memory marked ``superseded_by`` its latest update (as
        ``updates`` finds it), which is a hit of the result: just before it with ``move``, else
        where it ranks or after every hit."""
        order = list(hits)
        by_id = {hit.id: hit for hit in order}
        todo = [hit for hit in order if hit.kind == "leaf"]
        for _ in range(CHAIN_DEPTH):
            olders = [leaf for leaf in (self._memory.leaves.get(hit.id) for hit in todo) if leaf is not None]
            if not olders:
                break
            todo = []
            for older, newer in zip(olders, updates.newest_of(olders), strict=True):
                if newer is None or _leads_to(by_id, newer.id, older.id):
                    continue
                stale = by_id[older.id]
                stale.superseded_by = newer.id
                update = by_id.get(newer.id)
                if update is None:
                    update = by_id[newer.id] = self._joined(newer, stale.score, order)
                    todo.append(update)
                    order.append(update)
                elif not move or order.index(update) < order.index(stale):
                    continue
                if move:
                    order.remove(update)
                    order.insert(order.index(stale), update)
        return [hit for hit in order if hit.text.strip()]

    def _joined(self, newer: Leaf, score: float, order: list[Hit]) -> Hit:
        """``newer`` as a hit that joins the result as an update, its text out of every summary."""
        self.added.add(newer.id)
        text = self._shown.memory_itself(newer)
        for hit in order:
            if hit.kind == "summary":
                hit.text = without_quote(hit.text, newer)
        hit = self._hit_of(newer, score)
        hit.text = text
        return hit

    def within_budget(
        self, hits: Sequence[Hit], k: int, max_tokens: float | None, cost: Callable[[Hit], float] | None
    ) -> list[Hit]:
        """``hits`` in order up to ``k`` of them that ranked (the updates that joined are more), each
        taken only with the updates it is marked with, and all of them within ``max_tokens``
        (``cost`` of each hit, by default its text's tokens): a hit that does not fit with its
        updates is skipped, so a long summary never crowds out the short memories after it."""
        by_id = {hit.id: hit for hit in hits}
        taken: set[str] = set()
        budget = max_tokens
        ranked = 0
        for hit in hits:
            if hit.id in taken:
                continue
            group = [hit]
            while (newer := group[-1].superseded_by) is not None and newer not in taken:
                if newer not in by_id or by_id[newer] in group:
                    break
                group.append(by_id[newer])
            if budget is not None:
                price = sum(cost(h) if cost is not None else estimate_tokens(h.text) for h in group)
                if price > budget:
                    continue
                budget -= price
            taken.update(h.id for h in group)
            ranked += sum(h.id not in self.added for h in group)
            if ranked >= k:
                break
        return [hit for hit in hits if hit.id in taken]


def _leads_to(by_id: dict[str, Hit], start: str, target: str) -> bool:
    """Whether the marks from hit ``start`` on reach ``target`` (a loop the links must not make)."""
    seen: set[str] = set()
    node: str | None = start
    while node is not None and node not in seen:
        if node == target:
            return True
        seen.add(node)
        hit = by_id.get(node)
        node = hit.superseded_by if hit is not None else None
    return False

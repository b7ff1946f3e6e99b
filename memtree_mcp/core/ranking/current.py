"""The current truth in a recall result: each stale hit comes with the memory that updates it.

A hit that a later memory says it updates (a stored link: ``Leaf.supersedes``, made by the agent,
the user or an LLM judge, never guessed at read time; :meth:`~memtree_mcp.core.trees.links.Links.current_of`
follows them) is marked ``superseded_by`` that memory, and the memory is always a hit of the same
result, so the mark names something the model can read:

- an update that is no hit yet joins the result, whatever ``k``, the relevance cut-off or the
  one-hit rule left out, and so does an update that a summary hit quotes (shown as the memory it
  is, its own line, and taken out of the summary's text so that it is not read twice);
- an update that is itself updated brings its own update (a chain, newest first);
- with ``move`` (a recall with a cut-off, as the tools ask it) each update is placed just before
  the hit it updates, so the newest comes first, and of two memories on one subject that no link
  ties the newer goes first too (:func:`~memtree_mcp.core.ranking.candidates.newer_first`); without it
  (``min_relevance`` 0, the benchmarks' whole ranking) the ranked hits keep their order and the
  updates that join come after them;
- :func:`within_budget` takes a stale hit only with its update: when ``max_tokens`` cannot fit
  both, the stale hit is left out rather than shown unmarked or marked to something absent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.candidates import newer_first
from memtree_mcp.core.ranking.hits import Hit, Shown, estimate_tokens, without_quote
from memtree_mcp.core.trees.model import Leaf

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

    def with_updates(self, hits: Sequence[Hit], *, move: bool) -> list[Hit]:
        """``hits`` with each stale memory marked ``superseded_by`` its latest update (where its
        links lead), which is a hit of the result: just before it with ``move`` (and the newer of
        two related memories before the older), else where it ranks or after every hit."""
        memory = self._memory
        order = list(hits)
        by_id = {hit.id: hit for hit in order}
        todo = [hit for hit in order if hit.kind == "leaf"]
        for _ in range(CHAIN_DEPTH):
            olders = [leaf for leaf in (memory.leaves.get(hit.id) for hit in todo) if leaf is not None]
            if not olders:
                break
            todo = []
            newests = [memory.links.current_of(older.id) for older in olders]
            for older, newest in zip(olders, newests, strict=True):
                newer = memory.leaves[newest] if newest is not None else None
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
        if move:
            order = self._newer_first(order)
        return [hit for hit in order if hit.text.strip()]

    def _newer_first(self, order: list[Hit]) -> list[Hit]:
        """``order`` with its memories reordered among their own places so that of two related
        ones the newer comes first (summaries keep their places)."""
        places = [at for at, hit in enumerate(order) if hit.kind == "leaf" and hit.id in self._memory.leaves]
        leaves = [self._memory.leaves[order[at].id] for at in places]
        by_id = {order[at].id: order[at] for at in places}
        out = list(order)
        for at, leaf in zip(places, newer_first(leaves), strict=True):
            out[at] = by_id[leaf.id]
        return out

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

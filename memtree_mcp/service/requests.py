"""What a caller asks recall: :class:`RecallRequest`, built once by the face that took the call.

The MCP tool ``recall``, the CLI's ``recall``, the hook's context lookup and the explorer's search
each write a recall's arguments once, as one :class:`RecallRequest`, and hand it down unchanged:
:meth:`~memtree_mcp.service.MemoryService.look_up` resolves its namespace, the reader
(:meth:`~memtree_mcp.service.reading.Reader.recall_hits`) checks it into what core's ranking reads
(:class:`~memtree_mcp.core.ranking.recall.RankRequest`, by
:func:`~memtree_mcp.service.reading.rank_request`), embeds its query and ranks. Before, the same
dozen keywords were restated at each layer and joined by ``functools.partial``.

Nothing here is checked: the values are the caller's as given, so that every check of an argument,
and every error a user reads about one, stays where the limits are read (``reading.py``, with
``inputs.py``'s limits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass

from memtree_mcp.core.names import DEFAULT_STRATEGY
from memtree_mcp.core.ranking.relevance import DEFAULT_MIN_RELEVANCE
from memtree_mcp.service.inputs import DEFAULT_K


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall, as its caller asks it (unchecked): the ``k`` best memories and summaries for
    ``query`` that pass the filters, within ``max_tokens``.

    ``strategy`` is one of STRATEGIES (``gather``: hybrid, with the authors a query names matched
    as authors and each memory lifted by its stretch of conversation; ``hybrid``: dense + lexical
    with propagation along time; ``collapsed``: dense over every node); ``kind`` is ``any``,
    ``leaf`` or ``summary``; the time filters are ISO 8601; ``tags`` keeps memories with any of
    them; ``session`` only that conversation's; ``expand`` replaces summaries by their best
    memories; ``as_of`` (a version number or an ISO 8601 time) recalls from the memory as it was
    then, less what has been forgotten since. Hits below ``min_relevance`` (0 to 1) are left out,
    so ``k`` is a most, not a quota. ``namespace`` None means the caller's default one.
    """

    query: str
    _: KW_ONLY
    k: int = DEFAULT_K
    max_tokens: int | None = None
    namespace: str | None = None
    strategy: str = DEFAULT_STRATEGY
    kind: str = "any"
    time_from: str | None = None
    time_to: str | None = None
    tags: Sequence[str] = ()
    session: str | None = None
    expand: bool = False
    as_of: str | None = None
    min_relevance: float = DEFAULT_MIN_RELEVANCE

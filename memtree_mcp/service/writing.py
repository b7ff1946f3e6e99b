"""The write path: remember (and bulk import) and forget.

Every write takes the namespace for itself (:meth:`Spaces.writing`: the file lock, then the
space's lock, after following other processes), changes the trees in memory, marks the branches
it touched for an LLM summary, and commits all changed and removed nodes at once
(:meth:`Spaces.change`); a failure anywhere leaves the previous version, on disk and in RAM.

Embedding is done before any lock is taken: a 100,000-character ``remember`` embeds for seconds,
and recall, the explorer and other writers must not wait for it. Large writes embed one at a time
(:data:`LARGE_WRITES`), so several at once cannot multiply the embedder's working memory, and a
long write lets waiting readers in every :data:`READERS_EVERY` leaves it files.

Forget deletes only what it is shown: memories by id, or the memories under one summary, at most
MAX_FORGET of them and never a root, unless a person asks from the CLI (``limit=None``):
:func:`forget_targets`. What a forget would delete is shown to the user before it happens
(:func:`forget_preview`, ``server/confirmations.py``), and after the user's yes, what matches the
forget that the question did not show is kept (:func:`stored_since`).

One module, not several: remember, import and forget are one write path (the namespace taken,
the trees changed, the summaries marked, one commit) and share its helpers, and which memories a
forget takes is the forget's own rule; split, each part would reach into the others' state.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder, Vector
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.candidates import update_candidates
from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.core.trees.chunking import split_into_chunks
from memtree_mcp.core.trees.model import LINK_MAKERS, Leaf, LinkMaker, link_maker, may_undo
from memtree_mcp.core.trees.temporal import time_key
from memtree_mcp.errors import InvalidInput, MemtreeError, NotFound
from memtree_mcp.service.inputs import (
    FROM_A_FILE,
    MAX_FORGET,
    ImportTerms,
    check_ids,
    check_node,
    check_role,
    check_session,
    check_supersedes,
    check_tags,
    check_text,
    memory_timestamp,
)
from memtree_mcp.service.judging import MAX_JUDGED_CHUNKS, Judging
from memtree_mcp.service.redaction import Fields, guard_secrets
from memtree_mcp.service.refine import Refinement
from memtree_mcp.service.results import PathStep
from memtree_mcp.service.spaces import Spaces, on_conflict_again

if TYPE_CHECKING:
    from memtree_mcp.service.reading import Reader

log = logging.getLogger("memtree_mcp")

# A write of more chunks than this is large (8 chunks: about 8,000 characters): large writes embed
# one at a time, so three 100,000-character remembers at once peak at 160 MB over the server's
# resident memory instead of each adding its own (bench/bigwrite.py).
LARGE_WRITE_CHUNKS = 8
LARGE_WRITES = 1
# A write lets waiting readers in after every this many leaves it files (Spaces.let_readers_in):
# filing the 106 chunks of 100,000 characters held the namespace for 1.5 to 4 seconds.
READERS_EVERY = 8


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of content to store as a leaf, with what ``remember`` was told about it."""

    text: str
    role: str
    tags: tuple[str, ...]
    timestamp: float
    session: str | None
    # The id the leaf is to have (an imported record's), when no other memory has it.
    wanted_id: str | None = None
    # The kinds of the secrets replaced by a marker in the content (on its first chunk only).
    redacted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Stored:
    """What storing chunks did: each chunk's leaf id, how many were new, the first one's path, the
    earlier memories the first one now says it updates (the links this write gave it), the links
    it undid, and the older memories it may update that no link names (offered to the agent)."""

    ids: list[str]
    added: int
    path: list[PathStep]
    supersedes: tuple[str, ...] = ()
    unlinked: tuple[str, ...] = ()
    candidates: tuple[Leaf, ...] = ()


def content_hash(text: str) -> str:
    """The identity of a chunk's exact text, for deduplication."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_leaf_id() -> str:
    """A fresh, unique id for a leaf."""
    return "m" + uuid.uuid4().hex[:15]


class Writer:
    """Remembers and forgets: every change to the trees goes through here."""

    def __init__(
        self,
        settings: Settings,
        spaces: Spaces,
        embedder: Callable[[], Embedder],
        refinement: Refinement,
        judging: Judging | None = None,
    ) -> None:
        self.settings = settings
        self._spaces = spaces
        self._embedder = embedder
        self._refinement = refinement
        self._judging = judging
        self._large_writes = threading.BoundedSemaphore(LARGE_WRITES)
        if settings.secrets == "keep":
            log.warning(
                "MEMTREE_SECRETS=keep: API keys, passwords, tokens and private keys in memories are "
                "stored, embedded, exported and synced as they are"
            )

    def chunks(
        self,
        content: object,
        role: object = "user",
        tags: object = (),
        timestamp: object = None,
        session: object = None,
        *,
        calendar: Calendar,
        terms: ImportTerms = FROM_A_FILE,
    ) -> list[Chunk]:
        """``content`` and its attributes checked, the secrets of each that is stored (content,
        role, tags, session) dealt with as MEMTREE_SECRETS says (the one door of every write), and
        the content split into chunks; the first chunk names the kinds of secrets redacted. A
        ``timestamp`` without a zone is a time of ``calendar``'s (the namespace's).

        ``terms``: a writer's own secrets mode and length limit, for records it dealt with already.
        Raises InvalidInput for any bad argument, and for a secret when MEMTREE_SECRETS=refuse.
        """
        text = check_text(content, "content", terms.max_chars or self.settings.max_content_chars)
        given = Fields(text, check_role(role), check_tags(tags), check_session(session))
        moment = memory_timestamp(timestamp, calendar) if timestamp is not None else time.time()
        kept = guard_secrets(given, terms.secrets or self.settings.secrets)
        parts = split_into_chunks(kept.content)
        chunks = [Chunk(part, kept.role, kept.tags, moment, kept.session) for part in parts]
        if kept.redacted and chunks:
            chunks[0] = dataclasses.replace(chunks[0], redacted=kept.redacted)
        return chunks

    def import_records(
        self, name: str, records: Iterable[object], *, batch: int = 256, terms: ImportTerms = FROM_A_FILE
    ) -> tuple[int, int]:
        """Store many records fast: embeddings in batches, one commit per ``batch`` memories.

        Each record is a mapping with ``content`` and optionally ``role``, ``timestamp``,
        ``session``, ``tags``, checked as ``remember`` checks them, and ``id`` and ``supersedes``
        as ``export`` writes them: a memory keeps its record's id unless the namespace has a memory
        of that id already (then it gets a new one), and a record's links to the ids of other
        records (or of memories the namespace holds) are given to the memories at the end, in one
        more commit, as made by ``import``: an import vouches only for itself, so a record's
        ``supersedes_by`` (the user's, in an export or a file forged as one) is not taken at its
        word, unless ``terms.keep_makers``: the records are the namespace's own, read back by this
        process (``doctor --redact`` storing memories again without their secrets). A link to neither is
        dropped, and so is one that would close a circle (the newer memories' links are given
        first), both logged. Every record is checked before
        anything is stored: one that fails stops the import with InvalidInput naming the record,
        and the namespace is left as it was. The records are stored in the order of their
        timestamps, oldest first; records without one keep their order after the dated ones (they
        are stamped with the time of the import). Returns (memories added, duplicates skipped).
        """
        with self._spaces.maintenance_deferred(name):
            return self._import(name, records, batch, terms)

    def _import(
        self, name: str, records: Iterable[object], batch: int, terms: ImportTerms
    ) -> tuple[int, int]:
        added = skipped = 0
        pending: list[Chunk] = []
        # Of each record in ``pending`` with an id or links: its first chunk's place, id and links.
        named: list[tuple[int, str | None, tuple[Link, ...]]] = []
        new_id: dict[str, str] = {}  # a record's id -> the id of its memory here
        links: dict[str, tuple[Link, ...]] = {}  # a memory here -> the record ids it supersedes, by whom

        def flush() -> None:
            nonlocal added, skipped, pending, named
            stored = self.store(name, pending)
            added, skipped = added + stored.added, skipped + len(pending) - stored.added
            for at, old, olders in named:
                if old is not None:
                    new_id[old] = stored.ids[at]
                if olders:
                    links[stored.ids[at]] = links.get(stored.ids[at], ()) + olders
            pending, named = [], []

        calendar = self._spaces.calendar_of(name)
        for chunks, old, olders in _in_time_order(self._read(records, calendar, terms)):
            if old is not None or olders:
                named.append((len(pending), old, olders))
            if old is not None:
                chunks[0] = dataclasses.replace(chunks[0], wanted_id=old)
            pending += chunks
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
        if links:
            self._link_imported(name, links, new_id)
        return added, skipped

    def _read(self, records: Iterable[object], calendar: Calendar, terms: ImportTerms) -> list[Read]:
        """Each record checked (times read in ``calendar``'s zone), as its chunks, its id, its links
        (made by ``import``, or by whom the record says with ``terms.keep_makers``) and whether it
        named its time."""
        read = []
        for number, record in enumerate(records, start=1):
            try:
                if not isinstance(record, Mapping):
                    raise InvalidInput("each line must be a JSON object with a 'content' field.")
                chunks = self.chunks(
                    record.get("content"),
                    record.get("role", "user"),
                    record.get("tags", ()),
                    record.get("timestamp"),
                    record.get("session"),
                    calendar=calendar,
                    terms=terms,
                )
                old = record.get("id")
                if old is not None:
                    old = check_supersedes([old])[0]
                olders = _made_by(check_supersedes(record.get("supersedes")), record, terms.keep_makers)
            except InvalidInput as exc:
                raise InvalidInput(f"record {number}: {exc}") from None
            read.append((chunks, old, olders, record.get("timestamp") is not None))
        return read

    @on_conflict_again
    def _link_imported(
        self, name: str, links: Mapping[str, Sequence[Link]], new_id: Mapping[str, str]
    ) -> None:
        """Give imported memories their links (``links``: the record ids each supersedes, each with
        who made it), each record id read as its memory's id here (``new_id``) or, failing that, as
        a memory the namespace already held; one commit. The newest memories are linked first, so
        that of two records that say they update each other the newer's link is kept and the
        older's, which would close a circle, dropped."""
        with self._spaces.writing(name) as space:
            assert space is not None
            memory = space.memory
            dropped = circles = 0
            with self._spaces.change(space) as change:
                held = [memory.leaves[leaf_id] for leaf_id in links if leaf_id in memory.leaves]
                for leaf_id in (leaf.id for leaf in sorted(held, key=time_key, reverse=True)):
                    mapped = [(new_id.get(older, older), by) for older, by in links[leaf_id]]
                    found = [(o, by) for o, by in mapped if o in memory.leaves and o != leaf_id]
                    dropped += len(mapped) - len(found)
                    fitting = [(o, by) for o, by in found if not memory.links.reaches(o, leaf_id)]
                    circles += len(found) - len(fitting)
                    for maker in LINK_MAKERS:
                        if memory.links.link(leaf_id, [o for o, by in fitting if by == maker], maker):
                            change.changed.add(leaf_id)
                            change.rewritten.add(leaf_id)
        if dropped:
            log.warning("import: %d update links named no memory of the import or of '%s'", dropped, name)
        if circles:
            log.warning(
                "import: %d update links left out: each would close a circle with a newer memory's link",
                circles,
            )

    def store(
        self,
        name: str,
        chunks: list[Chunk],
        supersedes: object = (),
        *,
        unlink: object = (),
        by: LinkMaker = "agent",
        judge: bool = False,
    ) -> Stored:
        """Store ``chunks`` as leaves of namespace ``name`` in one commit, skipping exact duplicates.

        ``supersedes``: ids of earlier memories that this content updates (checked by
        ``inputs.check_supersedes``), links made by ``by``; the first chunk's leaf gets them, the
        stored one when it is a duplicate. Each must name a memory held now, other than this
        content's own duplicates, and none may close a circle (it updates this one already):
        checked under the write lock, before anything is written. ``unlink``: ids whose links from
        the first chunk's stored duplicate are undone (the content must be stored already).
        A new first chunk is given the older memories it may update
        (:func:`~memtree_mcp.core.ranking.candidates.update_candidates`), stored with it and returned to be
        offered. ``judge``: with an LLM configured, the first new leaves are marked for its
        judgement of what they update (``service/judging.py``), in the same commit, and handed to
        its worker after it.

        The new chunks are embedded before the namespace is locked. Raises InvalidInput past the
        namespace's quota or for an id of ``supersedes`` that names no memory (nothing written),
        LockTimeout when another writer keeps the namespace too long, StoreError when the commit
        fails (the previous state is kept) and EmbedderMismatch for a store built by another model.
        """
        olders = check_supersedes(supersedes)
        undone = check_supersedes(unlink, "unlink")
        hashes = [content_hash(chunk.text) for chunk in chunks]
        vectors = self._vectors(name, chunks, hashes)
        return self._file(name, chunks, hashes, vectors, olders, undone, by, judge)

    @on_conflict_again
    def _file(
        self,
        name: str,
        chunks: list[Chunk],
        hashes: list[str],
        vectors: Mapping[str, Vector],
        olders: tuple[str, ...],
        undone: tuple[str, ...],
        by: LinkMaker,
        judge: bool,
    ) -> Stored:
        """:meth:`store` once the chunks are embedded: under the namespace's lock, one commit."""
        refine: list[tuple[int, str]] = []
        judged: list[tuple[int, str]] = []
        judge = judge and self._judging is not None and self._judging.enabled
        with self._spaces.writing(name) as space:
            assert space is not None  # writing() creates the namespace
            memory = space.memory
            fresh = _fresh(memory, hashes)
            self._check_quota(name, memory, len(fresh))
            check_links(memory, name, olders, hashes)
            check_unlinks(memory, undone, hashes[0], by)
            ids: list[str] = []
            offered: tuple[Leaf, ...] = ()
            with self._spaces.change(space) as change:
                for i, chunk in enumerate(chunks):
                    existing = memory.duplicate_of(hashes[i])
                    if existing is not None:
                        if not ids:
                            linked = memory.links.link(existing, olders, by)
                            if memory.links.unlink(existing, undone, by) or linked:
                                change.changed.add(existing)
                                change.rewritten.add(existing)
                            offered = _still_offered(memory, memory.leaves[existing])
                        ids.append(existing)
                        continue
                    leaf = Leaf(
                        id=_free_id(memory, chunk.wanted_id),
                        text=chunk.text,
                        vector=vectors[hashes[i]],
                        seq=memory.next_seq,
                        timestamp=chunk.timestamp,
                        role=chunk.role,
                        tags=chunk.tags,
                        session=chunk.session,
                        content_hash=hashes[i],
                        created=change.now,
                        supersedes=olders if not ids else (),
                        supersedes_by=(by,) * len(olders) if not ids else (),
                        judging=judge and len(judged) < MAX_JUDGED_CHUNKS,
                    )
                    if not ids:
                        found = update_candidates(memory, leaf, exclude=olders)
                        leaf.may_update = tuple(candidate.leaf.id for candidate in found)
                        offered = tuple(candidate.leaf for candidate in found)
                    if leaf.judging:
                        judged.append((-leaf.seq, leaf.id))
                    change.changed |= memory.add_leaf(leaf, change.removed)
                    ids.append(leaf.id)
                    if len(ids) % READERS_EVERY == 0:
                        self._spaces.let_readers_in(space)
                refine = self._refinement.mark(memory, change.changed, forgotten=False)
            path = [
                PathStep(id=b.id, label=b.label)
                for b in memory.semantic.ancestors(ids[0])
                if b.kind != "root"
            ]
        self._refinement.submit(name, refine)
        if judged and self._judging is not None:
            self._judging.submit(name, judged)
        return Stored(ids, len(fresh), path, olders, undone, offered)

    @on_conflict_again
    def relink(
        self, name: str, newer: str, supersedes: object, unlink: object, by: LinkMaker
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Link held memory ``newer`` to the memories ``supersedes`` and undo its links to
        ``unlink``, checked as :meth:`store` checks them, in one commit; (its links after, those
        undone). Raises NotFound for an unknown ``newer``."""
        olders, undone = check_supersedes(supersedes), check_supersedes(unlink, "unlink")
        with self._spaces.writing(name, create=False) as space:
            if space is None or newer not in space.memory.leaves:
                raise NotFound(f"no memory {newer} in namespace '{name}'; recall to find its id.")
            memory = space.memory
            leaf = memory.leaves[newer]
            check_links(memory, name, olders, [leaf.content_hash])
            check_unlinks(memory, undone, leaf.content_hash, by)
            with self._spaces.change(space) as change:
                linked = memory.links.link(newer, olders, by)
                if memory.links.unlink(newer, undone, by) or linked:
                    change.changed.add(newer)
                    change.rewritten.add(newer)
            return leaf.supersedes, undone

    def _vectors(self, name: str, chunks: Sequence[Chunk], hashes: Sequence[str]) -> dict[str, Vector]:
        """A vector for every chunk by content hash, embedded without holding any lock.

        Chunks already stored take their leaf's vector (the same text embeds the same), so a
        duplicate forgotten while this write waited for the lock still has one.
        """
        known: dict[str, Vector] = {}
        with self._spaces.reading(name) as space:
            if space is not None:
                memory = space.memory
                for h in hashes:
                    existing = memory.duplicate_of(h)
                    if existing is not None:
                        known[h] = memory.leaves[existing].vector
                self._check_quota(name, memory, len(_fresh(memory, hashes)))
        new = [i for i, h in enumerate(hashes) if h not in known and h not in hashes[:i]]
        if new:
            large = len(new) > LARGE_WRITE_CHUNKS
            with self._large_writes if large else nullcontext():
                embedded = self._embedder().embed_batch([chunks[i].text for i in new])
            known.update((hashes[i], embedded[position]) for position, i in enumerate(new))
        return known

    def _check_quota(self, name: str, memory: Memory, adding: int) -> None:
        quota = self.settings.max_memories
        if len(memory.leaves) + adding > quota:
            raise InvalidInput(
                f"namespace '{name}' holds {len(memory.leaves):,} memories and this would add "
                f"{adding}; the quota is {quota:,} (MEMTREE_MAX_MEMORIES). Forget some, or raise it."
            )

    @on_conflict_again
    def forget(
        self,
        name: str,
        *,
        node_id: str | None = None,
        ids: Sequence[str] | None = None,
        confirm: bool = False,
        limit: int | None = MAX_FORGET,
        held_only: bool = False,
    ) -> list[str]:
        """Delete the memories ``ids`` (with ``confirm``, every memory under a summary among them), or
        memory ``node_id``, or with ``confirm`` every memory under summary ``node_id``; returns the
        ids deleted. With ``held_only``, the memories of ``ids`` no longer held are passed over
        (the ids a user was shown, some of them forgotten since by another client).

        At most ``limit`` memories go, and never those under a root, unless ``limit`` is None (the
        CLI's ``--all-under``). Every id is checked before anything is deleted. Deleted memories
        leave both trees, every summary above them is recomputed without them, a memory that
        updated one of them updates what it updated (``Links.carry_over``: the newest of a chain
        stays current), and all of it is one commit. Raises InvalidInput for a bad or refused
        request and NotFound for an unknown node; nothing is deleted then.
        """
        if (node_id is None) == (ids is None):
            raise InvalidInput("give either node_id or ids, not both or neither.")
        wanted = check_ids(ids, limit) if ids is not None else None
        refine: list[tuple[int, str]] = []
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                if held_only:
                    return []
                raise NotFound(f"namespace '{name}' holds no memories: nothing to forget.")
            memory = space.memory
            if wanted is not None and held_only:
                wanted = [leaf_id for leaf_id in wanted if leaf_id in memory.leaves]
                if not wanted:
                    return []
            if wanted is not None:
                targets = forget_targets(memory, name, wanted, confirm, limit)
            else:
                assert node_id is not None
                targets = forget_under(memory, name, node_id, confirm, limit)
            with self._spaces.change(space) as change:
                for done, leaf_id in enumerate(targets, start=1):
                    relinked = memory.links.carry_over(leaf_id)
                    change.changed |= relinked
                    change.rewritten |= relinked
                    leaf_changed, leaf_removed = memory.remove_leaf(leaf_id)
                    change.changed = (change.changed | leaf_changed) - leaf_removed
                    change.removed |= leaf_removed
                    if done % READERS_EVERY == 0:
                        self._spaces.let_readers_in(space)
                # What the forgotten memories said must not survive in any LLM summary either.
                refine = self._refinement.mark(memory, change.changed, forgotten=True)
        self._refinement.submit(name, refine)
        log.info("forgot %d memories in namespace %s", len(targets), name)
        return targets


def check_links(memory: Memory, name: str, supersedes: Sequence[str], hashes: Sequence[str]) -> None:
    """InvalidInput unless every id of ``supersedes`` names a memory of ``memory`` (namespace
    ``name``) other than a stored duplicate of the content being remembered (``hashes``), and
    none of them updates that duplicate already (the link would close a circle)."""
    own = {memory.duplicate_of(h) for h in hashes}
    first = memory.duplicate_of(hashes[0]) if hashes else None
    for older in supersedes:
        if first is not None and older in memory.leaves and memory.links.reaches(older, first):
            raise InvalidInput(
                f"supersedes: {older} already updates {first} (this memory), directly or through "
                "others; a memory cannot update one that updates it. Nothing was changed."
            )
        if older in own:
            raise InvalidInput(
                f"supersedes: {older} is this memory itself (the same text is already stored as "
                f"{older}); nothing was stored. Name only the earlier memories it updates."
            )
        if older not in memory.leaves:
            what = "a summary, not a memory" if memory.branch(older) is not None else "not a stored memory"
            raise InvalidInput(
                f"supersedes: {older} is {what} in namespace '{name}' (forgotten, or never stored); "
                "nothing was stored. Recall to find the current id of the memory this one updates, "
                "or remember it without supersedes."
            )


Link = tuple[str, LinkMaker]
"""An older memory's id and who said the newer updates it."""
# One checked import record: its chunks, its id, its links, whether it named its time.
Read = tuple[list[Chunk], str | None, tuple[Link, ...], bool]


def _made_by(olders: Sequence[str], record: Mapping[str, object], keep_makers: bool) -> tuple[Link, ...]:
    """``olders`` each made by ``import``, or with ``keep_makers`` by the maker the record names
    for it (``supersedes_by``, as export writes it; ``import`` for one it does not name)."""
    given = record.get("supersedes_by") if keep_makers else None
    makers = list(given) if isinstance(given, list) else []
    return tuple(
        (older, cast(LinkMaker, makers[at]) if at < len(makers) and makers[at] in LINK_MAKERS else "import")
        for at, older in enumerate(olders)
    )


def check_unlinks(memory: Memory, unlink: Sequence[str], first_hash: str, by: LinkMaker) -> None:
    """InvalidInput unless every id of ``unlink`` names a link of the stored memory whose text
    has ``first_hash`` (the content given must be the memory that made the links) that ``by``
    may undo: a link the user made is undone only by the user, from the CLI."""
    if not unlink:
        return
    stored = memory.duplicate_of(first_hash)
    if stored is None:
        raise InvalidInput(
            "unlink undoes links of a memory already stored: pass its exact content with the ids "
            "to unlink; nothing was stored."
        )
    missing = [older for older in unlink if older not in memory.leaves[stored].supersedes]
    if missing:
        raise InvalidInput(
            f"unlink: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not linked from "
            f"{stored} (it supersedes {', '.join(memory.leaves[stored].supersedes) or 'nothing'}); "
            "nothing was changed."
        )
    for older in unlink:
        maker = link_maker(memory.leaves[stored], older)
        if not may_undo(by, maker):
            raise InvalidInput(
                f"unlink: the user linked {stored} to {older}, and only the user can undo it "
                f"(`memtree-mcp link {stored} --unlink {older}`); nothing was changed."
            )


def _still_offered(memory: Memory, leaf: Leaf) -> tuple[Leaf, ...]:
    """The candidates ``leaf`` was offered when it was remembered that are still held, current
    and not linked from it: what remembering it again offers."""
    return tuple(
        memory.leaves[older]
        for older in leaf.may_update
        if older in memory.leaves and older not in leaf.supersedes and memory.links.current_of(older) is None
    )


def _free_id(memory: Memory, wanted: str | None) -> str:
    """``wanted`` when it names no node of ``memory``, else a new leaf id."""
    if wanted is None or wanted in memory.leaves or memory.branch(wanted) is not None:
        return new_leaf_id()
    return wanted


def _fresh(memory: Memory, hashes: Sequence[str]) -> list[int]:
    """Positions of the hashes neither stored in ``memory`` nor repeated earlier in ``hashes``."""
    return [i for i, h in enumerate(hashes) if memory.duplicate_of(h) is None and h not in hashes[:i]]


def _in_time_order(read: list[Read]) -> Iterator[tuple[list[Chunk], str | None, tuple[Link, ...]]]:
    """The records oldest first by their timestamps; the undated after them, in their own order."""
    read.sort(key=lambda entry: (not entry[3], entry[0][0].timestamp if entry[3] else 0.0))
    for chunks, old, olders, _dated in read:
        yield chunks, old, olders


def forget_preview(
    reader: Reader, spaces: Spaces, name: str, query: str | None, ids: Sequence[str] | None, confirm: bool
) -> list[tuple[str, str]]:
    """(id, text) of each memory of namespace ``name`` that a forget by ``query``, or by the ids
    of summaries with ``confirm``, would delete; empty when there is nothing to ask the user about
    (memories named one by one, or a query that matches nothing). Raises what forget raises."""
    if query is not None:
        return [(hit.id, hit.text) for hit in reader.forget_candidates(name, query)]
    if not ids or not confirm:
        return []
    with spaces.reading(name) as space:
        if space is None:
            raise NotFound(f"namespace '{name}' holds no memories: nothing to forget.")
        memory = space.memory
        if all(node_id in memory.leaves for node_id in ids):
            return []
        targets = forget_targets(memory, name, check_ids(ids, MAX_FORGET), True, MAX_FORGET)
        return [(leaf_id, memory.leaves[leaf_id].text) for leaf_id in targets]


def stored_since(
    reader: Reader,
    spaces: Spaces,
    name: str,
    query: str | None,
    ids: Sequence[str] | None,
    confirm: bool,
    shown: Sequence[str],
    asked_at: float,
) -> list[str]:
    """The memories of namespace ``name`` that the forget (``query``, or the summaries of ``ids``
    with ``confirm``) matches now, that were not ``shown`` and were stored after ``asked_at``: what
    a yes to the question asked then leaves in place. Memories that matched then but did not fit
    in the question (a query shows its best few) are not among them: they were there before."""
    try:
        now = forget_preview(reader, spaces, name, query, ids, confirm)
    except MemtreeError:
        return []  # the summary named went with its memories, say: nothing matches
    seen = set(shown)
    with spaces.reading(name) as space:
        if space is None:
            return []
        leaves = space.memory.leaves
        return [
            leaf_id
            for leaf_id, _ in now
            if leaf_id not in seen and leaf_id in leaves and leaves[leaf_id].created >= asked_at
        ]


def forget_targets(
    memory: Memory, name: str, ids: Sequence[str], confirm: bool, limit: int | None
) -> list[str]:
    """The memories forgetting ``ids`` deletes: each memory named and, with ``confirm``, every
    memory under each summary named; at most ``limit`` of them, none under a root (see
    :func:`forget_under`). NotFound or InvalidInput before anything is deleted otherwise."""
    targets: dict[str, None] = {}
    for node_id in ids:
        check_node(memory, node_id)
        if node_id in memory.leaves:
            targets[node_id] = None
            continue
        branch = memory.branch(node_id)
        assert branch is not None
        covered = len(leaves_under(memory, node_id))
        if limit is not None and (branch.kind == "root" or covered > limit):
            forget_under(memory, name, node_id, True, limit)  # refused, confirm or not, without a retry
        if not confirm:
            raise InvalidInput(
                f"{node_id} is a summary of {covered} memories, not a memory; nothing was deleted. Make "
                "sure the user wants every memory under it gone, then pass confirm=true with it (from a "
                f"shell: `memtree-mcp forget --all-under {node_id} --yes`)."
            )
        targets.update(dict.fromkeys(forget_under(memory, name, node_id, True, limit)))
    if limit is not None and len(targets) > limit:
        raise InvalidInput(
            f"these ids cover {len(targets)} memories; one call deletes at most {limit}. This is not a "
            "call to repeat or to split into smaller ones: tell the user, who can forget them from a "
            "shell (`memtree-mcp forget --all-under NODE --yes`)."
        )
    return list(targets)


def forget_under(memory: Memory, name: str, node_id: str, confirm: bool, limit: int | None) -> list[str]:
    """The memories forgetting ``node_id`` deletes: itself, or every memory under a summary."""
    check_node(memory, node_id)
    if node_id in memory.leaves:
        return [node_id]
    branch = memory.branch(node_id)
    assert branch is not None
    targets = leaves_under(memory, node_id)
    shell = f"`memtree-mcp forget --all-under {node_id} --namespace {name}`"
    if limit is not None and branch.kind == "root":
        raise InvalidInput(
            f"{node_id} is the root: it holds the whole memory ({len(targets)} memories). An agent "
            f"cannot delete it, and this is not a call to repeat; the user can, from a shell: {shell}."
        )
    if limit is not None and len(targets) > limit:
        raise InvalidInput(
            f"{node_id} covers {len(targets)} memories; one call deletes at most {limit}. This is not a "
            f"call to repeat or to split into smaller ones: tell the user, who can run {shell}."
        )
    if not confirm and len(targets) > 1:
        raise InvalidInput(
            f"{node_id} is a summary of {len(targets)} memories. Make sure the user wants them all gone, "
            "then call again with confirm=true; nothing was deleted."
        )
    return targets


def leaves_under(memory: Memory, node_id: str) -> list[str]:
    """The leaves under branch ``node_id``, in its tree's order."""
    branch = memory.branch(node_id)
    assert branch is not None
    return memory.tree(branch.tree).leaves_under(node_id)

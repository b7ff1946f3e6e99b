"""The LanceDB store: a database directory (or object-store URI) holding one table per namespace.

:class:`LanceStore` connects to it (importing lancedb, which takes a while: only once a call needs
the store, never before the MCP handshake), lists, opens and creates namespace tables
(``store/table.py``), reads one whatever embedder built it and rewrites one whole for a re-index.
:func:`object_store_options` turns the S3 settings into LanceDB's storage options, and
:func:`home_error` the operating system's refusal into a StoreError that says what to set.

The rest of the store: the row format (``store/rows.py``), its schema versions
(``store/migrations.py``), Arrow decoding (``store/arrow.py``), a namespace's table
(``store/table.py``), snapshots (``store/snapshot.py``) and opening a namespace from one or by a
whole read (``store/opening.py``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import lancedb
import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.core.memory import Memory
from memtree_mcp.errors import StoreError, failure_reason, store_error
from memtree_mcp.host.addresses import is_loopback
from memtree_mcp.store.fences import fence_row, unfenced
from memtree_mcp.store.migrations import check_schema
from memtree_mcp.store.reads import Snapshot
from memtree_mcp.store.rows import (
    DELETED,
    META_DIMENSION,
    META_EMBEDDER,
    META_FLOOR,
    deletion_row,
    node_rows,
    node_schema,
)
from memtree_mcp.store.table import BUCKET_GRACE, NamespaceTable, compact

# Lance caches, per process, each table version's manifest and its files' metadata (the metadata
# cache, 1 GiB by default) and opened indexes (6 GiB; this store makes none). Every remember is a
# commit, so a server's cache grew by some 0.12 MB a remember and never shrank: 4,000 small
# remembers took a server from 339 to 1,522 MB (issue 31), where a fresh one on the same store
# used 457 MB. Only the latest versions are read again, and a commit rereads a few of them:
# bench/longrun.py measures a server kept up for 4,000 remembers at these sizes.
METADATA_CACHE_BYTES = 64 << 20
INDEX_CACHE_BYTES = 16 << 20
_session_made = threading.Lock()
_sessions: dict[tuple[int, int], lancedb.Session] = {}


def lance_session() -> lancedb.Session:
    """The process's one Lance session for the cache bounds set (INDEX_CACHE_BYTES,
    METADATA_CACHE_BYTES): its caches, bounded, shared by every connection."""
    bounds = (INDEX_CACHE_BYTES, METADATA_CACHE_BYTES)
    with _session_made:
        if bounds not in _sessions:
            _sessions[bounds] = lancedb.Session(
                index_cache_size_bytes=bounds[0], metadata_cache_size_bytes=bounds[1]
            )
        return _sessions[bounds]


class LanceStore:
    """A LanceDB database directory (or object-store URI) holding one table per namespace.

    ``storage_options`` go to LanceDB's object store (see :func:`object_store_options`).
    """

    def __init__(
        self,
        home: str | Path,
        embedder: str,
        dimension: int,
        storage_options: dict[str, str] | None = None,
        *,
        history: float = 7 * 86_400.0,
    ) -> None:
        """``history``: seconds of versions that compaction keeps (MEMTREE_RETENTION)."""
        self.home = str(home)
        self.embedder = embedder
        self.dimension = dimension
        self.history = history
        if "://" not in self.home:
            Path(self.home).mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = lancedb.connect(
            self.home, storage_options=storage_options or None, session=lance_session()
        )

    def namespaces(self) -> list[str]:
        """Names of the namespaces that hold a table."""
        listing = self._db.list_tables()
        names = getattr(listing, "tables", listing)
        return sorted(str(n) for n in names)

    def open(self, namespace: str, *, create: bool) -> NamespaceTable | None:
        """The table of ``namespace``; created when ``create`` is true, else None when missing.

        Raises EmbedderMismatch when the table was built with another embedder or dimension.
        """
        try:
            table = self._db.open_table(namespace)
        except (FileNotFoundError, ValueError):
            if not create:
                return None
            try:
                table = self._db.create_table(
                    namespace, schema=node_schema(self.embedder, self.dimension), exist_ok=True
                )
            except Exception as exc:  # Lance raises RuntimeError or OSError for I/O
                # Another process created it first: ``exist_ok`` still refuses it, its schema
                # carrying another generation than ours. Use that one.
                try:
                    table = self._db.open_table(namespace)
                except Exception:
                    raise home_error(self.home, exc, "write") from exc
        check_schema(namespace, table.schema, self.embedder, self.dimension)
        opened = NamespaceTable(table, self.embedder, self.dimension, self._db, namespace, self.history)
        if "://" not in self.home:
            # Where Lance writes each version's manifest (lance's format: <table>.lance/_versions).
            opened.versions_folder = Path(self.home) / f"{namespace}.lance" / "_versions"
        else:  # readers on other machines: old files kept a while
            opened.reader_grace = BUCKET_GRACE
        return opened

    def read_any(self, namespace: str) -> tuple[Snapshot, str, int] | None:
        """A namespace's live nodes whatever embedder built it, with that embedder and dimension.

        For re-indexing a store under a new embedder; None when the namespace has no table.
        """
        try:
            table = self._db.open_table(namespace)
        except (FileNotFoundError, ValueError):
            return None
        meta = table.schema.metadata or {}
        embedder = meta.get(META_EMBEDDER, b"?").decode()
        dimension = int(meta.get(META_DIMENSION, b"0").decode() or 0)
        snapshot = NamespaceTable(table, embedder, dimension, self._db, namespace).read()
        return snapshot, embedder, dimension

    def replace(self, namespace: str, memory: Memory) -> int:
        """Make every node of ``memory`` (built for this store's embedder) the whole content of
        ``namespace``.

        Written as one new commit of the table with this store's schema and embedder; the history
        starts again there (the earlier commits' rows hold another embedder's vectors), but the
        table's deletion rows stay, dating the forgotten text (:attr:`NamespaceTable.oldest_forget`).
        Returns the new commit's rev. Raises StoreError when Lance refuses.
        """
        deletions, last = self._deletions(namespace)
        rev = last + 1
        schema = node_schema(self.embedder, self.dimension)
        schema = schema.with_metadata({**(schema.metadata or {}), META_FLOOR: str(rev).encode()})
        nodes = [*memory.leaves, *memory.semantic.branches, *memory.temporal.branches]
        rows = node_rows(memory, nodes, (), time.time())
        live = {row["id"] for row in rows}
        rows += [
            deletion_row(node_id, at)
            for node_id, at in deletions
            if node_id not in live  # a memory restored after its forget is live again
        ]
        rows.append(fence_row(rev))  # what another writer appends later, built on less, does not count
        data = pa.Table.from_pylist([{**row, "rev": rev} for row in rows], schema=schema)
        try:
            compact(self._db.create_table(namespace, data=data, schema=schema, mode="overwrite"))
        except Exception as exc:  # Lance raises several exception types for I/O
            raise store_error(f"rewrite namespace '{namespace}'", exc) from exc
        return rev

    def _deletions(self, namespace: str) -> tuple[list[tuple[str, float]], int]:
        """(id, time) of the deletion rows namespace ``namespace``'s table holds now, and its last
        commit's rev (-1 when it has no table)."""
        try:
            table = self._db.open_table(namespace)
        except (FileNotFoundError, ValueError):
            return [], -1
        rows = table.to_arrow().select(["id", "kind", "updated", "rev"])
        last = int(pc.max(rows.column("rev")).as_py()) if rows.num_rows else -1
        rows = unfenced(rows)
        deleted = rows.filter(pc.equal(rows.column("kind"), DELETED))
        found = zip(deleted.column("id").to_pylist(), deleted.column("updated").to_pylist(), strict=True)
        return list(found), last


def home_error(home: str, exc: BaseException, doing: str) -> StoreError:
    """The StoreError for a store the operating system refused to ``doing`` ("create", "write"): its
    reason in a few words, and what to set instead.

    Lance reports I/O failures as RuntimeError text with the errno inside ("… (os error 30) …"); the
    errno's own words are used then, not Lance's message with its source paths.
    """
    reason = failure_reason(exc)
    setting = "MEMTREE_HOME" if "://" not in home else "MEMTREE_HOME (and its credentials)"
    return StoreError(
        f"cannot {doing} the memory store at {home} ({reason}); set {setting} to a place you can write to"
    )


def object_store_options(
    home: str,
    *,
    endpoint: str | None = None,
    region: str | None = None,
    allow_http: bool = False,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """LanceDB storage options for an ``s3://`` or ``s3+ddb://`` home; empty for a directory.

    The endpoint and region come from the arguments (MEMTREE_S3_ENDPOINT, MEMTREE_S3_REGION) or
    else the standard AWS variables (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION,
    AWS_DEFAULT_REGION); credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
    AWS_SESSION_TOKEN when set (otherwise LanceDB's own lookup: instance roles, profiles); for
    ``s3+ddb://`` the DynamoDB endpoint from AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL. Plain
    ``http://`` is allowed to a loopback endpoint, and elsewhere only with ``allow_http``
    (MEMTREE_S3_ALLOW_HTTP). Raises StoreError for an ``http://`` endpoint that is not allowed.
    """
    if not home.startswith(("s3://", "s3+ddb://")):
        return {}
    env = os.environ if environ is None else environ
    options: dict[str, str] = {}
    endpoint = endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["aws_endpoint"] = endpoint
    region = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        options["aws_region"] = region
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if env.get(key):
            options[key.lower()] = env[key]
    if home.startswith("s3+ddb://"):
        # The DynamoDB commit store (LanceDB's safe concurrent writers on S3, docs/deploy.md).
        ddb = env.get("AWS_ENDPOINT_URL_DYNAMODB") or env.get("AWS_ENDPOINT_URL")
        if ddb:
            options["dynamodb_endpoint"] = ddb
    if endpoint and endpoint.lower().startswith("http://"):
        host = urlsplit(endpoint).hostname or ""
        if not (allow_http or is_loopback(host)):
            raise StoreError(
                f"the S3 endpoint {endpoint} is plain http and not on this machine; use https, or set "
                "MEMTREE_S3_ALLOW_HTTP=true if the network between you and it is trusted."
            )
        options["allow_http"] = "true"
    return options

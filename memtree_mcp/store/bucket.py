"""A bucket home's write lease: the namespace's lock kept in the bucket, for servers on several machines.

A local file lock reaches one machine only. For an ``s3://`` home every writer of a namespace also
holds its **lease**, one small JSON object in the bucket (``<prefix>/_leases/<namespace>.json``),
taken and renewed with S3's conditional writes: ``If-None-Match: *`` creates it when there is none,
``If-Match: <ETag>`` replaces exactly the state that was read, so of two servers racing for it one
wins and the other gets 412 and looks again.

The lease only keeps writers from colliding; what a memory's safety rests on is the store's own
commit protocol: every commit is checked to count before it is acknowledged (``store/fences.py``,
``NamespaceTable._append_commit``), so two servers that both believe they hold the lease (a lease
deleted under its holder, a holder stalled past its lease) cost each other retries, never a
memory or the trees' shape.

- **Expiry without trusting clocks.** A holder renews its lease while it writes (a background
  thread, every third of its length), which changes the object's ETag. Another server takes a
  lease over only after it has seen the same ETag for a whole lease period on its own clock: the
  holder is dead or stalled. The period is the longer of the holder's length, which the lease
  records, and the taker's own (MEMTREE_LEASE_SECONDS may differ between servers). The holder
  counts its lease valid for less than that (:data:`VALID_FRACTION` of the period, from the moment
  it *sent* its last renewal).
- **Fencing.** A holder checks its lease before every commit (:meth:`BucketLease.check`: renewed
  if half gone, an error if someone else took it). A server that takes a lease over, or takes one
  that vanished (deleted by an operator, a lifecycle rule, a sync: its holder may still be
  writing), says so (:meth:`BucketLease.acquire` returns True), and the namespace then appends a
  *fence* row before anything else (``store/fences.py``): whatever the stalled holder might still
  append lands after it, with revisions no newer than the fence, and every reader ignores it.
- **A lone writer keeps it across a burst.** After a write the lease is kept, released when the
  server has been idle for :data:`LINGER_SECONDS`, or at the end of a write once it was held for
  :data:`HOLD_AT_MOST` seconds *and another server wants it*: a server waiting for the lease
  rewrites a second object (``<namespace>.wanted.json``) every :data:`WANT_EVERY` seconds, unless
  it names a server that has waited longer, and the holder reads it once every
  :data:`HOLD_AT_MOST` seconds. Releasing for another, the holder names the one that has waited
  longest, and the others leave it :data:`HANDOFF_SECONDS` to take the lease; the holder waits as
  long before taking it back.

Only botocore (the ``s3`` extra) is imported here, and only for a bucket home.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memtree_mcp.config import install_extra
from memtree_mcp.errors import ConfigurationError, LeaseLost, LockTimeout, StoreError

log = logging.getLogger("memtree_mcp")

# Seconds a lease lasts without a renewal (MEMTREE_LEASE_SECONDS): how long a dead holder blocks
# the namespace, and how long a stalled one may stay stopped before it is fenced off.
LEASE_SECONDS = 5.0
# A holder counts its lease valid for this part of the period only: the others wait the whole of
# it, on their own clock, before taking over.
VALID_FRACTION = 0.8
# Kept this long after the last write, so that a burst pays for the lease once.
LINGER_SECONDS = 0.5
# Released at the end of a write once held this long, if another server wants it.
HOLD_AT_MOST = 1.0
# A server waiting for the lease says so this often (see above).
WANT_EVERY = 0.3
# A server that released waits this long before taking the lease back: the others poll faster.
HANDOFF_SECONDS = 0.3
# How often a server waiting for the lease reads it.
POLL_SECONDS = 0.05


def bucket_and_prefix(home: str) -> tuple[str, str]:
    """(bucket, prefix) of an ``s3://bucket/prefix`` or ``s3+ddb://bucket/prefix?…`` home."""
    parts = urlsplit(home)
    return parts.netloc, parts.path.strip("/")


def lease_key(home: str, namespace: str) -> str:
    """The key of namespace ``namespace``'s lease object in the bucket of ``home``."""
    _, prefix = bucket_and_prefix(home)
    return f"{prefix}/_leases/{namespace}.json" if prefix else f"_leases/{namespace}.json"


def bucket_client(endpoint: str | None, region: str | None, environ: Mapping[str, str] | None = None) -> Any:
    """A botocore S3 client for the lease, with the same endpoint and region as the store.

    Credentials come from botocore's chain; with an endpoint set (an S3-compatible store, or
    AWS_ENDPOINT_URL), only from what needs no other server (variables, profile files, a
    credential process): no instance metadata, STS or SSO, so the server talks to that endpoint
    alone. Raises StoreError (one line) when botocore is missing, or there is no region or no
    credentials.
    """
    try:
        import botocore.config
        import botocore.session
    except ImportError:
        raise ConfigurationError(
            f"a bucket home (s3://…) needs botocore for its write lease: {install_extra('s3')}"
        ) from None
    env = os.environ if environ is None else environ
    session = botocore.session.get_session()
    if endpoint:
        resolver = session.get_component("credential_provider")
        for remote in ("iam-role", "container-role", "assume-role", "assume-role-with-web-identity", "sso"):
            resolver.remove(remote)
    region = (
        region
        or env.get("AWS_REGION")
        or env.get("AWS_DEFAULT_REGION")
        or session.get_config_variable("region")
    )
    if not region:
        raise StoreError(
            "the bucket home has no region: set AWS_REGION (or MEMTREE_S3_REGION); "
            "S3-compatible stores need one too (any, e.g. us-east-1)"
        )
    if session.get_credentials() is None:
        where = f"the endpoint {endpoint}" if endpoint else "AWS"
        raise StoreError(
            f"no credentials for the bucket home on {where}: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
        )
    config = botocore.config.Config(
        connect_timeout=5, read_timeout=10, retries={"max_attempts": 3, "mode": "standard"}
    )
    client = session.create_client("s3", region_name=region, endpoint_url=endpoint or None, config=config)
    _sessions[client] = session  # its credentials, through botocore's public API
    return client


_sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def static_credentials(client: Any) -> dict[str, str]:
    """The client's credentials as LanceDB storage options (for a home on an explicit endpoint,
    where LanceDB must not look for them elsewhere), from the session that made the client."""
    found = _sessions[client].get_credentials().get_frozen_credentials()
    options = {"aws_access_key_id": found.access_key, "aws_secret_access_key": found.secret_key}
    if found.token:
        options["aws_session_token"] = found.token
    return options


@dataclass(slots=True)
class Held:
    """The lease as this server holds it: its generation, the ETag of the state written last and
    until when (monotonic clock) this server counts it valid."""

    generation: int
    etag: str
    valid_until: float
    renewals: int = 0


class BucketLease:
    """One namespace's lease object, as one server (process) holds or waits for it. Thread-safe.

    Use :meth:`acquire` / :meth:`done` around each write (under the machine's file lock, so one
    thread of the machine at a time), :meth:`check` before and :meth:`confirm` after each commit,
    :meth:`close` when the server stops.
    """

    def __init__(self, client: Any, bucket: str, key: str, namespace: str, *, seconds: float = LEASE_SECONDS):
        self.client = client
        self.bucket = bucket
        self.key = key
        self.namespace = namespace
        self.seconds = seconds
        self.linger = min(LINGER_SECONDS, seconds / 4)
        self.holder = f"{_command()} on {socket.gethostname()} (pid {os.getpid()}, {uuid.uuid4().hex[:8]})"
        self._state = threading.Condition()
        self._held: Held | None = None
        self._users = 0
        self._last_used = 0.0
        self._released_at = -1e9  # when this server last released the lease for another
        self._seen_generation = 0  # the highest generation of the lease this server has read or held
        self.wanted_key = key.removesuffix(".json") + ".wanted.json"
        self._wanted: str | None = None  # the ETag of the wanted object the holder saw last
        self._wanted_at = 0.0  # when it looked
        self._keeper: threading.Thread | None = None
        self._closed = False
        self._suspended = False  # see suspend()

    # -- around a write ----------------------------------------------------------------------

    def acquire(self, timeout: float) -> bool:
        """Hold the lease for a write, waiting up to ``timeout`` seconds; True when it was taken over
        from a holder that let it expire (the caller must fence the table before writing).

        Raises LockTimeout naming the holder when it is still held after ``timeout``, StoreError
        when the bucket cannot be reached.
        """
        with self._state:
            self._users += 1
            try:
                if self._held is not None and self._still_mine():
                    return False
                taken_over = self._take(timeout)
            except BaseException:
                self._users -= 1
                raise
            if self._keeper is None or not self._keeper.is_alive():
                self._keeper = threading.Thread(target=self._keep, name="memtree-lease", daemon=True)
                self._keeper.start()
            return taken_over

    def done(self) -> None:
        """The write is over: the lease stays for the next one, unless held long enough already."""
        with self._state:
            self._users -= 1
            self._last_used = time.monotonic()
            due = self._last_used - self._wanted_at >= HOLD_AT_MOST
            if not self._users and self._held is not None and due:
                (wanted, etag), self._wanted_at = self._wanted_state(), self._last_used
                if etag != self._wanted and wanted.get("by") not in (None, self.holder):
                    self._release(successor=wanted["by"])
                    self._released_at = time.monotonic()
            self._state.notify_all()

    def check(self) -> None:
        """Before a commit: raise LeaseLost unless this server still holds the lease, renewed first
        when half its validity is gone."""
        with self._state:
            held = self._held
            if held is None:
                raise LeaseLost(self._lost_message())
            if held.valid_until - time.monotonic() < self.seconds * VALID_FRACTION / 2:
                self._renew(held)
                if self._held is None:
                    raise LeaseLost(self._lost_message())

    def confirm(self) -> None:
        """After a commit: raise LeaseLost when it may have ended after another server took the
        lease over (then readers ignore it). Costs nothing when it ended within the lease."""
        with self._state:
            held = self._held
            if held is not None and time.monotonic() < held.valid_until:
                return
            if held is not None:
                self._renew(held)  # succeeds only if the object is still the state this server wrote
            if self._held is None:
                raise LeaseLost(self._lost_message())

    def close(self) -> None:
        """Release the lease if this server holds it, and stop renewing it."""
        with self._state:
            self._closed = True
            if self._held is not None:
                self._release()
            self._state.notify_all()

    # -- the object ----------------------------------------------------------------------------

    def read(self) -> tuple[dict[str, Any] | None, str | None]:
        """The lease object's state and ETag; (None, None) when there is none."""
        try:
            found = self.client.get_object(Bucket=self.bucket, Key=self.key)
            body = found["Body"].read()
        except Exception as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                return None, None
            raise self._unreachable(exc) from exc
        try:
            state = json.loads(body)
        except (ValueError, RecursionError):
            state = {}
        if not isinstance(state, dict) or not _generation_ok(state.get("generation", 0)):
            state = {}  # garbage (bytes, or a generation that is no count): as if nobody held it
        self._seen_generation = max(self._seen_generation, int(state.get("generation", 0)))
        return state, str(found["ETag"])

    def _wanted_state(self) -> tuple[dict[str, Any], str | None]:
        """The wanted object's state and ETag ({}, None: there is none, or it cannot be read)."""
        try:
            found = self.client.get_object(Bucket=self.bucket, Key=self.wanted_key)
            state = json.loads(found["Body"].read())
            return (state if isinstance(state, dict) else {}), str(found["ETag"])
        except Exception:  # missing, unreadable or unreachable: nobody is known to want the lease
            return {}, None

    def _want(self, waited: float, seen: list[Any]) -> None:
        """Say that this server, waiting for ``waited`` seconds, wants the lease, unless the wanted
        object names a server that has waited longer and still says so (``seen``: the ETag this
        server last saw there and since when, on its clock)."""
        state, etag = self._wanted_state()
        now = time.monotonic()
        if etag != seen[0]:
            seen[:] = [etag, now]
        other = state.get("by") not in (None, self.holder)
        if other and float(state.get("waited", 0)) > waited and now - seen[1] < 3 * WANT_EVERY:
            return
        try:
            body = {"by": self.holder, "waited": waited, "at": uuid.uuid4().hex}  # a fresh ETag each time
            self.client.put_object(Bucket=self.bucket, Key=self.wanted_key, Body=json.dumps(body).encode())
        except Exception as exc:  # the holder then keeps the lease until idle: slower, not wrong
            log.debug("could not say the lease of namespace %s is wanted: %s", self.namespace, exc)

    def _wanted_now(self) -> str | None:
        """Just after taking the lease: the wanted object's ETag, from which a later change says
        another server wants the lease (if it named this server, it is cleared first)."""
        state, etag = self._wanted_state()
        if state.get("by") == self.holder:
            try:
                cleared = json.dumps({"by": None, "at": uuid.uuid4().hex}).encode()
                etag = str(
                    self.client.put_object(Bucket=self.bucket, Key=self.wanted_key, Body=cleared)["ETag"]
                )
            except Exception:  # the holder may then release once for nobody
                pass
        return etag

    def _write(self, state: dict[str, Any], etag: str | None) -> str | None:
        """Write ``state`` if the object is still at ``etag`` (None: if there is none); its new
        ETag, or None when someone else wrote first."""
        condition = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}
        try:
            written = self.client.put_object(
                Bucket=self.bucket,
                Key=self.key,
                Body=json.dumps(state).encode(),
                ContentType="application/json",
                **condition,
            )
        except Exception as exc:
            if _code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                return None
            if etag is not None and _code(exc) in ("NoSuchKey", "404"):
                return None  # the object this server held vanished under it: a lost lease, not an outage
            raise self._unreachable(exc) from exc
        return str(written["ETag"])

    def _take(self, timeout: float) -> bool:
        """Take the lease (the state lock held); see :meth:`acquire`."""
        give_up = time.monotonic() + timeout
        started = time.monotonic()
        watched: tuple[str | None, float] = (None, 0.0)  # an ETag seen, and since when
        wanted = -1e9  # when this server last said it wants the lease
        seen: list[Any] = [None, 0.0]  # the wanted object's ETag this server saw, and since when
        while True:
            now = time.monotonic()
            wait_handoff = self._released_at + HANDOFF_SECONDS - now
            if wait_handoff > 0:
                self._state.wait(wait_handoff)
                continue
            state, etag = self.read()
            taken_over = False
            if state is not None and state.get("holder") != self.holder and etag != watched[0]:
                watched = (etag, now)
            if state is not None and not state.get("released") and state.get("holder") != self.holder:
                taken_over = now - watched[1] >= max(self.seconds, _length(state.get("seconds")))
            # Released for another server: it has HANDOFF_SECONDS to take it first.
            handed = state is not None and state.get("next") not in (None, self.holder)
            free = state is None or (
                state.get("released") and not (handed and now - watched[1] < HANDOFF_SECONDS)
            )
            if state is None:
                # No lease: never made, or it vanished (deleted by an operator, a lifecycle rule, a
                # sync) under a holder that may still be writing; a server cannot tell which, so it
                # takes it as a takeover, fencing the table (a row) before it writes.
                taken_over = True
            if free or (state or {}).get("holder") == self.holder or taken_over:
                generation = max(int((state or {}).get("generation", 0)), self._seen_generation) + 1
                sent = time.monotonic()
                written = self._write(self._state_of(generation, 0, released=False), etag)
                if written is not None:
                    self._seen_generation = generation
                    self._held = Held(generation, written, sent + self.seconds * VALID_FRACTION)
                    self._wanted_at = sent
                    self._wanted = self._wanted_now()
                    if taken_over and state is None:
                        log.info("took the lease of namespace %s (none was in the bucket)", self.namespace)
                    elif taken_over and state is not None:
                        log.warning(
                            "took over the lease of namespace %s from %s, silent for %.1f s",
                            self.namespace,
                            state.get("holder", "?"),
                            now - watched[1],
                        )
                    return taken_over
                continue  # someone else wrote first: look again at once
            if time.monotonic() >= give_up:
                holder = (state or {}).get("holder", "another server")
                raise LockTimeout(
                    f"namespace '{self.namespace}' is being written by {holder} "
                    f"(its lease in the bucket); gave up after {timeout:.2g} s (MEMTREE_LOCK_TIMEOUT). "
                    "Try again later."
                )
            if now - wanted >= WANT_EVERY:
                self._want(now - started, seen)
                wanted = now
            self._state.wait(POLL_SECONDS)

    def _still_mine(self) -> bool:
        """Whether the lease this server keeps is still its own (renewed when it ran out while
        kept: nobody took it over if its ETag is unchanged)."""
        held = self._held
        assert held is not None
        if time.monotonic() < held.valid_until:
            return True
        self._renew(held)
        return self._held is not None

    def _renew(self, held: Held) -> None:
        """Renew ``held``; on 412 (someone took it over) the lease is no longer held."""
        sent = time.monotonic()
        written = self._write(self._state_of(held.generation, held.renewals + 1, released=False), held.etag)
        if written is None:
            log.warning("lost the lease of namespace %s (generation %d)", self.namespace, held.generation)
            self._held = None
            return
        held.etag, held.valid_until, held.renewals = (
            written,
            sent + self.seconds * VALID_FRACTION,
            held.renewals + 1,
        )

    def _release(self, successor: str | None = None) -> None:
        """Release the lease; ``successor``: the server that has waited longest, which the others
        leave a moment to take it."""
        held, self._held = self._held, None
        assert held is not None
        state = self._state_of(held.generation, held.renewals + 1, released=True)
        try:
            self._write({**state, "next": successor}, held.etag)
        except StoreError as exc:  # it expires on its own
            log.warning("could not release the lease of namespace %s: %s", self.namespace, exc)

    def _state_of(self, generation: int, renewals: int, *, released: bool) -> dict[str, Any]:
        return {
            "holder": self.holder,
            "generation": generation,
            "renewals": renewals,
            "released": released,
            "seconds": self.seconds,
            "written": time.time(),  # for people reading the object; nobody trusts it
        }

    def _keep(self) -> None:
        """Renew the lease while a write holds it; release it once idle for :attr:`linger`."""
        with self._state:
            while self._held is not None and not self._closed and not self._suspended:
                now = time.monotonic()
                if not self._users and now - self._last_used >= self.linger:
                    self._release()
                    break
                if self._users and self._held.valid_until - now < self.seconds * VALID_FRACTION * 2 / 3:
                    try:
                        self._renew(self._held)
                    except StoreError as exc:  # the commit's own check decides
                        log.warning("could not renew the lease of namespace %s: %s", self.namespace, exc)
                    continue
                self._state.wait(min(self.linger / 2, self.seconds / 6))

    def suspend(self) -> None:
        """Stop renewing (and releasing) the lease, as a process that was stopped (SIGSTOP, a
        paused VM) or died would: the lease stays in the bucket until it runs out, and others may
        then take it over. For fault drills (the tests, ``bench/bucket_soak.py``); :meth:`resume`
        lets the next write renew it again."""
        with self._state:
            self._suspended = True
            self._state.notify_all()

    def resume(self) -> None:
        """Undo :meth:`suspend`: the next write takes the lease (again) and renews it."""
        with self._state:
            self._suspended = False

    def _lost_message(self) -> str:
        return (
            f"this server lost the write lease of namespace '{self.namespace}' (another server took it "
            "over, or it was deleted from the bucket); nothing was acknowledged. "
            "Try again: an exact duplicate is recognised."
        )

    def _unreachable(self, exc: Exception) -> StoreError:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        return StoreError(f"cannot reach the lease of namespace '{self.namespace}' in the bucket ({reason})")


def _length(value: object) -> float:
    """A lease's recorded length in seconds (0 when it is not a length MEMTREE_LEASE_SECONDS allows)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.5 <= value <= 600:
        return float(value)
    return 0.0


def _generation_ok(value: object) -> bool:
    """Whether a lease's ``generation`` is a count (not text, null, a fraction or 1e400)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**62


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _command() -> str:
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:2]]) if sys.argv and sys.argv[0] else "python"

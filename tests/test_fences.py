"""What a writer that lost its bucket lease appends does not count (store/fences.py), and a bucket home
without what it needs says so in one line, without reaching anything but its endpoint."""

from __future__ import annotations

import socket
from pathlib import Path

import pyarrow as pa
import pytest

from memtree_mcp.config import Settings
from memtree_mcp.errors import MemtreeError
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.fences import FENCE, unfenced

pytest.importorskip("botocore")


def rows(*pairs: tuple[str, int]) -> pa.Table:
    return pa.table({"id": [p[0] for p in pairs], "rev": pa.array([p[1] for p in pairs], pa.int64())})


def test_rows_after_a_fence_that_are_no_newer_than_it_do_not_count() -> None:
    table = rows(
        ("a", 0),
        ("b", 1),
        ("late", 2),  # landed before the fence: the new holder read it, it counts
        (FENCE + "1", 2),
        ("stale", 2),  # the stalled writer's append, after the fence
        ("c", 3),
        ("stale2", 1),
        (FENCE + "2", 5),
        ("d", 6),
        ("stale3", 5),
    )
    assert unfenced(table).column("id").to_pylist() == ["a", "b", "late", "c", "d"]
    plain = rows(("a", 0), ("b", 2), ("c", 1))  # no fence: read as it is (tables written before fences)
    assert unfenced(plain) is plain


@pytest.fixture
def bare_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS credentials, region, profile or endpoint anywhere this process could find them."""
    for key in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def one_line_error(tmp_path: Path, embedder: object) -> str:
    settings = Settings(
        home="s3://team-bucket/memtree", namespace="default", lock_dir=str(tmp_path / "locks")
    )
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        with pytest.raises(MemtreeError) as raised:
            service.look_up(RecallRequest("anything", k=1))
    finally:
        service.close()
    message = str(raised.value)
    assert "\n" not in message and len(message) < 300
    return message


def test_a_bucket_home_without_a_region_says_which_variable_to_set(
    bare_aws: None, tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    assert "set AWS_REGION" in one_line_error(tmp_path, embedder)


def test_a_bucket_home_without_credentials_asks_only_its_endpoint(
    bare_aws: None, tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Instance metadata allowed, and pointed at a socket of ours: with an endpoint set, nothing
    # may look there (or anywhere but the endpoint) for credentials.
    metadata = socket.socket()
    metadata.bind(("127.0.0.1", 0))
    metadata.listen(8)
    metadata.setblocking(False)
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{metadata.getsockname()[1]}/")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    try:
        message = one_line_error(tmp_path, embedder)
        with pytest.raises(BlockingIOError):
            metadata.accept()  # nobody called
    finally:
        metadata.close()
    assert "no credentials" in message and "AWS_ACCESS_KEY_ID" in message and "127.0.0.1:9" in message

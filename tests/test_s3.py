"""A memory on S3-compatible storage: MEMTREE_HOME=s3://bucket/prefix, against moto's server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memtree_mcp.config import Settings
from memtree_mcp.errors import StoreError
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.lance import object_store_options
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants, memory_state

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

BUCKET = "team-memory"
FACTS = [
    "Biscuit is my golden retriever; I adopted him last spring.",
    "Our API is deployed with Kubernetes on AWS in eu-west-1.",
    "The staging database is Postgres 16 on port 5433.",
    "Biscuit had his vaccinations at the vet on Tuesday.",
    "We switched the CI from Jenkins to GitHub Actions last year.",
]


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An S3-compatible server on 127.0.0.1 (a free port) with one empty bucket, and AWS_* set for it."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint,
        }.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.stop()


def s3_settings(tmp_path: Path) -> Settings:
    return Settings(home=f"s3://{BUCKET}/memtree", namespace="default", lock_dir=str(tmp_path / "locks"))


def test_a_memory_on_s3_is_remembered_recalled_and_reopened_identical(
    s3_endpoint: str,
    tmp_path: Path,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    first = MemoryService(s3_settings(tmp_path), embedder=embedder)
    for i, fact in enumerate(FACTS):
        first.remember(fact, session=f"s{i % 2}", timestamp=f"2024-05-{i + 1:02d}T10:00:00Z")
    assert first.remember(FACTS[0]).deduplicated
    hits = first.look_up(RecallRequest("When did my dog see the vet?", k=3)).hits
    assert hits[0].text == FACTS[3]
    before = first.memory()
    assert before is not None
    expected = memory_state(before)
    first.close()

    reopened = MemoryService(s3_settings(tmp_path), embedder=embedder)
    memory = reopened.memory()
    assert memory is not None and memory_state(memory) == expected
    assert_semantic_invariants(memory.semantic)
    assert_temporal_invariants(memory.temporal)
    assert [h.id for h in reopened.look_up(RecallRequest("When did my dog see the vet?", k=3)).hits] == [
        h.id for h in hits
    ]
    # The table lives in the bucket; the writers' lock in the local lock directory, nowhere else.
    keys = [
        o["Key"]
        for o in boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").list_objects_v2(
            Bucket=BUCKET
        )["Contents"]
    ]
    assert any(k.startswith("memtree/default.lance/") for k in keys)
    assert not any("lock" in k for k in keys)
    assert list((tmp_path / "locks").rglob("default.lock"))


def test_a_second_server_on_the_bucket_sees_what_the_first_wrote(
    s3_endpoint: str,
    tmp_path: Path,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    writer = MemoryService(s3_settings(tmp_path), embedder=embedder)
    reader = MemoryService(s3_settings(tmp_path / "elsewhere"), embedder=embedder)
    writer.remember(FACTS[2])
    assert [
        h.text for h in reader.look_up(RecallRequest("which port is staging Postgres on?", k=1)).hits
    ] == [FACTS[2]]
    writer.remember(FACTS[4])
    assert FACTS[4] in [h.text for h in reader.look_up(RecallRequest("CI GitHub Actions", k=2)).hits]
    listed = writer.forget(query="GitHub Actions Jenkins").candidates
    forgotten = writer.forget(ids=[c.id for c in listed])
    assert forgotten.deleted
    assert FACTS[4] not in [h.text for h in reader.look_up(RecallRequest("CI GitHub Actions", k=5)).hits]


def test_plain_http_is_allowed_on_loopback_only_unless_asked_for() -> None:
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-1"}
    assert object_store_options("/some/dir", environ=env) == {}
    local = object_store_options("s3://b/p", environ={**env, "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"})
    assert local["allow_http"] == "true" and local["aws_endpoint"] == "http://127.0.0.1:9000"
    assert local["aws_region"] == "eu-west-1" and local["aws_access_key_id"] == "k"
    with pytest.raises(StoreError, match="MEMTREE_S3_ALLOW_HTTP"):
        object_store_options("s3://b/p", environ={**env, "AWS_ENDPOINT_URL": "http://minio.lan:9000"})
    remote = object_store_options("s3://b/p", endpoint="http://minio.lan:9000", allow_http=True, environ=env)
    assert remote["allow_http"] == "true"
    secure = object_store_options("s3://b/p", endpoint="https://s3.example.com", region="auto", environ={})
    assert secure == {"aws_endpoint": "https://s3.example.com", "aws_region": "auto"}


def test_the_dynamodb_commit_store_of_lancedb_works_through_the_service(
    s3_endpoint: str,
    tmp_path: Path,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=s3_endpoint, region_name="us-east-1")
    dynamodb.create_table(
        TableName="memtree-commits",
        KeySchema=[
            {"AttributeName": "base_uri", "KeyType": "HASH"},
            {"AttributeName": "version", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "base_uri", "AttributeType": "S"},
            {"AttributeName": "version", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    # A prefix of its own: the other tests' memories stay in the bucket's memtree/.
    home = f"s3+ddb://{BUCKET}/memtree-ddb?ddbTableName=memtree-commits"
    settings = Settings(home=home, namespace="default", lock_dir=str(tmp_path / "locks"))
    first = MemoryService(settings, embedder=embedder)
    for fact in FACTS[:3]:
        first.remember(fact)
    first.close()
    again = MemoryService(settings, embedder=embedder)
    assert [h.text for h in again.look_up(RecallRequest("golden retriever", k=1)).hits] == [FACTS[0]]
    memory = again.memory()
    assert memory is not None and len(memory.leaves) == 3
    assert dynamodb.scan(TableName="memtree-commits")["Count"] >= 3  # one entry per committed version


def test_concurrent_lancedb_appends_to_one_s3_table_are_all_kept(s3_endpoint: str) -> None:
    """What docs/deploy.md reports of LanceDB's own commits on this S3 server (not of memtree's trees)."""
    import threading

    import lancedb
    import pyarrow as pa

    options = object_store_options(f"s3://{BUCKET}/raw")
    lancedb.connect(f"s3://{BUCKET}/raw", storage_options=options).create_table(
        "race", data=pa.table({"x": [0]})
    )
    tables = [
        lancedb.connect(f"s3://{BUCKET}/raw", storage_options=options).open_table("race") for _ in range(2)
    ]
    errors: list[BaseException] = []

    def append(writer: int) -> None:
        try:
            for i in range(10):
                tables[writer].add(pa.table({"x": [100 * (writer + 1) + i]}))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    fresh = lancedb.connect(f"s3://{BUCKET}/raw", storage_options=options).open_table("race")
    assert fresh.count_rows() == 21

"""Secrets never stored: every way a memory comes in redacts them before anything is written.

The fake secrets (``fixtures/secrets_corpus.jsonl``, 25 kinds in sentences a developer pastes) and
the ordinary engineering memories (``fixtures/engineering_memories.jsonl``: hashes, UUIDs, ids,
versions, ports, plain URLs, the words password and token in their ordinary senses) were written
apart from the detector. After remembering the secrets over MCP, through Claude Code's hook and
through every import source, no file under the home and no export holds any of them.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.secrets.detection import find_secrets, redacted
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = [json.loads(line) for line in (FIXTURES / "secrets_corpus.jsonl").read_text().splitlines()]
ENGINEERING = [
    json.loads(line)["content"] for line in (FIXTURES / "engineering_memories.jsonl").read_text().splitlines()
]
ROOT = Path(__file__).parent.parent


# A secret shorter than this is looked for whole; a longer one by its pieces of this length.
PIECE = 12


def leaks(folder: Path, secrets: list[str]) -> list[tuple[str, str]]:
    """(file, secret) for every file under ``folder`` that holds one of ``secrets``, whole or a
    12-character piece of it (the bytes, whatever the format).

    A LanceDB data file compresses its strings, and the symbol table of that compression can spell
    a short word by chance ("passwor" beside "anged th" spells "orange"), while a secret stored in
    it need not appear as its bytes at all. So a secret shorter than a piece is looked for in those
    files' decoded rows (every version of each table) rather than in their bytes."""
    pieces = {
        secret: {secret[i : i + PIECE] for i in range(0, max(1, len(secret) - PIECE + 1), 6)}
        for secret in secrets
    }
    short = [secret for secret in secrets if len(secret) < PIECE]
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            compressed = path.suffix == ".lance" and path.parent.name == "data"
            for secret, parts in pieces.items():
                if compressed and secret in short:
                    continue
                if any(part.encode() in data for part in parts):
                    found.append((str(path.relative_to(folder)), secret[:16]))
    if short:
        found += decoded_leaks(folder, short)
    return found


def decoded_leaks(folder: Path, secrets: list[str]) -> list[tuple[str, str]]:
    """(table, secret) for every LanceDB table under ``folder`` whose rows, at any of its versions,
    hold one of ``secrets`` in a string column (a list of strings included)."""
    import lancedb
    import pyarrow as pa

    found = []
    for path in sorted(folder.rglob("*.lance")):
        if not path.is_dir() or not (path / "_versions").is_dir():
            continue
        table = lancedb.connect(str(path.parent)).open_table(path.name.removesuffix(".lance"))
        texts: list[str] = []
        for version in table.list_versions():
            table.checkout(version["version"])
            rows = table.to_arrow()
            for field in rows.schema:
                kind = field.type.value_type if pa.types.is_list(field.type) else field.type
                if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                    column = rows.column(field.name)
                    values = column.combine_chunks().flatten() if pa.types.is_list(field.type) else column
                    texts.extend(value for value in values.to_pylist() if value)
        held = "\n".join(texts)
        found += [(str(path.relative_to(folder)), secret[:16]) for secret in secrets if secret in held]
    return found


def test_the_corpus_is_broad_enough() -> None:
    assert len(CORPUS) >= 60 and len({entry["kind"] for entry in CORPUS}) >= 15
    assert len(ENGINEERING) == 200


@pytest.mark.parametrize("entry", CORPUS, ids=lambda entry: entry["kind"])
def test_each_secret_becomes_a_marker_and_the_sentence_stays(entry: dict[str, str]) -> None:
    sentence, secret = entry["sentence"], entry["secret"]
    out = redacted(sentence)
    assert secret not in out and "[redacted: " in out
    # The prose stays: every word without a digit, outside the secret, is still there (a marker
    # may take a neighbouring identifier with it, such as Twilio's account SID).
    before, _, after = sentence.partition(secret)
    words = [w for w in (before + " " + after).split() if w.isalpha()]
    assert [w for w in words if w not in out] == []


def test_ordinary_engineering_text_is_left_as_it_is() -> None:
    flagged = [(text, text[f.start : f.end]) for text in ENGINEERING for f in find_secrets(text)]
    assert flagged == []


def test_a_url_keeps_its_user_host_and_port_and_loses_only_its_password() -> None:
    assert redacted("postgres://app:Zx9Qw8Er7Ty6@db.internal:5432/app") == (
        "postgres://app:[redacted: password]@db.internal:5432/app"
    )


@pytest.mark.anyio
async def test_remember_over_mcp_stores_no_secret_and_says_what_it_redacted(
    tmp_path: Path, embedder: object
) -> None:
    home = tmp_path / "store"
    service = MemoryService(Settings(home=str(home), namespace="mcp"), embedder=embedder)  # type: ignore[arg-type]
    try:
        async with Client(build_server(service)) as client:
            for entry in CORPUS:
                result = await client.call_tool("remember", {"content": entry["sentence"]})
                assert not result.is_error
                told = result.content[0].text  # type: ignore[union-attr]
                assert "redacted before storing" in told and entry["secret"] not in told
                assert " redacted before storing (" in told  # the kinds, in the text the model reads
            recalled = await client.call_tool("recall", {"query": CORPUS[0]["sentence"][:80]})
            assert "[redacted: " in recalled.content[0].text  # type: ignore[union-attr]
        exported = tmp_path / "export.jsonl"
        exported.write_text("".join(json.dumps(r) + "\n" for r in service.export_memories()))
    finally:
        service.close()
    assert leaks(home, [entry["secret"] for entry in CORPUS]) == []
    assert leaks(tmp_path, [entry["secret"] for entry in CORPUS]) == []


def write_sources(folder: Path) -> dict[str, list[str]]:
    """The corpus in every import source's format: the ``import`` arguments of each."""
    sentences = [entry["sentence"] for entry in CORPUS]
    folder.mkdir()
    (folder / "plain.jsonl").write_text("".join(json.dumps({"content": s}) + "\n" for s in sentences))
    graph = [
        {"type": "entity", "name": f"Thing {i}", "entityType": "note", "observations": [s]}
        for i, s in enumerate(sentences)
    ]
    (folder / "memory.jsonl").write_text("".join(json.dumps(g) + "\n" for g in graph))
    notes = folder / "notes"
    notes.mkdir()
    for number, sentence in enumerate(sentences):
        (notes / f"note-{number}.md").write_text(
            f"---\ndate: 2026-03-{1 + number % 28:02d}\n---\n{sentence}\n"
        )
    (folder / "rows.json").write_text(json.dumps([{"text": s} for s in sentences]))
    with (folder / "rows.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["text"])
        writer.writerows([s] for s in sentences)
    return {
        "jsonl": [str(folder / "plain.jsonl")],
        "mcp-memory": ["--from", "mcp-memory", str(folder / "memory.jsonl")],
        "markdown": ["--from", "markdown", str(notes)],
        "json": ["--from", "json", str(folder / "rows.json"), "--map", "content=text"],
        "csv": ["--from", "csv", str(folder / "rows.csv"), "--map", "content=text"],
    }


def test_every_import_source_and_every_export_hold_no_secret(empty_home: Path, tmp_path: Path) -> None:
    sources = write_sources(tmp_path / "sources")
    for name, argv in sources.items():
        assert main(["--namespace", name.replace("-", ""), "import", *argv]) == 0, name
    exports = tmp_path / "exports"
    exports.mkdir()
    for name in sources:
        namespace = name.replace("-", "")
        assert main(["--namespace", namespace, "export", str(exports / f"{namespace}.jsonl")]) == 0
        assert (
            main(["--namespace", namespace, "export", "--format", "markdown", str(exports / namespace)]) == 0
        )
        held = [json.loads(line) for line in (exports / f"{namespace}.jsonl").read_text().splitlines()]
        assert len(held) >= len(CORPUS) - 2 and all("[redacted: " in r["content"] for r in held[:5])
    secrets = [entry["secret"] for entry in CORPUS]
    assert leaks(empty_home, secrets) == []
    assert leaks(exports, secrets) == []


def test_the_hook_redacts_a_turn_before_it_is_queued(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MEMTREE_")}
    env |= {"MEMTREE_HOME": str(tmp_path / "store"), "PYTHONPATH": str(ROOT)}
    for number in range(0, len(CORPUS), 15):
        part = CORPUS[number : number + 15]
        transcript = tmp_path / f"t{number}.jsonl"
        lines = [
            {"type": "user", "message": {"content": "\n".join(entry["sentence"] for entry in part)}},
            {"type": "assistant", "message": {"content": [{"type": "text", "text": "Noted."}]}},
        ]
        transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
        event = {
            "session_id": "s",
            "transcript_path": str(transcript),
            "cwd": "/tmp",
            "hook_event_name": "Stop",
        }
        done = subprocess.run(
            [sys.executable, "-m", "memtree_mcp", "hook", "--queue-only"],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        transcript.unlink()
    secrets = [entry["secret"] for entry in CORPUS]
    assert leaks(tmp_path / "store", secrets) == []  # the queue holds the turns, redacted
    drained = subprocess.run(
        [sys.executable, "-m", "memtree_mcp", "hook", "--drain"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert drained.returncode == 0, drained.stderr
    assert leaks(tmp_path / "store", secrets) == []


def test_refuse_stores_nothing_and_names_the_kind_and_place(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMTREE_SECRETS", "refuse")
    assert main(["remember", "Plain first memory."]) == 0
    capsys.readouterr()
    assert main(["remember", "Deploy key:\nuse sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + " for billing"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stripe-key at line 2, column 5" in err and "4eC39H" not in err
    service = MemoryService(Settings(home=str(empty_home)))
    try:
        assert [leaf.text for leaf in service.memory().leaves.values()] == ["Plain first memory."]
    finally:
        service.close()


def test_keep_stores_the_secret_and_says_so_in_the_log(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MEMTREE_SECRETS", "keep")
    secret = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
    with caplog.at_level("WARNING"):
        assert main(["remember", f"the CI token is {secret}"]) == 0
    assert any("MEMTREE_SECRETS=keep" in record.getMessage() for record in caplog.records)
    assert leaks(empty_home, [secret]) != []


def test_doctor_finds_secrets_in_an_old_store_and_redact_leaves_none_on_disk(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMTREE_SECRETS", "keep")  # a store written before redaction
    for entry in CORPUS[:12]:
        assert main(["remember", entry["sentence"]]) == 0
    assert main(["remember", "An ordinary memory about the billing deploy."]) == 0
    monkeypatch.delenv("MEMTREE_SECRETS")
    capsys.readouterr()
    assert main(["doctor"]) == 1
    told = capsys.readouterr().out
    assert "12 memories hold secrets; doctor --redact rewrites them" in told
    assert all(entry["secret"] not in told for entry in CORPUS)
    ids = [line.split("[")[1].split("]")[0] for line in told.splitlines() if line.startswith("  secrets [")]
    assert main(["doctor", "--redact"]) == 0
    capsys.readouterr()
    assert leaks(empty_home, [entry["secret"] for entry in CORPUS[:12]]) == []
    assert main(["doctor"]) == 0
    service = MemoryService(Settings(home=str(empty_home)))
    try:
        memory = service.memory()
        assert len(memory.leaves) == 13 and set(ids) <= set(memory.leaves)
        assert all("[redacted: " in memory.leaves[i].text for i in ids)
    finally:
        service.close()


def test_a_marker_is_no_subject_of_the_labels(service: MemoryService) -> None:
    service.remember("The billing service listens on port 8443.")
    service.remember("Deploy with postgres://billing:Zx9Qw8Er7Ty6@db.internal:5432/billing from CI.")
    stored = service.remember("The staging database runs Postgres 16.")
    assert "redacted" not in stored.path[-1].label
    memory = service.memory()
    assert memory is not None
    labels = [b.label for tree in (memory.semantic, memory.temporal) for b in tree.branches.values()]
    assert labels and not any("redacted" in (label or "") for label in labels)


def test_the_kept_plugin_patterns_are_the_installed_detect_secrets_own() -> None:
    # memtree_mcp/secrets/plugin_patterns.json spares each process detect-secrets' import (and
    # requests'); after an upgrade of detect-secrets: python -m memtree_mcp.secrets.detection
    from memtree_mcp.secrets import detection

    kept = json.loads(Path(detection.__file__).with_name(detection.PATTERNS_FILE).read_text())
    installed = detection.installed_version()
    if kept["detect_secrets"] != installed:  # then the plugins are read (the test below)
        pytest.skip(f"kept for {kept['detect_secrets']}, detect-secrets {installed} installed")
    assert [(kind, [tuple(p) for p in patterns]) for kind, patterns in kept["patterns"]] == [
        (kind, list(patterns)) for kind, patterns in detection.plugin_patterns()
    ]


def test_finding_a_key_in_a_fresh_process_loads_neither_detect_secrets_nor_requests() -> None:
    # What a hook's Stop pays before its turn is queued: the detector, not a web client.
    code = (
        "import sys; from memtree_mcp.secrets.detection import find_secrets; "
        "kinds = [f.kind for f in find_secrets('key AKIAIOSFODNN7EXAMPLE')]; "
        "print(kinds, 'detect_secrets' in sys.modules, 'requests' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == "['aws-access-key'] False False", run.stdout + run.stderr


def test_a_detect_secrets_of_another_version_is_read_from_its_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memtree_mcp.secrets import detection

    text = "key AKIAIOSFODNN7EXAMPLE, ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8, xoxb-1234567890-abcdefgh"
    kept = [(f.kind, f.start, f.end) for f in detection.find_secrets(text)]
    monkeypatch.setattr(detection, "installed_version", lambda: "0.0.0")
    detection._detectors.cache_clear()
    try:
        assert detection._kept_patterns() is None
        assert [(f.kind, f.start, f.end) for f in detection.find_secrets(text)] == kept
    finally:
        detection._detectors.cache_clear()

"""Secrets stored nowhere: not in a memory's names, not in an error message, not behind an invisible
character, and not when a person chose them (issue 47).

Every field of a memory that is stored (content, role, tags, session) passes one door
(``secrets/detection.redact_fields``): a key given as a tag, a session id or a role, over MCP or from
the CLI, as an imported entity's or relation's name, a mapped column, a note's file name or
front-matter tag, or as the hook's session id, is found in no file under the home and in no
export, and ``doctor --redact`` mends a store written before. The human-chosen passwords of
``fixtures/passwords_dev.jsonl`` were written to tune the detector; those of
``fixtures/passwords_dev2.jsonl`` and the lines of ``fixtures/passwords_not_secrets.jsonl`` were
written by another hand apart from the detector and measured once at 57 of 77 before the detector
was tuned on them: a second dev set now, no held-out measure. ``fixtures/passwords_dev3.jsonl``
and ``fixtures/passwords_not_secrets_dev3.jsonl`` were written apart from the detector too, and
measured once at 36d82ba (85 of 100 caught, 2 of 58 lines without one flagged): a third dev set,
tuned on since. ``fixtures/passwords_dev4.jsonl`` was written to tune the detector on the families
the third set showed (placeholders and references, a password piped to a tool's stdin flag, a flag
named for a credential, XML and code that name the credential, file formats the text names,
sentences with words between the credential and its verb, logging in with a value).
``fixtures/passwords_dev5.jsonl`` and ``fixtures/passwords_not_secrets_dev5.jsonl`` were written
apart from the detector and measured once at 7f5a484 (108 of 129 caught, 0 of 65 lines without one
flagged): a fifth dev set, tuned on since. ``fixtures/passwords_dev6.jsonl`` was written to tune
the detector on the families the fifth set's misses showed (SQL that names a credential's column,
user/password after an *_AUTH name, a connection call's positional password, DSNs in code, a file of
a user line and a password line, user / password pairs and passwords said in prose and chat, a
question about a password answered on the next line). ``fixtures/passwords_dev7.jsonl`` and
``fixtures/passwords_not_secrets_dev7.jsonl`` were written apart from the detector and measured once
at 0bf8021 (100 of 123 caught, 1 of 83 lines without one flagged: a masked value): a seventh dev set.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from pathlib import Path

import pytest
from mcp import Client

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.core.trees.calendar import UTC_CALENDAR
from memtree_mcp.errors import MemtreeError
from memtree_mcp.secrets.detection import NAME_CHARS, find_secrets, redact_fields, redact_record, redacted
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.inputs import check_tags, check_tree, parse_timestamp
from memtree_mcp.service.requests import RecallRequest
from tests.mcp_text import text_of
from tests.test_secrets import leaks

FIXTURES = Path(__file__).parent / "fixtures"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GITHUB = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
AWS = "AKIA" + "GSZ4M6TDFGATE628"
PASSWORD = "Tr0ub4dor&3x"
SECRETS = [STRIPE, GITHUB, AWS, PASSWORD]


def lines(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def exported(service: MemoryService, folder: Path, namespace: str | None = None) -> Path:
    """Every memory of ``namespace`` written as JSONL into ``folder``; the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{namespace or 'default'}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in service.export_memories(namespace)))
    return path


# -- 1. every stored field passes the door


@pytest.mark.anyio
async def test_a_key_given_as_a_tag_a_session_or_a_role_over_mcp_is_stored_and_shown_nowhere(
    tmp_path: Path, embedder: object
) -> None:
    home = tmp_path / "store"
    service = MemoryService(Settings(home=str(home), namespace="mcp"), embedder=embedder)  # type: ignore[arg-type]
    told = []
    try:
        async with Client(build_server(service)) as client:
            for number, (tags, session, role) in enumerate(
                [
                    ([STRIPE, "billing"], f"deploy {GITHUB}", "user"),
                    (["ops"], f"deploy {GITHUB}", AWS),
                    ([f"password={PASSWORD}"], "plain-session", "assistant"),
                ]
            ):
                result = await client.call_tool(
                    "remember",
                    {"content": f"Deploy note {number}: the billing job moved to Friday.", "tags": tags}
                    | {"session": session, "role": role},
                )
                assert not result.is_error, text_of(result)
                told.append(text_of(result))
            assert all("redacted before storing" in text for text in told)
            for tree in ("semantic", "temporal"):
                shown = await client.call_tool("navigate", {"tree": tree})
                told.append(text_of(shown))
                for index in range(3):
                    down = await client.call_tool("navigate", {"tree": tree, "move": "down", "index": index})
                    told.append(text_of(down))
            told.append(text_of(await client.call_tool("recall", {"query": "billing job Friday"})))
        memory = service.memory()
        assert memory is not None
        stored = sorted(memory.leaves.values(), key=lambda leaf: leaf.seq)
        # The turns of one session still group together: one session, redacted the same way.
        assert stored[0].session == stored[1].session == "deploy [redacted: github-token]"
        assert stored[0].tags == ("[redacted: stripe-key]", "billing")
        assert stored[1].role == "[redacted: aws-access-key]"
        assert stored[2].tags == ("password=[redacted: password]",)
        exported(service, tmp_path / "exports", "mcp")
    finally:
        service.close()
    assert not any(secret in text for secret in SECRETS for text in told)
    assert leaks(home, SECRETS) == []
    assert leaks(tmp_path / "exports", SECRETS) == []


def test_a_key_given_to_the_cli_as_a_tag_session_or_role_is_stored_nowhere(
    empty_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["remember", "The billing job moved to Friday.", "--tag", STRIPE, "--session", GITHUB]
    assert main([*argv, "--role", AWS]) == 0
    out = capsys.readouterr().out
    assert "redacted 3 secrets before storing: aws-access-key in the role" in out
    assert not any(secret in out for secret in SECRETS)
    exports = tmp_path / "exports"
    exports.mkdir()
    assert main(["export", str(exports / "all.jsonl")]) == 0
    assert main(["export", "--format", "markdown", str(exports / "notes")]) == 0
    assert leaks(empty_home, SECRETS) == []
    assert leaks(exports, SECRETS) == []


def test_refuse_names_the_field_that_holds_the_secret_and_stores_nothing(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMTREE_SECRETS", "refuse")
    assert main(["remember", "Plain first memory."]) == 0
    capsys.readouterr()
    assert main(["remember", "The billing job moved to Friday.", "--tag", "ops", "--tag", STRIPE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tags hold a secret (stripe-key in tag 2)" in err and STRIPE not in err
    assert main(["remember", "The billing job moved to Friday.", "--session", f"run {GITHUB}"]) == 2
    assert "session holds a secret (github-token)" in capsys.readouterr().err
    service = MemoryService(Settings(home=str(empty_home)))
    try:
        assert [leaf.text for leaf in service.memory().leaves.values()] == ["Plain first memory."]  # type: ignore[union-attr]
    finally:
        service.close()


def import_sources(folder: Path) -> dict[str, list[str]]:
    """Sources whose names (not their texts) hold the secrets: the ``import`` arguments of each."""
    folder.mkdir()
    graph = [
        {"type": "entity", "name": STRIPE, "entityType": "key", "observations": ["Used by the billing job."]},
        {"type": "entity", "name": "Billing", "entityType": GITHUB, "observations": ["Runs on Fridays."]},
        {"type": "relation", "from": AWS, "relationType": "signs", "to": "Billing"},
    ]
    (folder / "memory.jsonl").write_text("".join(json.dumps(g) + "\n" for g in graph))
    rows = [
        {"text": "The billing job moved to Friday.", "labels": f"ops, {STRIPE}", "conv": f"s {GITHUB}"},
        {"text": "The search job moved to Monday.", "labels": "ops", "conv": f"password={PASSWORD}"},
    ]
    (folder / "rows.json").write_text(json.dumps(rows))
    with (folder / "rows.csv").open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["text", "labels", "conv"])
        writer.writeheader()
        writer.writerows(rows)
    notes = folder / "notes"
    notes.mkdir()
    (notes / f"deploy {STRIPE}.md").write_text(f"---\ntags: [ops, {GITHUB}]\n---\nThe deploy runs at noon.\n")
    (notes / "plain.md").write_text(f"---\ntitle: key {AWS}\n---\nThe search index is rebuilt nightly.\n")
    mapping = ["--map", "content=text,tags=labels,session=conv"]
    return {
        "graph": ["--from", "mcp-memory", str(folder / "memory.jsonl")],
        "json": ["--from", "json", str(folder / "rows.json"), *mapping],
        "csv": ["--from", "csv", str(folder / "rows.csv"), *mapping],
        "notes": ["--from", "markdown", str(notes)],
    }


def test_names_an_import_maps_to_tags_and_sessions_are_redacted_in_every_source(
    empty_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = import_sources(tmp_path / "sources")
    exports = tmp_path / "exports"
    exports.mkdir()
    for namespace, argv in sources.items():
        assert main(["--namespace", namespace, "import", *argv]) == 0, namespace
        assert main(["--namespace", namespace, "export", str(exports / f"{namespace}.jsonl")]) == 0
        assert (
            main(["--namespace", namespace, "export", "--format", "markdown", str(exports / namespace)]) == 0
        )
    told = capsys.readouterr()
    held = [json.loads(line) for path in exports.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert len(held) == 9
    assert sum("[redacted: " in " ".join([*r["tags"], r.get("session") or ""]) for r in held) >= 7
    assert not any(secret in told.out + told.err for secret in SECRETS)
    assert leaks(empty_home, SECRETS) == []
    assert leaks(exports, SECRETS) == []


def test_the_hooks_session_id_is_redacted_when_its_queued_turn_is_stored(
    empty_home: Path, tmp_path: Path
) -> None:
    # A turn as the hook queues it, its session id holding a key (redact_record is what the hook's
    # quick path calls before queueing; a queue written before it still passes the door at drain).
    record = {
        "content": "User: move the billing job to Friday\n\nAssistant: Done.",
        "tags": ["claude-code"],
        "timestamp": "2026-03-02T10:00:00Z",
        "namespace": None,
        "session": f"sess-{GITHUB}",
    }
    folder = empty_home / "hook-queue"
    folder.mkdir(parents=True)
    (folder / "1-a.json").write_text(json.dumps(record))
    assert main(["hook", "--drain"]) == 0
    assert not list(folder.glob("*.json")) and not (folder / "bad").exists()
    assert main(["export", str(tmp_path / "export.jsonl")]) == 0
    assert json.loads((tmp_path / "export.jsonl").read_text())["session"] == "sess-[redacted: github-token]"
    assert leaks(empty_home, [GITHUB]) == []
    assert leaks(tmp_path, [GITHUB]) == []

    # What the hook's quick path calls before queueing a turn.
    queued = redact_record(record, "redact")
    assert queued is not None and queued["session"] == "sess-[redacted: github-token]"
    assert queued["content"] == record["content"] and queued["namespace"] is None
    assert redact_record(record, "refuse") is None and redact_record(record, "keep") == record


def test_doctor_names_and_redact_rewrites_memories_whose_names_hold_secrets(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMTREE_SECRETS", "keep")  # a store written before names passed the door
    assert main(["remember", "The billing job moved to Friday.", "--tag", STRIPE]) == 0
    assert main(["remember", "The search job moved to Monday.", "--session", f"s {GITHUB}"]) == 0
    assert main(["remember", "The index is rebuilt nightly.", "--role", AWS]) == 0
    assert main(["remember", "An ordinary memory about the deploy.", "--tag", "ops"]) == 0
    monkeypatch.delenv("MEMTREE_SECRETS")
    capsys.readouterr()
    assert main(["doctor"]) == 1
    told = capsys.readouterr().out
    assert "3 memories hold secrets; doctor --redact rewrites them" in told
    assert "stripe-key in tag 1" in told and "github-token in the session" in told
    assert not any(secret in told for secret in SECRETS)
    ids = [line.split("[")[1].split("]")[0] for line in told.splitlines() if line.startswith("  secrets [")]
    assert main(["doctor", "--redact"]) == 0
    assert leaks(empty_home, SECRETS) == []
    assert main(["doctor"]) == 0
    service = MemoryService(Settings(home=str(empty_home)))
    try:
        memory = service.memory()
        assert memory is not None and len(memory.leaves) == 4 and set(ids) <= set(memory.leaves)
        assert memory.leaves[ids[0]].tags == ("[redacted: stripe-key]",)
        assert {memory.leaves[i].session for i in ids} >= {"s [redacted: github-token]"}
        assert {memory.leaves[i].role for i in ids} >= {"[redacted: aws-access-key]"}
    finally:
        service.close()


def test_a_name_redacted_stays_within_its_limit_and_imports_back() -> None:
    tag = "x" * 20 + " pw=" + "Tr0ub4dor&3xx" + " " + "y" * 26  # 64 characters
    session = "s " + " ".join([STRIPE] * 3) + " " + "z" * 27  # 128 characters
    assert len(tag) == NAME_CHARS["tags"] and len(session) == NAME_CHARS["session"]
    fields, held = redact_fields(
        {"content": "c", "tags": (tag, "ops"), "session": session, "role": "user"}, "redact"
    )
    assert len(held) == 4
    assert all(len(name) <= NAME_CHARS["tags"] for name in fields["tags"])  # type: ignore[attr-defined]
    assert len(str(fields["session"])) <= NAME_CHARS["session"] and STRIPE not in str(fields["session"])
    assert check_tags(fields["tags"]) == fields["tags"]
    # Redacting again changes nothing: a marker is no secret.
    assert redact_fields(fields, "redact") == (fields, [])


# -- 2. error messages quote no secret


def test_no_error_message_repeats_a_secret_given_in_a_bad_argument(
    service: MemoryService, capsys: pytest.CaptureFixture[str], empty_home: Path
) -> None:
    bad = f"password={PASSWORD}"
    service.remember("The billing job moved to Friday.")
    calls = [
        lambda: parse_timestamp(bad, UTC_CALENDAR),
        lambda: check_tree(bad),
        lambda: check_tags([bad + "x" * 60]),
        lambda: service.remember("The billing job moved.", timestamp=bad),
        lambda: service.remember("The billing job moved.", supersedes=[STRIPE]),
        lambda: service.look_up(RecallRequest("billing", strategy=bad)),
        lambda: service.look_up(RecallRequest("billing", as_of=f"token {GITHUB}")),
        lambda: service.look_up(RecallRequest("billing", namespace=f"x {STRIPE}")),
        lambda: service.navigate(node_id=f"m{AWS}"),
        lambda: service.navigate(move=bad),
    ]
    said = []
    for call in calls:
        with pytest.raises(MemtreeError) as refused:
            call()
        said.append(str(refused.value))
    assert "is not ISO 8601" in said[0] and "'password=[redacted: password]'" in said[0]
    assert [secret for secret in SECRETS for message in said if secret in message] == []
    assert main(["remember", "The billing job moved.", "--timestamp", bad]) == 2
    assert main(["recall", "billing", "--as-of", f"password: {PASSWORD}"]) == 2
    err = capsys.readouterr().err
    assert "is not ISO 8601" in err and PASSWORD not in err


# -- 3. normalised before detecting


def normalised(text: str) -> str:
    """``text`` as a reader of the stored bytes might see it: escapes decoded, NFKC, no format
    characters."""
    text = re.sub(
        r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1) or m.group(2), 16)), text
    )
    return "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")


FULL_WIDTH = {ord(c): ord(c) + 0xFEE0 for c in map(chr, range(33, 127))}
HIDDEN = [
    f"Billing uses {STRIPE[:12]}\u200b{STRIPE[12:]} in production.",
    f"The CI token is {GITHUB[:9]}\u00ad{GITHUB[9:20]}\u2060{GITHUB[20:]} for now.",
    f"Deploy key {AWS[:6]}\ufeff{AWS[6:]} rotates monthly.",
    f"Search uses {STRIPE.translate(FULL_WIDTH)} in staging.",
    "The release token is " + GITHUB.replace("1", "\\u0031").replace("E", "\\x45") + " for now.",
    "DB_PASS\u200bWORD=sun\u00adshine2024 is set on staging.",
]


def test_keys_broken_by_invisible_characters_full_width_or_escaped_are_stored_nowhere(
    service: MemoryService, tmp_path: Path
) -> None:
    for text in HIDDEN:
        key = max(text.split(), key=len)
        named = key if key.isprintable() else "ops"  # a tag refuses invisible characters
        assert service.remember(text, tags=["ops", named]).redacted, text
    path = exported(service, tmp_path / "exports")
    stored = normalised(path.read_text(encoding="utf-8"))
    # The marker covers the secret's own characters: none of them is left, read plainly or not.
    for secret in [STRIPE, GITHUB, AWS, "sunshine2024"]:
        assert secret not in stored
        assert not any(secret[i : i + 8] in stored for i in range(0, len(secret) - 7, 4)), secret
    assert len(stored.splitlines()) == len(HIDDEN) and stored.count("[redacted: ") >= len(HIDDEN)
    assert "Billing uses [redacted: stripe-key] in production." in stored


def test_a_marker_covers_only_the_secret_and_its_hidden_characters() -> None:
    text = f"café: use {STRIPE[:10]}\u200b{STRIPE[10:]} now — ﬁne"
    assert redacted(text) == "café: use [redacted: stripe-key] now — ﬁne"
    assert (
        redacted("ＰＡＳＳＷＯＲＤ＝ｓｕｎｓｈｉｎｅ２０２４ here")
        == "ＰＡＳＳＷＯＲＤ＝[redacted: password] here"
    )


# -- 4. the passwords people choose


def caught(entries: list[dict[str, str]]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(the password lines whose password is redacted, the other lines that are changed at all)."""
    found = [e for e in entries if e["secret"] and e["secret"] not in redacted(e["sentence"])]
    alarms = [e for e in entries if not e["secret"] and find_secrets(e["sentence"])]
    return found, alarms


def test_passwords_assigned_by_name_are_caught_and_their_stand_ins_are_not() -> None:
    dev = lines("passwords_dev.jsonl")
    passwords = [e for e in dev if e["kind"] == "password"]
    found, alarms = caught(dev)
    assert len(passwords) >= 60 and len(dev) - len(passwords) >= 60
    # 75 of the first 142 caught when their last 74 were added, before the detector was changed
    # for them; 39 of the next 55 (1 of their 44 lines without one flagged), measured the same way.
    assert len(found) >= len(passwords) - 5, [e["sentence"] for e in passwords if e not in found]
    assert alarms == []


def test_the_second_dev_sets_passwords_are_caught_and_the_lines_without_one_are_left_alone() -> None:
    # Written by another hand apart from the detector and measured once at 57 of 77 (0 of 50
    # flagged) before the detector was tuned on it: a dev set since, 75 of 77 caught after (the
    # missed are listed by bench/secret_redaction.py: a password after a colon with no talk of
    # one in the text).
    dev2 = lines("passwords_dev2.jsonl")
    not_secrets = lines("passwords_not_secrets.jsonl")
    assert len(dev2) >= 40 and len(not_secrets) >= 80
    found, _ = caught(dev2)
    assert len(found) >= 72, [e["sentence"] for e in dev2 if e not in found]
    assert [e["sentence"] for e in not_secrets if find_secrets(e["sentence"])] == []


def test_the_third_dev_sets_passwords_are_caught_and_the_lines_without_one_are_left_alone() -> None:
    # Written apart from the detector and measured once at 36d82ba: 85 of 100 caught, 2 of 58
    # flagged (a URL template in capitals, a secrets manager's ARN); tuned on since: 100 of 100
    # caught and none flagged after (bench/secret_redaction.py lists any missed).
    dev3 = lines("passwords_dev3.jsonl")
    not_secrets = lines("passwords_not_secrets_dev3.jsonl")
    assert len(dev3) == 100 and len(not_secrets) == 58
    found, _ = caught(dev3)
    assert len(found) >= 97, [e["sentence"] for e in dev3 if e not in found]
    assert [e["sentence"] for e in not_secrets if find_secrets(e["sentence"])] == []


def test_the_fourth_dev_sets_passwords_are_caught_and_the_lines_without_one_are_left_alone() -> None:
    # Written for the families of the third set's misses, measured before the detector was
    # changed for them (4228e8f): 4 of 58 caught, 14 of 77 lines without one flagged; 57 of 58
    # caught and none flagged after (missed: a plain word read as a state, "sunflowerseed").
    dev4 = lines("passwords_dev4.jsonl")
    passwords = [e for e in dev4 if e["secret"]]
    assert len(passwords) >= 50 and len(dev4) - len(passwords) >= 70
    found, alarms = caught(dev4)
    assert len(found) >= len(passwords) - 3, [e["sentence"] for e in passwords if e not in found]
    assert [e["sentence"] for e in alarms] == []


def test_the_fifth_dev_sets_passwords_are_caught_and_the_lines_without_one_are_left_alone() -> None:
    # Written apart from the detector and measured once at 7f5a484: 108 of 129 caught, 0 of 65
    # flagged; tuned on since (bench/secret_redaction.py lists any missed).
    dev5 = lines("passwords_dev5.jsonl")
    not_secrets = lines("passwords_not_secrets_dev5.jsonl")
    assert len(dev5) == 129 and len(not_secrets) == 65
    found, _ = caught(dev5)
    assert len(found) >= 108, [e["sentence"] for e in dev5 if e not in found]
    assert [e["sentence"] for e in not_secrets if find_secrets(e["sentence"])] == []


def test_the_sixth_dev_sets_passwords_are_caught_and_the_lines_without_one_are_left_alone() -> None:
    # Written for the families of the fifth set's misses, measured before the detector was
    # changed for them (8cb2202): 16 of 105 caught, 1 of 120 lines without one flagged; 105 and 0
    # at 0bf8021, which was tuned on it.
    dev6 = lines("passwords_dev6.jsonl")
    passwords = [e for e in dev6 if e["secret"]]
    assert len(passwords) >= 100 and len(dev6) - len(passwords) >= 110
    found, alarms = caught(dev6)
    assert len(found) >= 105, [e["sentence"] for e in passwords if e not in found]
    assert [e["sentence"] for e in alarms] == []


def test_the_seventh_dev_sets_passwords_are_caught_and_the_lines_without_one_are_left_alone() -> None:
    # Written apart from the detector and measured once at 0bf8021: 100 of 123 caught (missed:
    # passwords in Norwegian, German, Dutch, Spanish and Polish prose, in notes and tickets without a
    # password's word, passphrases of several words), 1 of 83 lines without one flagged (a masked
    # value, left alone since).
    dev7 = lines("passwords_dev7.jsonl")
    not_secrets = lines("passwords_not_secrets_dev7.jsonl")
    assert len(dev7) == 123 and len(not_secrets) == 83
    found, _ = caught(dev7)
    assert len(found) >= 100, [e["sentence"] for e in dev7 if e not in found]
    assert [e["sentence"] for e in not_secrets if find_secrets(e["sentence"])] == []


def test_redacting_twice_changes_nothing_more() -> None:
    names = (
        "secrets_corpus.jsonl",
        "passwords_dev.jsonl",
        "passwords_dev2.jsonl",
        "passwords_dev3.jsonl",
        "passwords_dev4.jsonl",
        "passwords_dev5.jsonl",
        "passwords_dev6.jsonl",
        "passwords_dev7.jsonl",
    )
    texts = [e["sentence"] for name in names for e in lines(name)]
    for text in [*texts, *HIDDEN]:
        once = redacted(text)
        assert find_secrets(once) == [], once


def test_a_password_remembered_is_stored_nowhere(service: MemoryService, tmp_path: Path) -> None:
    passwords = [e for e in lines("passwords_dev.jsonl") if e["kind"] == "password" and len(e["secret"]) >= 6]
    missed = [e for e in passwords if e["secret"] in redacted(e["sentence"])]
    assert len(missed) <= 5, missed
    for entry in passwords:
        if entry not in missed:
            service.remember(entry["sentence"])
    exported(service, tmp_path / "exports")
    secrets = [e["secret"] for e in passwords if e not in missed]
    assert leaks(Path(service.settings.home), secrets) == []
    assert leaks(tmp_path / "exports", secrets) == []

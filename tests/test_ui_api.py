"""The explorer's JSON API on a real store: children, nodes, search paths, timeline, forget, guards."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from memtree_mcp.config import Settings
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.transports.http import http_app
from memtree_mcp.ui.api import ui_app

TOKEN = "ui-test-token"
MEMORIES = [
    ("The staging database is Postgres 16 on port 5433.", "2026-03-02T09:00:00Z", "s1"),
    ("Backups of the staging database run every night at 02:00.", "2026-03-02T09:05:00Z", "s1"),
    ("The production database replicas live in Frankfurt.", "2026-03-02T09:10:00Z", "s1"),
    ("The user's cat is called Miso and sleeps on the keyboard.", "2026-03-09T18:00:00Z", "s2"),
    ("Miso the cat is afraid of the vacuum cleaner.", "2026-03-09T18:02:00Z", "s2"),
    ("The user's dog, Pixel, is a border collie.", "2026-03-09T18:04:00Z", "s2"),
    ("The team ships a release every second Tuesday.", "2026-03-20T11:00:00Z", "s3"),
    ("Release notes are written in the CHANGELOG.md file.", "2026-03-20T11:03:00Z", "s3"),
    ("The user prefers tabs over spaces in Go code.", "2026-04-01T08:00:00Z", "s4"),
    ("The user's favourite editor is Helix.", "2026-04-01T08:01:00Z", "s4"),
    ("The user drinks green tea in the afternoon.", "2026-04-15T16:00:00Z", "s5"),
    ("The user's bicycle is a red steel randonneur.", "2026-04-15T16:05:00Z", "s5"),
]


def _records() -> list[dict[str, Any]]:
    return [{"content": text, "timestamp": at, "session": session} for text, at, session in MEMORIES]


@pytest.fixture(scope="module")
def explored(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> Iterator[MemoryService]:
    """One store with the memories above, shared by the read-only tests of this module."""
    home = tmp_path_factory.mktemp("ui-store")
    service = MemoryService(Settings(home=str(home), namespace="default"), embedder=embedder)
    service.upkeep.import_memories(_records())
    yield service
    service.close()


@pytest.fixture(scope="module")
def client(explored: MemoryService) -> TestClient:
    return TestClient(ui_app(explored))


def _all_children(client: TestClient, tree: str, node: str | None, limit: int = 2) -> list[dict[str, Any]]:
    """Every child of ``node``, read page by page as the page reads them."""
    items: list[dict[str, Any]] = []
    offset = 0
    while True:
        params: dict[str, Any] = {"tree": tree, "offset": offset, "limit": limit}
        if node is not None:
            params["node"] = node
        page = client.get("/ui/api/children", params=params).json()
        items += page["children"]
        offset += limit
        if offset >= page["total"]:
            return items


def _leaves_of(client: TestClient, tree: str) -> list[str]:
    found: list[str] = []
    stack: list[str | None] = [None]
    while stack:
        node = stack.pop()
        for item in _all_children(client, tree, node, limit=50):
            if item["kind"] == "leaf":
                found.append(item["id"])
            else:
                stack.append(item["id"])
    return found


def test_the_root_lists_its_children_with_labels_counts_and_time_spans(client: TestClient) -> None:
    for tree in ("semantic", "temporal"):
        page = client.get("/ui/api/children", params={"tree": tree}).json()
        assert page["memories"] == len(MEMORIES)
        assert page["total"] == len(page["children"]) > 0
        assert sum(item["leaf_count"] for item in page["children"]) == len(MEMORIES)
        for item in page["children"]:
            assert item["label"].strip()
            assert item["time_from"] <= item["time_to"]
            assert item["time_from"].startswith("2026-")


def test_every_memory_is_reachable_in_both_trees_through_pages_of_children(client: TestClient) -> None:
    semantic, temporal = _leaves_of(client, "semantic"), _leaves_of(client, "temporal")
    assert len(semantic) == len(set(semantic)) == len(MEMORIES)
    assert set(semantic) == set(temporal)


def test_pages_split_the_children_without_gaps_or_overlaps(client: TestClient) -> None:
    whole = client.get("/ui/api/children", params={"tree": "temporal", "limit": 500}).json()["children"]
    paged = _all_children(client, "temporal", None, limit=1)
    assert [i["id"] for i in paged] == [i["id"] for i in whole]
    beyond = client.get("/ui/api/children", params={"tree": "temporal", "offset": 10_000}).json()
    assert beyond["children"] == [] and beyond["total"] == len(whole)


def test_a_memory_shows_its_full_text_parents_and_paths_in_both_trees(client: TestClient) -> None:
    found = client.get("/ui/api/search", params={"q": "what is the name of the cat?", "k": 3}).json()
    hit = found["hits"][0]
    assert hit["kind"] == "leaf" and "Miso" in hit["text"]
    node = client.get("/ui/api/node", params={"id": hit["id"]}).json()
    assert node["text"] in {m[0] for m in MEMORIES}
    assert node["kind"] == "leaf" and node["trees"] == ["semantic", "temporal"]
    assert node["session"] == "s2" and node["time_from"] == node["time_to"]
    assert node["children"] == {"total": 0, "items": []}
    for tree in ("semantic", "temporal"):
        path = node["paths"][tree]
        assert path[-1]["id"] == hit["id"]
        assert node["parents"][tree]["id"] == (path[-2]["id"] if len(path) > 1 else f"{tree}-root")
        # Each step's index is where the page finds it among its parent's children.
        parent: str | None = None
        for step in path:
            children = _all_children(client, tree, parent, limit=50)
            assert children[step["index"]]["id"] == step["id"]
            parent = step["id"]


def test_a_summary_shows_its_children_and_only_its_own_tree(client: TestClient) -> None:
    top = client.get("/ui/api/children", params={"tree": "temporal"}).json()["children"]
    branch = next(item for item in top if item["kind"] != "leaf")
    node = client.get("/ui/api/node", params={"id": branch["id"]}).json()
    assert node["tree"] == "temporal" and node["trees"] == ["temporal"]
    assert node["parents"] == {
        "semantic": None,
        "temporal": {"id": "temporal-root", "label": node["parents"]["temporal"]["label"]},
    }
    assert node["children"]["total"] == branch["child_count"] == len(node["children"]["items"])
    assert node["leaf_count"] == branch["leaf_count"]
    assert node["text"].strip()


def test_search_finds_a_remembered_phrase_with_its_path_in_both_trees(client: TestClient) -> None:
    found = client.get("/ui/api/search", params={"q": "which editor does the user like", "k": 5}).json()
    assert found["hits"], found
    best = found["hits"][0]
    assert best["text"] == "The user's favourite editor is Helix."
    assert set(best["paths"]) == {"semantic", "temporal"}
    for tree, path in best["paths"].items():
        assert path[-1]["id"] == best["id"]
        node = client.get(
            "/ui/api/children",
            params={"tree": tree, "node": path[-2]["id"]} if len(path) > 1 else {"tree": tree},
        ).json()
        assert best["id"] in {item["id"] for item in node["children"]}


def test_search_without_a_match_or_without_a_query(client: TestClient) -> None:
    empty = client.get("/ui/api/search", params={"q": "xylophone quantum zeppelin"}).json()
    assert empty["hits"] == []
    missing = client.get("/ui/api/search")
    assert missing.status_code == 400 and "'q'" in missing.json()["detail"]
    too_many = client.get("/ui/api/search", params={"q": "cat", "k": 1000})
    assert too_many.status_code == 400 and "k must be" in too_many.json()["detail"]


def test_the_timeline_lays_the_temporal_segments_in_time_order(client: TestClient) -> None:
    data = client.get("/ui/api/timeline").json()
    segments = data["segments"]
    assert len(segments) >= 2 and not data["truncated"]
    # One card a session, named by its start.
    assert data["period"] == "session"
    assert all(re.match(r"session (\S+ )?2026-\d\d-\d\d \d\d:\d\d · ", s["label"]) for s in segments)
    assert sum(s["leaf_count"] for s in segments) == len(MEMORIES)
    starts = [s["first_ts"] for s in segments]
    assert starts == sorted(starts)
    assert data["time_from"] == "2026-03-02T09:00:00Z" and data["time_to"] == "2026-04-15T16:05:00Z"
    for segment in segments:  # each segment opens in the temporal tree
        assert client.get("/ui/api/node", params={"id": segment["id"]}).json()["paths"]["temporal"]


@pytest.mark.parametrize(
    ("path", "params", "status", "detail"),
    [
        ("/ui/api/children", {"tree": "sideways"}, 400, "unknown tree"),
        ("/ui/api/children", {"offset": "-1"}, 400, "offset must be"),
        ("/ui/api/children", {"limit": "lots"}, 400, "whole number"),
        ("/ui/api/children", {"limit": "0"}, 400, "limit must be"),
        ("/ui/api/children", {"node": "nope"}, 404, "no node 'nope'"),
        ("/ui/api/node", {}, 400, "'id' is missing"),
        ("/ui/api/node", {"id": "nope"}, 404, "no node 'nope'"),
        ("/ui/api/node", {"id": "x" * 5000}, 404, "no node"),
        ("/ui/api/children", {"ns": "../etc"}, 400, "invalid namespace"),
        ("/ui/api/nothing-here", {}, 404, "no such endpoint"),
    ],
)
def test_bad_requests_get_a_clear_json_error(
    client: TestClient, path: str, params: dict[str, str], status: int, detail: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert detail in response.json()["detail"]


def test_a_branch_asked_in_the_other_tree_names_the_right_one(client: TestClient) -> None:
    top = client.get("/ui/api/children", params={"tree": "temporal"}).json()["children"]
    branch = next(item for item in top if item["kind"] != "leaf")
    response = client.get("/ui/api/children", params={"tree": "semantic", "node": branch["id"]})
    assert response.status_code == 400
    assert "tree=temporal" in response.json()["detail"]


def test_an_empty_namespace_shows_no_memories_rather_than_failing(client: TestClient) -> None:
    page = client.get("/ui/api/children", params={"ns": "nothing-here"}).json()
    assert page["total"] == 0 and page["children"] == [] and page["namespace"] == "nothing-here"
    assert client.get("/ui/api/timeline", params={"ns": "nothing-here"}).json()["segments"] == []
    assert client.get("/ui/api/node", params={"ns": "nothing-here", "id": "m1"}).status_code == 404
    names = client.get("/ui/api/namespaces").json()
    assert names["namespaces"] == [{"name": "default", "memories": len(MEMORIES)}]
    assert names["default"] == "default" and names["allow_edit"] is False


def test_the_explorer_is_read_only_unless_edits_are_allowed(client: TestClient) -> None:
    leaf = _leaves_of(client, "semantic")[0]
    response = client.post("/ui/api/forget", json={"id": leaf})
    assert response.status_code == 403
    assert "--allow-edit" in response.json()["detail"]
    assert client.get("/ui/api/node", params={"id": leaf}).status_code == 200
    assert client.get("/ui/api/forget").status_code == 405


def test_with_edits_allowed_one_memory_is_forgotten_from_both_trees(service: MemoryService) -> None:
    service.upkeep.import_memories(_records()[:6])
    client = TestClient(ui_app(service, allow_edit=True))
    hit = client.get("/ui/api/search", params={"q": "cat afraid of the vacuum"}).json()["hits"][0]
    assert "vacuum" in hit["text"]
    done = client.post("/ui/api/forget", json={"ns": "default", "id": hit["id"]})
    assert done.status_code == 200 and done.json()["deleted"] == [hit["id"]]
    assert client.get("/ui/api/node", params={"id": hit["id"]}).status_code == 404
    assert hit["id"] not in _leaves_of(client, "temporal")
    assert len(_leaves_of(client, "semantic")) == 5
    again = client.get("/ui/api/search", params={"q": "cat afraid of the vacuum"}).json()["hits"]
    assert all("vacuum" not in h["text"] for h in again)


def test_forget_refuses_summaries_and_malformed_requests(service: MemoryService) -> None:
    service.upkeep.import_memories(_records()[:6])
    client = TestClient(ui_app(service, allow_edit=True))
    branch = next(
        i
        for i in client.get("/ui/api/children", params={"tree": "temporal"}).json()["children"]
        if i["kind"] != "leaf"
    )
    summary = client.post("/ui/api/forget", json={"id": branch["id"]})
    assert summary.status_code == 400 and "summary" in summary.json()["detail"]
    assert client.post("/ui/api/forget", json={"id": "nope"}).status_code == 404
    assert client.post("/ui/api/forget", json=["nope"]).status_code == 400
    assert (
        client.post(
            "/ui/api/forget", content=b"{not json", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )
    assert (
        client.post(
            "/ui/api/forget", content=b"id=x", headers={"content-type": "application/x-www-form-urlencoded"}
        ).status_code
        == 415
    )
    huge = client.post("/ui/api/forget", json={"id": "m" + "x" * 10_000})
    assert huge.status_code == 413
    assert len(_leaves_of(client, "semantic")) == 6


def _leaf_items(client: TestClient, tree: str) -> dict[str, dict[str, Any]]:
    """Every memory's row in ``tree``, by id, as the page lists them."""
    found: dict[str, dict[str, Any]] = {}
    stack: list[str | None] = [None]
    while stack:
        node = stack.pop()
        for item in _all_children(client, tree, node, limit=50):
            if item["kind"] == "leaf":
                found[item["id"]] = item
            else:
                stack.append(item["id"])
    return found


# An update no rule could see (nothing says "now", no value in the same slot): only the link says so.
MOVED = ("The staging database moved to the new Hetzner machine.", "2026-05-04T10:00:00Z")


def _linked(service: MemoryService) -> tuple[str, str]:
    """The memories above, and a later one linked to the first with ``supersedes``: (older, newer)."""
    service.upkeep.import_memories(_records()[:6])
    memory = service.memory()
    assert memory is not None
    older = next(leaf.id for leaf in memory.leaves.values() if leaf.text == MEMORIES[0][0])
    newer = service.remember(MOVED[0], timestamp=MOVED[1], supersedes=[older]).ids[0]
    return older, newer


def test_a_memory_a_later_one_updates_is_marked_wherever_the_explorer_lists_it(
    service: MemoryService,
) -> None:
    older, newer = _linked(service)
    client = TestClient(ui_app(service))

    # Its node names the update (id, first words, day), and the update's node names it back.
    stale = client.get("/ui/api/node", params={"id": older}).json()
    assert stale["stale"] is True
    assert stale["superseded_by"] == {
        "id": newer,
        "label": MOVED[0],
        "day": "2026-05-04",
        "time": "2026-05-04T10:00:00Z",
    }
    assert stale["supersedes"] == []
    update = client.get("/ui/api/node", params={"id": newer}).json()
    assert update["stale"] is False and update["superseded_by"] is None
    assert [(o["id"], o["label"], o["day"]) for o in update["supersedes"]] == [
        (older, MEMORIES[0][0], "2026-03-02")
    ]

    # Both trees mark it in their rows, and only it.
    for tree in ("semantic", "temporal"):
        rows = _leaf_items(client, tree)
        assert len(rows) == 7
        assert rows[older]["stale"] is True and rows[older]["superseded_by"] == newer, tree
        assert all(not r["stale"] and r["superseded_by"] is None for i, r in rows.items() if i != older), tree
        # So does the list of children in its parent's node panel.
        parent = stale["parents"][tree]["id"]
        items = client.get("/ui/api/node", params={"id": parent}).json()["children"]["items"]
        assert next(i for i in items if i["id"] == older)["superseded_by"] == newer

    # A search hit carries recall's mark, and the update is a hit of the same result.
    hits = client.get("/ui/api/search", params={"q": "staging database Postgres port"}).json()["hits"]
    by_id = {hit["id"]: hit for hit in hits}
    assert by_id[older]["superseded_by"] == newer and newer in by_id
    assert by_id[newer]["superseded_by"] is None


def test_an_update_the_agent_links_is_marked_both_ways_and_an_unlinked_one_nowhere(
    service: MemoryService,
) -> None:
    first = service.remember("The staging database runs on port 5432.", timestamp="2026-03-02T09:00:00Z")
    second = service.remember("The staging database now runs on port 5433.", timestamp="2026-03-09T09:00:00Z")
    older, newer = first.ids[0], second.ids[0]
    client = TestClient(ui_app(service))
    assert client.get("/ui/api/node", params={"id": older}).json()["superseded_by"] is None
    assert second.candidates[0].id == older  # offered, not marked
    service.remember("The staging database now runs on port 5433.", supersedes=[older])
    assert client.get("/ui/api/node", params={"id": older}).json()["superseded_by"]["id"] == newer
    assert [o["id"] for o in client.get("/ui/api/node", params={"id": newer}).json()["supersedes"]] == [older]


def test_forgetting_the_update_from_the_explorer_makes_the_older_memory_current_again(
    service: MemoryService,
) -> None:
    older, newer = _linked(service)
    client = TestClient(ui_app(service, allow_edit=True))
    assert client.get("/ui/api/node", params={"id": older}).json()["stale"] is True
    done = client.post("/ui/api/forget", json={"id": newer})
    assert done.status_code == 200 and done.json()["deleted"] == [newer]
    current = client.get("/ui/api/node", params={"id": older}).json()
    assert current["stale"] is False and current["superseded_by"] is None
    for tree in ("semantic", "temporal"):
        rows = _leaf_items(client, tree)
        assert rows[older]["stale"] is False and rows[older]["superseded_by"] is None
    hits = client.get("/ui/api/search", params={"q": "staging database Postgres port"}).json()["hits"]
    assert all(hit["superseded_by"] is None for hit in hits)


def test_the_page_is_self_contained_and_forbids_other_origins(client: TestClient) -> None:
    page = client.get("/ui/")
    assert page.status_code == 200 and "memtree" in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"
    static = resources.files("memtree_mcp.ui").joinpath("static")
    for name in ("index.html", "app.js", "style.css"):
        text = static.joinpath(name).read_text(encoding="utf-8")
        assert client.get(f"/ui/{name}").text == text
        # Nothing on the page points to another machine: no absolute URL, no protocol-relative one.
        assert not re.search(r"https?://|(?<![:\w])//[\w.-]+\.[a-z]{2,}", text), name
    assert client.get("/ui/../pyproject.toml").status_code == 404


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_the_http_transports_serve_the_explorer_behind_the_token_and_host_checks(
    explored: MemoryService, transport: Any
) -> None:
    explorer = ui_app(explored, allow_edit=False, token=TOKEN)
    app = http_app(build_server(explored), transport=transport, port=8765, token=TOKEN, explorer=explorer)
    client = TestClient(app, base_url="http://127.0.0.1:8765")
    # The page holds no data and loads without the token; the API needs it.
    assert client.get("/ui/").status_code == 200
    refused = client.get("/ui/api/children")
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert client.get("/ui/api/children", headers=auth).json()["memories"] == len(MEMORIES)
    assert client.post("/ui/api/forget", json={"id": "x"}, headers=auth).status_code == 403
    # DNS rebinding: a foreign Host or Origin is refused on the page and the API alike.
    assert client.get("/ui/", headers={"Host": "evil.example"}).status_code == 421
    assert client.get("/ui/api/children", headers={**auth, "Host": "evil.example"}).status_code == 421
    evil = {**auth, "Origin": "http://evil.example"}
    assert client.post("/ui/api/forget", json={"id": "x"}, headers=evil).status_code == 403
    # MCP itself still requires the token.
    endpoint = "/mcp" if transport == "streamable-http" else "/sse"
    assert client.get(endpoint).status_code == 401


def test_without_a_service_the_transports_do_not_serve_the_explorer(
    explored: MemoryService, tmp_path: Path
) -> None:
    app = http_app(build_server(explored), transport="streamable-http", port=8765)
    client = TestClient(app, base_url="http://127.0.0.1:8765")
    assert client.get("/ui/api/children").status_code == 404


@pytest.mark.slow
def test_the_ui_command_serves_the_explorer_on_loopback_behind_a_token_of_its_own(
    explored: MemoryService,
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "memtree_mcp", "ui", "--home", explored.settings.home],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "MEMTREE_AUTH_TOKEN"},
    )
    try:
        stdout = process.stdout
        assert stdout is not None
        lines: list[str] = []
        reader = threading.Thread(
            target=lambda: lines.extend([stdout.readline(), stdout.readline()]), daemon=True
        )
        reader.start()
        reader.join(120)
        assert lines, "memtree-mcp ui printed no URL"
        url = re.search(r"(http://127\.0\.0\.1:(\d+)/ui/)#token=([A-Za-z0-9_-]{32})", lines[0])
        assert url is not None, lines[0]
        assert "opening it in your browser" not in lines[1]  # its output is a pipe, not a person
        page, token = url.group(1), url.group(3)
        # Another local process that does not know the printed URL reads nothing.
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{page}api/namespaces", timeout=60)
        assert refused.value.code == 401
        asking = urllib.request.Request(f"{page}api/namespaces", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(asking, timeout=60) as answer:
            names = json.load(answer)
        assert names["namespaces"] == [{"name": "default", "memories": len(MEMORIES)}]
        assert names["allow_edit"] is False
        with urllib.request.urlopen(page, timeout=60) as answer:  # the page itself holds no data
            assert b"memtree explorer" in answer.read()
    finally:
        process.terminate()
        process.wait(timeout=30)


class FakeBrowser:
    """Stands in for ``webbrowser.open``: records the URLs it is asked to open."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.called = threading.Event()

    def open(self, url: str, *args: object, **kwargs: object) -> bool:
        self.opened.append(url)
        self.called.set()
        return True


def _run_ui(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *flags: str, person: bool = True) -> FakeBrowser:
    """``memtree-mcp ui`` in this process, its server replaced by one that only announces its URL."""
    import webbrowser

    from memtree_mcp import cli
    from memtree_mcp.ui import server

    browser = FakeBrowser()
    monkeypatch.setattr(webbrowser, "open", browser.open)
    monkeypatch.setattr(server, "may_open_browser", lambda: person)

    def announce_only(service: object, *, token: str, on_ready: Any, **_: object) -> None:
        on_ready(f"http://127.0.0.1:1/ui/#token={token}")

    monkeypatch.setattr(server, "serve_ui", announce_only)
    assert cli.main(["ui", "--home", str(tmp_path / "store"), *flags]) == 0
    return browser


def test_the_ui_command_opens_its_url_in_the_browser_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMTREE_AUTH_TOKEN", raising=False)
    browser = _run_ui(monkeypatch, tmp_path)
    printed = capsys.readouterr().out
    assert browser.called.wait(30)
    url = re.search(r"http://\S+", printed)
    assert url is not None and browser.opened == [url.group(0)], printed
    assert "opening it in your browser" in printed

    browser = _run_ui(monkeypatch, tmp_path, "--no-browser")
    printed = capsys.readouterr().out
    assert browser.opened == [] and "memtree explorer: http://127.0.0.1:1/ui/#token=" in printed
    assert "opening" not in printed

    browser = _run_ui(monkeypatch, tmp_path, person=False)  # CI, a pipe, no display
    assert browser.opened == [] and "opening" not in capsys.readouterr().out


def test_each_run_of_the_ui_command_makes_its_own_token_unless_one_is_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMTREE_AUTH_TOKEN", raising=False)
    tokens = []
    for _ in range(2):
        _run_ui(monkeypatch, tmp_path, "--no-browser")
        found = re.search(r"#token=([A-Za-z0-9_-]+)", capsys.readouterr().out)
        assert found is not None
        tokens.append(found.group(1))
    assert len(tokens[0]) >= 32 and tokens[0] != tokens[1]
    monkeypatch.setenv("MEMTREE_AUTH_TOKEN", "mine")
    _run_ui(monkeypatch, tmp_path, "--no-browser")
    assert "#token=mine" in capsys.readouterr().out


class Terminal:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("environ", "tty", "platform", "opens"),
    [
        ({"DISPLAY": ":0"}, True, "linux", True),
        ({"WAYLAND_DISPLAY": "wayland-0"}, True, "linux", True),
        ({}, True, "darwin", True),
        ({}, True, "win32", True),
        ({}, True, "linux", False),  # ssh, a console: webbrowser would start a text browser here
        ({"DISPLAY": ":0"}, False, "linux", False),  # output to a pipe: a script or a test
        ({"DISPLAY": ":0", "CI": "true"}, True, "linux", False),
        ({"CI": "1"}, True, "darwin", False),
        ({"DISPLAY": ":0", "CI": "false"}, True, "linux", True),
    ],
)
def test_a_browser_is_opened_only_for_a_person_at_a_terminal_with_a_display(
    environ: dict[str, str], tty: bool, platform: str, opens: bool
) -> None:
    from memtree_mcp.ui.server import may_open_browser

    assert may_open_browser(environ, Terminal(tty), platform) is opens  # type: ignore[arg-type]

"""The explorer page in a real headless Chromium, driven over the DevTools protocol.

The browser is Debian's ``chromium`` (``.ci/run`` installs it). Without it the test is skipped,
except under CI (``CI=true``), where it fails. The protocol is spoken over a WebSocket written
here with the standard library (a few dozen lines), so no browser-driver package is needed.
Screenshots are saved in ``test-artifacts/``: ``ui.png`` (search hits highlighted on a small
store), ``ui-months.png`` (five months of sessions: the timeline, both trees and a segment open in
the node panel), ``ui-token.png`` (the token prompt after a damaged ``#token=``) and
``ui-superseded.png`` (a memory a later one updates, marked in the trees, the results and its panel).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memtree_mcp.service import MemoryService
from memtree_mcp.ui.api import timeline_segments
from memtree_mcp.ui.server import guarded_ui_app
from tests.loopback import running
from tests.workday_memories import workday_memories

TOKEN = "browser-test-token"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
MEMORIES = [
    ("The staging database is Postgres 16 on port 5433.", "2026-03-02T09:00:00Z", "s1"),
    ("Backups of the staging database run every night at 02:00.", "2026-03-02T09:05:00Z", "s1"),
    ("The user's cat is called Miso and sleeps on the keyboard.", "2026-03-09T18:00:00Z", "s2"),
    ("Miso the cat is afraid of the vacuum cleaner.", "2026-03-09T18:02:00Z", "s2"),
    ("The team ships a release every second Tuesday.", "2026-03-20T11:00:00Z", "s3"),
    ("Release notes are written in the CHANGELOG.md file.", "2026-03-20T11:03:00Z", "s3"),
    ("The user prefers tabs over spaces in Go code.", "2026-04-01T08:00:00Z", "s4"),
    ("The user's favourite editor is Helix.", "2026-04-01T08:01:00Z", "s4"),
    ("The user drinks green tea in the afternoon.", "2026-04-15T16:00:00Z", "s5"),
]
WAIT_MS = 20_000


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail("chromium is not installed, and CI must run the browser test: .ci/run installs it")
    pytest.skip("chromium is not installed (apt-get install chromium): the page is not tested in a browser")


class DevTools:
    """A Chrome DevTools Protocol connection over a minimal WebSocket client (RFC 6455, text frames)."""

    def __init__(self, port: int, path: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        self.buffer = bytearray()
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, rest = bytes(self.buffer).partition(b"\r\n\r\n")
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.buffer = bytearray(rest)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the browser closed the DevTools connection")
        self.buffer += chunk

    def _take(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._fill()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def _send_text(self, text: str) -> None:
        payload = text.encode()
        size = len(payload)
        header = bytearray([0x81])
        if size < 126:
            header.append(0x80 | size)
        elif size < 1 << 16:
            header += bytes([0x80 | 126]) + size.to_bytes(2, "big")
        else:
            header += bytes([0x80 | 127]) + size.to_bytes(8, "big")
        mask = os.urandom(4)
        key = int.from_bytes((mask * (size // 4 + 1))[:size], "big")
        masked = (int.from_bytes(payload, "big") ^ key).to_bytes(size, "big")
        self.sock.sendall(bytes(header) + mask + masked)

    def _receive(self) -> dict[str, Any]:
        parts: list[bytes] = []
        while True:
            first, second = self._take(2)
            size = second & 0x7F
            if size == 126:
                size = int.from_bytes(self._take(2), "big")
            elif size == 127:
                size = int.from_bytes(self._take(8), "big")
            payload = self._take(size)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the DevTools connection")
            if opcode in (0x9, 0xA):
                continue  # ping / pong: the browser does not require an answer here
            parts.append(payload)
            if first & 0x80:
                message: dict[str, Any] = json.loads(b"".join(parts))
                return message

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._send_text(json.dumps(message))
        while True:
            answer = self._receive()
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def close(self) -> None:
        self.sock.close()


class Page:
    """One tab: evaluate JavaScript in it, wait for conditions inside it, take screenshots."""

    def __init__(self, devtools: DevTools, session: str) -> None:
        self.devtools = devtools
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.devtools.call(method, params, self.session)

    def run(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, condition: str, what: str) -> Any:
        """The first truthy value of ``condition``, polled inside the page for at most WAIT_MS."""
        value = self.run(
            "new Promise((resolve) => { const start = Date.now(); (function check() {"
            f" let value = null; try {{ value = ({condition}); }} catch (e) {{ value = null; }}"
            " if (value) resolve(typeof value === 'object' ? true : value);"
            f" else if (Date.now() - start > {WAIT_MS}) resolve(null);"
            " else setTimeout(check, 25); })(); })"
        )
        assert value, f"timed out waiting for {what}"
        return value

    def idle(self) -> None:
        self.wait_for("document.documentElement.dataset.pending === '0'", "the API calls to finish")


@contextmanager
def serving(service: MemoryService, *, allow_edit: bool = False) -> Iterator[str]:
    """The explorer as ``memtree-mcp ui`` serves it (Host checks, a token), in a thread; yields its URL."""
    with running(lambda port: guarded_ui_app(service, port=port, token=TOKEN, allow_edit=allow_edit)) as url:
        yield url


@contextmanager
def browser(tmp_path: Path) -> Iterator[Page]:
    profile = tmp_path / "chromium-profile"
    active = profile / "DevToolsActivePort"
    active.unlink(missing_ok=True)  # only the port of the browser started here counts
    log = (tmp_path / "chromium.log").open("wb")
    process = subprocess.Popen(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            "--window-size=1400,900",
            "about:blank",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    devtools: DevTools | None = None
    try:
        for _ in range(600):  # at most 30 s for the browser to open its debugging port
            if active.exists() and len(active.read_text().splitlines()) >= 2:
                break
            try:
                process.wait(timeout=0.05)
                raise AssertionError(f"chromium exited: {(tmp_path / 'chromium.log').read_text()[-2000:]}")
            except subprocess.TimeoutExpired:
                pass
        port, path = active.read_text().splitlines()[:2]
        devtools = DevTools(int(port), path)
        target = devtools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = devtools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(devtools, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )
        yield page
    finally:
        if devtools is not None:
            devtools.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def _pane(tree: str) -> str:
    return f"document.querySelector('.pane[data-tree={tree}]')"


def _screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = page.call("Page.captureScreenshot", {"format": "png"})
    (ARTIFACTS / name).write_bytes(base64.b64decode(shot["data"]))
    print(f"screenshot: {ARTIFACTS / name}")


def _page_problems(page: Page) -> list[dict[str, Any]]:
    """Exceptions thrown in the page and errors it logged (a refused token's 401 aside)."""
    return [
        e
        for e in page.devtools.events
        if e.get("method") == "Runtime.exceptionThrown"
        or (
            e.get("method") == "Log.entryAdded"
            and e["params"]["entry"]["level"] == "error"
            and "401" not in e["params"]["entry"].get("text", "")
        )
    ]


def test_the_explorer_page_browses_both_trees_and_finds_a_remembered_phrase(
    service: MemoryService, tmp_path: Path
) -> None:
    service.upkeep.import_memories(
        {"content": text, "timestamp": at, "session": s} for text, at, s in MEMORIES
    )
    memory = service.memory()
    assert memory is not None
    tops = {tree: len(getattr(memory, tree).root.children) for tree in ("semantic", "temporal")}
    with serving(service) as base, browser(tmp_path) as page:
        # Without the token the page loads but asks for it instead of showing data.
        page.call("Page.navigate", {"url": f"{base}/ui/?first=1"})
        page.wait_for(
            "document.querySelector('#token-form') && !document.querySelector('#token-form').hidden",
            "the token prompt",
        )
        assert page.run(f"{_pane('semantic')}.querySelectorAll('li.node').length") == 0

        page.call("Page.navigate", {"url": f"{base}/ui/#token={TOKEN}"})
        page.wait_for("document.documentElement.dataset.ready === 'true'", "the page to load")
        page.idle()

        # The root's children of both trees are listed, with their labels and counts.
        for tree, count in tops.items():
            rows = page.run(f"[...{_pane(tree)}.querySelectorAll('ul.tree > li.node')].length")
            assert rows == count, tree
        assert "9 memories" in page.run(f"{_pane('semantic')}.querySelector('.pane-status').textContent")

        # A branch expands to show its children, and collapses again.
        first_branch = f"{_pane('temporal')}.querySelector('ul.tree > li.node-branch')"
        wanted = page.run(f"{first_branch}.dataset.id")
        children = len(memory.temporal.branches[wanted].children)
        page.run(f"{first_branch}.querySelector('.toggle').click()")
        page.wait_for(
            f"{first_branch}.querySelectorAll(':scope > ul > li.node').length === {children}", "the children"
        )
        assert page.run(f"{first_branch}.getAttribute('aria-expanded')") == "true"
        page.run(f"{first_branch}.querySelector('.toggle').click()")
        assert page.run(f"{first_branch}.querySelector(':scope > ul').hidden") is True

        # Clicking a node shows it in the panel.
        page.run(f"{first_branch}.querySelector('.label').click()")
        label = page.run(f"{first_branch}.querySelector('.label').textContent")
        page.wait_for(
            f"document.querySelector('#panel h3')?.textContent.startsWith({json.dumps(label)})",
            "the node panel",
        )

        # Search: the remembered phrase is found, and its row is unfolded and highlighted in both trees.
        page.run(
            "document.querySelector('#query').value = 'which editor does the user like';"
            "document.querySelector('#search').requestSubmit()"
        )
        phrase = json.dumps("The user's favourite editor is Helix.")
        for tree in ("semantic", "temporal"):
            page.wait_for(
                f"[...{_pane(tree)}.querySelectorAll('li.node.node-leaf.hit')].some((row) =>"
                f" row.offsetParent !== null && row.querySelector('.label').textContent === {phrase})",
                f"the highlighted memory in the {tree} tree",
            )
        page.idle()
        first_result = page.run("document.querySelector('#results-list li button').textContent")
        assert first_result == "The user's favourite editor is Helix."
        # Each result shows recall's relevance (0 to 1, as the model reads it), not a raw score.
        meta = page.run("document.querySelector('#results-list li .score').textContent")
        assert re.fullmatch(r"memory · relevance (0\.\d\d|1\.00) · .+", meta), meta

        # The timeline lays out the temporal segments; one marks the hit, and a click opens it.
        segments = page.run("document.querySelectorAll('#timeline-track .segment').length")
        assert segments >= 2
        assert page.run("document.querySelectorAll('#timeline-track .segment.hit').length") >= 1

        _screenshot(page, "ui.png")

        page.run("document.querySelector('#timeline-track .segment').click()")
        segment_id = page.run("document.querySelector('#timeline-track .segment').dataset.id")
        page.wait_for(
            f"{_pane('temporal')}.querySelector('li.node.selected[data-id=\"{segment_id}\"]')",
            "the segment in the tree",
        )

        # Nothing failed on the page, nothing broke its security policy, nothing left this machine.
        page.idle()
        problems = _page_problems(page)
        assert not problems, problems
        requested = [
            e["params"]["request"]["url"]
            for e in page.devtools.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        assert requested and all(url.startswith(f"{base}/ui/") for url in requested), requested


# What a person reads on the page, gathered in one evaluation: every timeline card's label, dates
# and count with their sizes, and every text of the tree rows and the node panel that could be cut.
READING = """(() => {
  const box = (node) => node.getBoundingClientRect();
  const cut = (node) => node.scrollWidth > node.clientWidth + 1 || node.scrollHeight > node.clientHeight + 1;
  const segments = [...document.querySelectorAll('#timeline-track .segment')].map((segment) => ({
    id: segment.dataset.id,
    width: box(segment).width,
    label: segment.querySelector('.segment-label').textContent,
    labelCut: cut(segment.querySelector('.segment-label')),
    dates: segment.querySelector('.segment-dates').textContent,
    datesCut: cut(segment.querySelector('.segment-dates')),
    count: segment.querySelector('.segment-count').textContent,
  }));
  const rows = [...document.querySelectorAll('.pane .row')].filter((row) => row.offsetParent !== null);
  return {
    segments,
    rows: rows.map((row) => ({
      label: row.querySelector('.label').textContent,
      labelCut: cut(row.querySelector('.label')),
      meta: row.querySelector('.meta').textContent,
      metaCut: cut(row.querySelector('.meta')),
    })),
    panelWidth: box(document.querySelector('#panel')).width,
    facts: Object.fromEntries([...document.querySelectorAll('#panel dt')].map((dt) =>
      [dt.textContent, { text: dt.nextElementSibling.textContent, cut: cut(dt.nextElementSibling) }])),
  };
})()"""
WHOLE_DAY = r"[A-Z][a-z]{2} \d{1,2}, 20\d\d"  # "Mar 2, 2026"
DAY_RANGE = rf"({WHOLE_DAY}|[A-Z][a-z]{{2}} \d{{1,2}} – {WHOLE_DAY}|{WHOLE_DAY} – {WHOLE_DAY})"
MIN_SEGMENT_PX = 140


def test_months_of_sessions_read_as_a_timeline_of_labelled_cards_with_whole_dates(
    service: MemoryService, tmp_path: Path
) -> None:
    records = workday_memories()
    service.upkeep.import_memories(records)
    with serving(service) as base, browser(tmp_path) as page:
        page.call("Page.navigate", {"url": f"{base}/ui/#token={TOKEN}"})
        page.wait_for("document.documentElement.dataset.ready === 'true'", "the page to load")
        page.idle()
        timeline = service.read(timeline_segments)
        assert timeline is not None
        seen = page.run(READING)

        # Every segment is a card a person can read and click: wide, labelled with whole words,
        # its dates whole and in words, its number of memories.
        segments = seen["segments"]
        assert [s["id"] for s in segments] == [s["id"] for s in timeline["segments"]]
        assert len(segments) >= 8
        for segment, stored in zip(segments, timeline["segments"], strict=True):
            assert segment["width"] >= MIN_SEGMENT_PX, segment
            assert segment["label"] == stored["label"] and not segment["labelCut"], segment
            words = segment["label"].split(", ")
            assert len(words) >= 2 and all(len(w) >= 2 and not w.endswith(("-", "'", "…")) for w in words)
            assert re.fullmatch(DAY_RANGE, segment["dates"]) and not segment["datesCut"], segment
            assert segment["count"] == f"{stored['leaf_count']} memories" or stored["leaf_count"] == 1
        # Nothing in the rows of either tree is cut: labels wrap at words, dates keep their year.
        assert seen["rows"]
        for row in seen["rows"]:
            assert not row["labelCut"] and not row["metaCut"], row
            assert re.search(r"20\d\d", row["meta"]), row

        # A click on a card opens its segment in the temporal tree and in a roomy panel.
        page.run("document.querySelectorAll('#timeline-track .segment')[2].click()")
        chosen = segments[2]["id"]
        page.wait_for(
            f"{_pane('temporal')}.querySelector('li.node.selected[data-id=\"{chosen}\"]')",
            "the segment in the tree",
        )
        page.idle()
        seen = page.run(READING)
        assert seen["panelWidth"] >= 380
        for fact in ("from", "to"):
            assert re.fullmatch(rf"{WHOLE_DAY} \d\d:\d\d UTC", seen["facts"][fact]["text"]), seen["facts"]
            assert not seen["facts"][fact]["cut"]
        assert re.fullmatch(r"\d+ (minute|hour|day)s?", seen["facts"]["lasts"]["text"])
        _screenshot(page, "ui-months.png")
        assert not _page_problems(page)


@pytest.mark.parametrize(
    ("fragment", "says"),
    [
        ("#token=%E0%A4%A", "damaged"),  # a broken %-escape: decoding it throws
        ("#token=caf%C3%A9", "not a valid token"),  # no HTTP header can carry "é"
        ("#token=not-the-token", "refused"),  # well formed, and the server says 401
    ],
)
def test_a_bad_token_in_the_address_shows_the_token_prompt_not_a_blank_page(
    service: MemoryService, tmp_path: Path, fragment: str, says: str
) -> None:
    service.upkeep.import_memories(
        {"content": text, "timestamp": at, "session": s} for text, at, s in MEMORIES
    )
    with serving(service) as base, browser(tmp_path) as page:
        page.call("Page.navigate", {"url": f"{base}/ui/{fragment}"})
        page.wait_for(
            "document.querySelector('#token-form') && !document.querySelector('#token-form').hidden",
            "the token prompt",
        )
        assert says in page.run("document.querySelector('#banner').textContent")
        assert page.run("document.activeElement && document.activeElement.id") == "token"
        assert page.run(f"{_pane('semantic')}.querySelectorAll('li.node').length") == 0
        if says == "damaged":
            _screenshot(page, "ui-token.png")
        # The right token, pasted into the prompt, opens the memory.
        page.run(
            f"document.querySelector('#token').value = {json.dumps(TOKEN)};"
            "document.querySelector('#token-form').requestSubmit()"
        )
        page.wait_for("document.documentElement.dataset.ready === 'true'", "the page to load")
        page.idle()
        assert page.run("document.querySelector('#token-form').hidden") is True
        assert page.run(f"{_pane('semantic')}.querySelectorAll('li.node').length") > 0
        assert page.run("location.hash") == f"#token={TOKEN}"
        assert not _page_problems(page)


# Whether a row of the trees is struck through as superseded, for each tree: (row shown, marked, badge).
STALE_ROWS = """((id) => Object.fromEntries(['semantic', 'temporal'].map((tree) => {
  const row = document.querySelector(`.pane[data-tree=${tree}] li.node[data-id="${id}"]`);
  if (!row || row.offsetParent === null) return [tree, null];
  const label = row.querySelector(':scope > .row > .label');
  const badge = row.querySelector(':scope > .row > .stale-badge');
  return [tree, {
    marked: row.classList.contains('stale'),
    struck: getComputedStyle(label).textDecorationLine.includes('line-through'),
    badge: badge && badge.offsetParent !== null ? badge.textContent : null,
  }];
})))"""


def test_a_superseded_memory_is_marked_and_forgetting_its_update_makes_it_current_again(
    service: MemoryService, tmp_path: Path
) -> None:
    service.upkeep.import_memories(
        {"content": text, "timestamp": at, "session": s} for text, at, s in MEMORIES
    )
    memory = service.memory()
    assert memory is not None
    old_text = MEMORIES[0][0]
    older = next(leaf.id for leaf in memory.leaves.values() if leaf.text == old_text)
    new_text = "The staging database moved to the new Hetzner machine."
    newer = service.remember(new_text, timestamp="2026-05-04T10:00:00Z", supersedes=[older]).ids[0]
    with serving(service, allow_edit=True) as base, browser(tmp_path) as page:
        page.call("Page.navigate", {"url": f"{base}/ui/#token={TOKEN}"})
        page.wait_for("document.documentElement.dataset.ready === 'true'", "the page to load")
        page.idle()

        # A search unfolds both memories: the older is struck through with a badge in both trees,
        # and its result names its update's rank.
        page.run(
            "document.querySelector('#query').value = 'which port does the staging database use';"
            "document.querySelector('#search').requestSubmit()"
        )
        page.wait_for(f"document.querySelector('#results-list li[data-id=\"{older}\"]')", "the older hit")
        page.idle()
        ranks = page.run("[...document.querySelectorAll('#results-list li')].map((li) => li.dataset.id)")
        assert older in ranks and newer in ranks
        mark = page.run(
            f"document.querySelector('#results-list li[data-id=\"{older}\"] .stale-mark').textContent"
        )
        assert mark == f"superseded by #{ranks.index(newer) + 1}"
        assert (
            page.run(f"document.querySelector('#results-list li[data-id=\"{newer}\"] .stale-mark')") is None
        )
        rows = page.run(f"({STALE_ROWS})({json.dumps(older)})")
        assert rows == {tree: {"marked": True, "struck": True, "badge": "superseded"} for tree in rows}, rows
        assert set(rows) == {"semantic", "temporal"}
        update_rows = page.run(f"({STALE_ROWS})({json.dumps(newer)})")
        assert all(row is None or not row["marked"] for row in update_rows.values()), update_rows
        assert page.run("document.querySelectorAll('.pane li.node.stale').length") == 2  # one row a tree

        # The older's panel says "Superseded by <newer>"; the link opens the newer, which says it updates it.
        page.run(f"document.querySelector('#results-list li[data-id=\"{older}\"] button').click()")
        page.wait_for("document.querySelector('#panel .notice.superseded')", "the superseded notice")
        notice = page.run("document.querySelector('#panel .notice.superseded').textContent")
        assert notice.startswith(f"Superseded by {new_text} (May 4, 2026)"), notice
        assert page.run("document.querySelector('#panel h3').textContent").startswith(old_text)
        assert "null" not in page.run("document.querySelector('#panel').textContent")
        _screenshot(page, "ui-superseded.png")
        page.run("document.querySelector('#panel .notice.superseded button').click()")
        page.wait_for(
            f"document.querySelector('#panel h3')?.textContent.startsWith({json.dumps(new_text)})",
            "the newer memory's panel",
        )
        updates = page.run("document.querySelector('#panel .notice.updates').textContent")
        assert updates == f"Updates {old_text} (Mar 2, 2026)", updates
        assert page.run("document.querySelector('#panel .notice.superseded')") is None
        page.idle()
        _screenshot(page, "ui-updates.png")

        # Forgetting the newer from the page makes the older current again: after the page's
        # refresh, the older opens with no mark, in its panel or in either tree.
        page.run(
            "window.confirm = () => true; document.querySelector('#panel .actions button.danger').click()"
        )
        page.wait_for(
            "document.querySelector('#panel')?.textContent.includes('The memory was forgotten')", "the forget"
        )
        page.idle()
        page.run("document.querySelector('#panel .notice.updates button').click()")
        page.wait_for(
            f"document.querySelector('#panel h3')?.textContent.startsWith({json.dumps(old_text)})",
            "the older memory's panel",
        )
        page.idle()
        assert page.run("document.querySelector('#panel .notice.superseded')") is None
        assert page.run("document.querySelector('#panel .stale-kind')") is None
        rows = page.run(f"({STALE_ROWS})({json.dumps(older)})")
        assert rows == {tree: {"marked": False, "struck": False, "badge": None} for tree in rows}, rows
        assert set(rows) == {"semantic", "temporal"}
        marks = "[...document.querySelectorAll('.stale, .stale-badge, .stale-mark')]"
        shown = f"{marks}.filter((e) => e.offsetParent)"  # the hidden results of the last search aside
        assert page.run(f"{shown}.map((e) => e.outerHTML.slice(0, 120))") == []
        assert not _page_problems(page)

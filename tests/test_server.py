"""The MCP tools through a real client connected in memory."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from tests.mcp_text import text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(service: MemoryService) -> AsyncIterator[Client]:
    async with Client(build_server(service)) as connected:
        yield connected


async def test_the_client_sees_two_tools_with_limits_and_hints(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"remember", "recall", "navigate", "summarize", "forget"}
    for name in ("recall", "navigate", "summarize"):
        assert tools[name].annotations is not None and tools[name].annotations.read_only_hint
    assert tools["forget"].annotations is not None and tools["forget"].annotations.destructive_hint
    recall_schema = tools["recall"].input_schema["properties"]
    assert recall_schema["k"]["minimum"] == 1 and recall_schema["k"]["maximum"] == 100
    assert tools["remember"].input_schema["properties"]["content"]["maxLength"] == 100_000
    assert tools["recall"].annotations is not None and tools["recall"].annotations.read_only_hint
    assert tools["remember"].output_schema is not None
    assert "recall" in (client.instructions or "") and "remember" in (client.instructions or "")


async def test_remember_then_recall_gives_structured_results(client: Client) -> None:
    stored = await client.call_tool(
        "remember", {"content": "The user's favourite editor is Helix.", "tags": ["tools"], "role": "user"}
    )
    assert not stored.is_error
    assert stored.structured_content is not None
    assert stored.structured_content["deduplicated"] is False
    (leaf_id,) = stored.structured_content["ids"]

    found = await client.call_tool("recall", {"query": "which text editor does the user like?", "k": 3})
    assert not found.is_error and found.structured_content is not None
    top = found.structured_content["hits"][0]
    assert top["id"] == leaf_id and top["kind"] == "leaf" and 0.0 <= top["relevance"] <= 1.0
    assert set(top) >= {"relevance", "time_from", "time_to"} and "text" not in top
    first_line = text_of(found).splitlines()[0]
    assert "The user's favourite editor is Helix." in first_line and leaf_id in first_line

    again = await client.call_tool("remember", {"content": "The user's favourite editor is Helix."})
    assert again.structured_content is not None
    assert again.structured_content["deduplicated"] is True and again.structured_content["ids"] == [leaf_id]


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("remember", {"content": "   "}, "content is empty"),
        ("remember", {"content": "x\x00y"}, "control character"),
        ("remember", {"content": "ok", "timestamp": "tomorrow-ish"}, "ISO 8601"),
        ("remember", {"content": "ok", "namespace": "../../escape"}, "invalid namespace"),
        ("remember", {"content": "x" * 100_001}, "content"),
        ("recall", {"query": "q", "k": 0}, "k"),
        ("recall", {"query": "q", "k": "many"}, "k"),
        ("recall", {}, "query"),
    ],
)
async def test_bad_arguments_are_tool_errors_that_name_the_problem(
    client: Client, service: MemoryService, tool: str, arguments: dict[str, object], message: str
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert message in result.content[0].text  # type: ignore[union-attr]
    assert service.store.namespaces() == []


async def test_the_use_memory_prompt_tells_when_to_recall_and_remember(client: Client) -> None:
    prompt = await client.get_prompt("use-memory")
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "recall" in text and "remember" in text


async def test_the_store_and_model_load_in_the_background_once_tools_are_listed(
    settings,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    MemoryService(settings, embedder=embedder).remember("Loaded before anyone asks.")
    fresh = MemoryService(settings)  # its own embedder: nothing loaded yet
    async with Client(build_server(fresh)) as client:
        await client.list_tools()
        (warm_up,) = [t for t in threading.enumerate() if t.name == "memtree-warm-up"]
        await anyio.to_thread.run_sync(warm_up.join, 60)
        assert not warm_up.is_alive()
        # Nothing was called, yet the namespace is loaded and the model ready.
        assert "default" in fresh.spaces and fresh.embedder_loaded
    fresh.close()


async def test_a_first_recall_and_remember_during_the_background_load_answer_as_after_it(
    settings,
    embedder,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memtree_mcp.service.spaces import Spaces

    first = MemoryService(settings, embedder=embedder)
    for text in ("Biscuit is my golden retriever.", "The staging database listens on port 5433."):
        first.remember(text)
    expected = first.look_up(RecallRequest("Which port does staging use?", k=3))
    first.close()
    reads: list[str] = []
    whole_read = Spaces.reload

    def counted(spaces: Spaces, space: object) -> None:
        reads.append(threading.current_thread().name)
        whole_read(spaces, space)  # type: ignore[arg-type]

    monkeypatch.setattr(Spaces, "reload", counted)
    fresh = MemoryService(settings)  # its own embedder: nothing loaded yet
    async with Client(build_server(fresh)) as client:
        await client.list_tools()  # starts the warm-up; the calls below come while it loads
        recalled = await client.call_tool("recall", {"query": "Which port does staging use?", "k": 3})
        remembered = await client.call_tool("remember", {"content": "Biscuit turned four in May."})
        for warm_up in [t for t in threading.enumerate() if t.name.startswith("memtree-warm-up")]:
            await anyio.to_thread.run_sync(warm_up.join, 60)
    assert not recalled.is_error and not remembered.is_error
    ids = [hit["id"] for hit in recalled.structured_content["hits"]]  # type: ignore[index]
    assert ids == [hit.id for hit in expected.hits]
    assert len(reads) == 1  # read once, by whichever came first; the others waited for it
    memory = fresh.memory()
    assert memory is not None
    assert "Biscuit turned four in May." in {leaf.text for leaf in memory.leaves.values()}
    fresh.close()


async def test_a_question_about_an_early_session_is_answered_from_it(client: Client) -> None:
    early = [
        "Melanie: I signed up for a charity run for mental health awareness.",
        "Caroline: That's wonderful! When is it?",
        "Melanie: This Saturday, 10k along the river.",
    ]
    for i, text in enumerate(early):
        await client.call_tool(
            "remember", {"content": text, "timestamp": f"2023-05-08T13:5{i}:00Z", "session": "session-1"}
        )
    later_topics = ["a new painting", "the camping trip", "a book club", "adoption paperwork", "a concert"]
    for day, topic in enumerate(later_topics, start=1):
        for j in range(3):
            await client.call_tool(
                "remember",
                {
                    "content": f"Caroline: Let me tell you more about {topic}, part {j + 1}.",
                    "timestamp": f"2023-07-{day:02d}T10:0{j}:00Z",
                    "session": f"session-{day + 1}",
                },
            )
    found = await client.call_tool(
        "recall", {"query": "How far was Melanie's charity run?", "k": 3, "kind": "leaf"}
    )
    assert not found.is_error and found.structured_content is not None
    hits = found.structured_content["hits"]
    assert "Melanie: This Saturday, 10k along the river." in text_of(found)
    assert all(h["time_from"].startswith("2023-05-08") for h in hits)


async def test_navigate_summarize_and_forget_through_the_client(client: Client) -> None:
    for i, text in enumerate(
        [
            "The release checklist starts with running the migrations.",
            "The release checklist ends with tagging the commit.",
            "Lunch on Friday is at the Thai place.",
        ]
    ):
        await client.call_tool("remember", {"content": text, "timestamp": f"2024-03-0{i + 1}T10:00:00Z"})
    root = await client.call_tool("navigate", {"tree": "temporal"})
    assert not root.is_error and root.structured_content is not None
    node = root.structured_content
    assert node["kind"] == "root" and node["children"] and "parent" not in node
    down = await client.call_tool("navigate", {"tree": "temporal", "move": "down", "index": 0})
    assert down.structured_content is not None and down.structured_content["parent"] == node["node_id"]
    refused = await client.call_tool("navigate", {"tree": "temporal", "move": "up"})
    assert refused.is_error and "root" in refused.content[0].text  # type: ignore[union-attr]
    walked = await client.call_tool("navigate", {"query": "what ends the release checklist?", "agent": True})
    assert walked.structured_content is not None
    assert walked.structured_content["found"] and walked.structured_content["moves"] is not None

    summary = await client.call_tool("summarize", {"max_tokens": 500})
    assert summary.structured_content is not None and "checklist" in text_of(summary)

    candidates = await client.call_tool("forget", {"query": "Thai lunch"})
    assert candidates.structured_content is not None and candidates.structured_content["deleted"] == []
    lunch = next(line for line in text_of(candidates).splitlines() if "Thai" in line)
    lunch_id = lunch.rsplit("{", 1)[1].rstrip("}")
    assert lunch_id in [c["id"] for c in candidates.structured_content["candidates"]]
    gone = await client.call_tool("forget", {"ids": [lunch_id]})
    assert gone.structured_content is not None and gone.structured_content["deleted"] == [lunch_id]
    after = await client.call_tool("summarize", {"max_tokens": 2000})
    assert after.structured_content is not None and "Thai" not in text_of(after)


async def test_resources_show_a_tree_outline_and_one_node(client: Client) -> None:
    stored = await client.call_tool("remember", {"content": "The backlog review happens every Monday."})
    assert stored.structured_content is not None
    leaf_id = stored.structured_content["ids"][0]
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {"memtree://{namespace}/outline/{tree}", "memtree://{namespace}/node/{node_id}"} <= templates
    outline = await client.read_resource("memtree://default/outline/temporal")
    assert "backlog review" in outline.contents[0].text  # type: ignore[union-attr]
    node = await client.read_resource(f"memtree://default/node/{leaf_id}")
    assert '"kind":"leaf"' in node.contents[0].text  # type: ignore[union-attr]


async def test_with_namespace_auto_the_client_workspace_names_the_memory(
    settings,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    from mcp.types import ListRootsResult, Root

    def workspace(uri: str) -> Any:
        async def roots(_context: object) -> ListRootsResult:
            return ListRootsResult(roots=[Root(uri=uri, name="billing")])

        return roots

    auto = MemoryService(settings.model_copy(update={"namespace": "auto"}), embedder=embedder)
    ana = workspace("file:///home/ana/projects/Billing%20Service")
    async with Client(build_server(auto), list_roots_callback=ana) as client:
        tools = (await client.list_tools()).tools
        assert all("roots" not in t.input_schema.get("properties", {}) for t in tools)
        stored = await client.call_tool("remember", {"content": "Invoices are generated nightly."})
        assert not stored.is_error, stored.content
        assert stored.structured_content is not None
        name = stored.structured_content["namespace"]
        assert re.fullmatch(r"Billing-Service-[0-9a-f]{8}", name), name
        found = await client.call_tool("recall", {"query": "when are invoices generated?"})
        assert found.structured_content is not None and found.structured_content["namespace"] == name
        assert found.structured_content["hits"]
    # Another project in a folder of the same name has its own memory: it recalls nothing of Ana's.
    bob = workspace("file:///home/bob/clients/Billing%20Service/")
    async with Client(build_server(auto), list_roots_callback=bob) as other_project:
        found = await other_project.call_tool("recall", {"query": "when are invoices generated?"})
        assert found.structured_content is not None
        other = found.structured_content["namespace"]
        assert other.startswith("Billing-Service-") and other != name
        assert not found.structured_content["hits"]
    async with Client(build_server(auto)) as no_roots:  # a client without roots gets the default memory
        other = await no_roots.call_tool("remember", {"content": "A note from a client without roots."})
        assert other.structured_content is not None and other.structured_content["namespace"] == "default"
    assert set(auto.store.namespaces()) == {name, "default"}
    auto.close()


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("file:///home/ana/projects/Billing%20Service", "Billing-Service"),
        ("file:///home/ana/projects/Billing%20Service/", "Billing-Service"),
        ("file:///home/ana/%C3%9Cber%20Projekt", "Uber-Projekt"),
        ("file:///home/ana/" + "long-name" * 10, ("long-name" * 10)[:55].rstrip("-_")),
        ("file:///", "workspace"),
        ("file:///home/ana/%E4%B8%AD%E6%96%87", "workspace"),
    ],
)
def test_an_automatic_namespace_is_the_folder_name_and_a_hash_of_its_path(uri: str, expected: str) -> None:
    from mcp.types import ListRootsResult, Root

    from memtree_mcp.config import NAMESPACE_PATTERN
    from memtree_mcp.server.resolvers import namespace_from_roots

    name = namespace_from_roots(ListRootsResult(roots=[Root(uri=uri)]))
    assert name is not None and NAMESPACE_PATTERN.fullmatch(name), name
    assert name.rsplit("-", 1)[0] == expected
    same_path = namespace_from_roots(ListRootsResult(roots=[Root(uri=uri.rstrip("/") or uri)]))
    assert same_path == name  # the same folder always gets the same memory
    elsewhere = namespace_from_roots(ListRootsResult(roots=[Root(uri=uri.replace("/home/ana", "/srv/ana"))]))
    if "/home/ana" in uri:
        assert elsewhere != name and elsewhere is not None and elsewhere.rsplit("-", 1)[0] == expected
    assert namespace_from_roots(None) is None
    assert namespace_from_roots(ListRootsResult(roots=[])) is None


@pytest.mark.anyio
async def test_a_store_failing_under_a_call_is_a_tool_error_that_says_to_retry(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 31: with purges running in another process, a remember could fail with the SDK's bare
    # "Error executing tool remember": Lance's RuntimeError when the files of a version went.
    from memtree_mcp.store.table import NamespaceTable

    service.remember("A memory before the failure.")
    latest = NamespaceTable.latest_version
    failures = iter(
        [RuntimeError("LanceError(IO): Not found: /x/default.lance/_versions/9.manifest (os error 2)")]
    )

    def once_gone(table: NamespaceTable) -> int:
        # The call's own read fails: the server's background threads (its warm-up starts with the
        # first call) read as usual.
        if threading.current_thread().name.startswith("memtree-"):
            return latest(table)
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return latest(table)

    monkeypatch.setattr(NamespaceTable, "latest_version", once_gone)
    async with Client(build_server(service)) as client:
        failed = await client.call_tool("remember", {"content": "A memory during a purge."})
        assert failed.is_error
        text = failed.content[0].text  # type: ignore[union-attr]
        assert "retry the call" in text and "No such file or directory" in text
        assert text.strip() != "Error executing tool remember"  # the SDK's bare one
        again = await client.call_tool("remember", {"content": "A memory during a purge."})
        assert not again.is_error

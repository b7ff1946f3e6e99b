"""`memtree_mcp.cli.client_config`: config paths, rendered snippets and the merging writer."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from memtree_mcp.cli.client_config import CLIENTS, config_path, render, server_entry, write_config
from memtree_mcp.errors import InvalidInput

COMMAND = "/opt/venv/bin/memtree-mcp"
ENV = {"MEMTREE_NAMESPACE": "work"}


def test_clients() -> None:
    assert CLIENTS == ("claude-desktop", "cursor", "vscode", "claude-code")


def test_server_entry() -> None:
    assert server_entry(COMMAND, ENV) == {"command": COMMAND, "args": ["serve"], "env": ENV}
    assert server_entry(COMMAND, {}) == {"command": COMMAND, "args": ["serve"]}


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("darwin", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("linux", ".config/Claude/claude_desktop_config.json"),
        ("win32", "AppData/Roaming/Claude/claude_desktop_config.json"),
    ],
)
def test_claude_desktop_path(
    platform: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("APPDATA", raising=False)
    assert config_path("claude-desktop", home=tmp_path, platform=platform) == tmp_path / expected


def test_claude_desktop_path_uses_appdata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPDATA", str(tmp_path / "roaming"))
    path = config_path("claude-desktop", home=tmp_path / "home", platform="win32")
    assert path == tmp_path / "roaming" / "Claude" / "claude_desktop_config.json"


@pytest.mark.parametrize("platform", ["darwin", "linux", "win32"])
def test_other_paths(platform: str, tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "project"
    assert config_path("cursor", home=home, platform=platform) == home / ".cursor" / "mcp.json"
    assert config_path("vscode", home=home, platform=platform, cwd=cwd) == cwd / ".vscode" / "mcp.json"
    assert config_path("claude-code", home=home, platform=platform) is None


def test_unknown_client_lists_known_ones() -> None:
    for call in (
        lambda: config_path("emacs"),
        lambda: render("emacs", COMMAND, ENV),
        lambda: write_config("emacs", COMMAND, ENV, path=Path("unused.json")),
    ):
        with pytest.raises(InvalidInput) as info:
            call()
        for client in CLIENTS:
            assert client in str(info.value)


@pytest.mark.parametrize(
    ("client", "key", "entry"),
    [
        ("claude-desktop", "mcpServers", {"command": COMMAND, "args": ["serve"], "env": ENV}),
        ("cursor", "mcpServers", {"command": COMMAND, "args": ["serve"], "env": ENV}),
        ("vscode", "servers", {"type": "stdio", "command": COMMAND, "args": ["serve"], "env": ENV}),
    ],
)
def test_render_json(client: str, key: str, entry: dict[str, object]) -> None:
    text = render(client, COMMAND, ENV)
    assert text.endswith("\n")
    assert json.loads(text) == {key: {"memtree": entry}}


def test_render_claude_code() -> None:
    text = render("claude-code", COMMAND, {})
    assert text.strip() == f"claude mcp add memtree -- {COMMAND} serve"
    spaced = "/home/a b/bin/memtree-mcp"
    argv = shlex.split(render("claude-code", spaced, ENV))
    assert argv[:4] == ["claude", "mcp", "add", "memtree"]
    assert argv[argv.index("--") :] == ["--", spaced, "serve"]
    assert "MEMTREE_NAMESPACE=work" in argv


def test_write_config_claude_code_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="claude mcp add"):
        write_config("claude-code", COMMAND, ENV, path=tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_write_creates_file_and_parents(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "mcp.json"
    assert write_config("cursor", COMMAND, ENV, path=path) is None
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    assert json.loads(text) == {"mcpServers": {"memtree": server_entry(COMMAND, ENV)}}
    assert list(path.parent.iterdir()) == [path]  # no backup, no stray temp file


@pytest.mark.parametrize(("client", "key"), [("claude-desktop", "mcpServers"), ("vscode", "servers")])
def test_write_merges_and_backs_up(client: str, key: str, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    other = {"command": "npx", "args": ["-y", "other-server"]}
    original = {
        "globalShortcut": "Ctrl+Space",
        key: {"other": other, "memtree": {"command": "/old/memtree-mcp", "args": ["serve"]}},
        "inputs": [{"id": "token"}],
    }
    original_text = json.dumps(original, indent=4)  # no trailing newline on purpose
    path.write_text(original_text, encoding="utf-8")

    backup = write_config(client, COMMAND, ENV, path=path)
    assert backup is not None and backup.parent == path.parent and backup != path
    assert backup.read_text(encoding="utf-8") == original_text

    written_text = path.read_text(encoding="utf-8")
    assert written_text.endswith("\n")
    written = json.loads(written_text)
    assert written["globalShortcut"] == "Ctrl+Space"
    assert written["inputs"] == [{"id": "token"}]
    assert written[key]["other"] == other
    assert written[key]["memtree"]["command"] == COMMAND
    assert written[key]["memtree"]["env"] == ENV
    assert list(written) == list(original)  # top-level order kept

    # A second write replaces memtree only, and backs up the first result.
    second = write_config(client, "/new/memtree-mcp", {}, path=path)
    assert second is not None and second != backup
    assert second.read_text(encoding="utf-8") == written_text
    again = json.loads(path.read_text(encoding="utf-8"))
    assert again[key]["other"] == other
    assert again[key]["memtree"]["command"] == "/new/memtree-mcp"
    assert "env" not in again[key]["memtree"]
    assert again["globalShortcut"] == "Ctrl+Space"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".bak")) == ["config.json"]


def test_write_adds_servers_key_when_missing(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text('{"theme": "dark"}\n', encoding="utf-8")
    write_config("claude-desktop", COMMAND, ENV, path=path)
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "theme": "dark",
        "mcpServers": {"memtree": server_entry(COMMAND, ENV)},
    }


@pytest.mark.parametrize(
    "content",
    ['{"mcpServers": {', "[1, 2]", '"text"', '{"mcpServers": []}', "// comment\n{}"],
)
def test_invalid_config_refused_and_untouched(content: str, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        write_config("cursor", COMMAND, ENV, path=path)
    message = str(info.value)
    assert str(path) in message
    assert "nothing was changed" in message
    assert path.read_text(encoding="utf-8") == content
    assert list(tmp_path.iterdir()) == [path]  # no backup either


def test_empty_file_is_treated_as_empty_config(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("", encoding="utf-8")
    backup = write_config("cursor", COMMAND, {}, path=path)
    assert backup is not None and backup.read_text(encoding="utf-8") == ""
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "mcpServers": {"memtree": server_entry(COMMAND, {})}
    }


def test_symlinked_config_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "mcp.json"
    target.parent.mkdir()
    target.write_text('{"mcpServers": {}}', encoding="utf-8")
    link = tmp_path / "mcp.json"
    try:
        link.symlink_to(target)
    except OSError:
        pytest.skip("symlinks unavailable")
    write_config("cursor", COMMAND, ENV, path=link)
    assert link.is_symlink()
    assert "memtree" in json.loads(target.read_text(encoding="utf-8"))["mcpServers"]


# -- `memtree-mcp install`: the configuration carries the settings given -----------------------------


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment with no MEMTREE_* variable but those a test sets."""
    import os

    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    return monkeypatch


def _server_env(client: str, printed: str) -> dict[str, str]:
    if client == "claude-code":
        words = shlex.split(printed)
        return dict(words[i + 1].split("=", 1) for i, word in enumerate(words) if word == "--env")
    document = json.loads(printed)
    entry = document["servers" if client == "vscode" else "mcpServers"]["memtree"]
    return dict(entry["env"])


@pytest.mark.parametrize("client", CLIENTS)
def test_install_carries_the_flags_given_into_the_client_configuration(
    client: str, tmp_path: Path, shell: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memtree_mcp.cli import main

    home = tmp_path / "work-memory"
    flags = ["--namespace", "work", "--home", str(home), "--llm", "sampling", "--embedder", "local"]
    assert main(["install", "--client", client, *flags]) == 0
    assert _server_env(client, capsys.readouterr().out) == {
        "MEMTREE_NAMESPACE": "work",
        "MEMTREE_HOME": str(home),
        "MEMTREE_EMBEDDER": "local",
        "MEMTREE_LLM": "sampling",
    }


@pytest.mark.parametrize("client", CLIENTS)
def test_install_carries_the_memtree_variables_of_the_shell_but_not_its_secrets(
    client: str, tmp_path: Path, shell: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memtree_mcp.cli import main

    shell.setenv("MEMTREE_HOME", "~/memtree-from-the-shell")
    shell.setenv("MEMTREE_LLM_TIMEOUT", "20")
    shell.setenv("MEMTREE_LLM_API_KEY", "sk-not-to-be-copied")
    shell.setenv("MEMTREE_AUTH_TOKEN", "only-for-http")
    assert main(["install", "--client", client]) == 0
    printed = capsys.readouterr()
    assert _server_env(client, printed.out) == {
        "MEMTREE_NAMESPACE": "default",
        "MEMTREE_HOME": str(Path("~/memtree-from-the-shell").expanduser()),
        "MEMTREE_LLM_TIMEOUT": "20.0",
    }
    assert "sk-not-to-be-copied" not in printed.out
    assert printed.err.endswith(
        "memtree-mcp: MEMTREE_LLM_API_KEY is set here but not written into the configuration "
        "(secrets stay out of files); add it to the client's env yourself\n"
    )


def test_install_write_carries_the_settings_into_the_file(
    tmp_path: Path, shell: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memtree_mcp.cli import main

    shell.chdir(tmp_path)
    assert (
        main(["install", "--client", "vscode", "--write", "--home", str(tmp_path / "m"), "--llm", "sampling"])
        == 0
    )
    written = json.loads((tmp_path / ".vscode" / "mcp.json").read_text())["servers"]["memtree"]["env"]
    assert written == {
        "MEMTREE_NAMESPACE": "default",
        "MEMTREE_HOME": str(tmp_path / "m"),
        "MEMTREE_LLM": "sampling",
    }


# -- files whose meaning a rewrite would change, comments, read-only files, hard links -----------------


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('{"mcpServers": {}, "mcpServers": {"other": {}}}', "'mcpServers' is given twice"),
        ('{"mcpServers": {"a": {"timeout": NaN}}}', "NaN is not a JSON number"),
        ('{"zoom": Infinity}', "Infinity is not a JSON number"),
        ('{"zoom": -Infinity}', "-Infinity is not a JSON number"),
    ],
)
def test_a_file_a_rewrite_would_change_is_refused_and_untouched(
    content: str, named: str, tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        write_config("cursor", COMMAND, ENV, path=path)
    assert named in str(info.value)
    assert "nothing was changed" in str(info.value)
    assert path.read_text(encoding="utf-8") == content
    assert list(tmp_path.iterdir()) == [path]


JSONC = """// VS Code workspace servers
{
  "servers": {
    /* the linter */
    "lint": {"type": "stdio", "command": "lint-mcp",},  // trailing comma allowed
  },
  "inputs": [],
}
"""


def _jsonc_document(text: str) -> dict[str, object]:
    from memtree_mcp.cli.client_config import blank_comments

    loaded = json.loads(blank_comments(text))
    assert isinstance(loaded, dict)
    return loaded


def test_vscode_comments_and_trailing_commas_are_accepted_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(JSONC, encoding="utf-8")
    write_config("vscode", COMMAND, ENV, path=path)
    text = path.read_text(encoding="utf-8")
    for comment in ("// VS Code workspace servers", "/* the linter */", "// trailing comma allowed"):
        assert comment in text
    document = _jsonc_document(text)
    assert document["servers"] == {
        "lint": {"type": "stdio", "command": "lint-mcp"},
        "memtree": {"type": "stdio", **server_entry(COMMAND, ENV)},
    }
    assert document["inputs"] == []

    # Written again (new settings), the entry is replaced, not added twice, and the comments stay.
    write_config("vscode", COMMAND, {"MEMTREE_HOME": "/elsewhere"}, path=path)
    again = path.read_text(encoding="utf-8")
    assert again.count('"memtree"') == 1 and "/* the linter */" in again
    assert _jsonc_document(again)["servers"]["memtree"]["env"] == {"MEMTREE_HOME": "/elsewhere"}  # type: ignore[index]


def test_vscode_comments_without_a_servers_key_get_one(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{\n  // nothing here yet\n}\n", encoding="utf-8")
    write_config("vscode", COMMAND, ENV, path=path)
    text = path.read_text(encoding="utf-8")
    assert "// nothing here yet" in text
    assert _jsonc_document(text) == {"servers": {"memtree": {"type": "stdio", **server_entry(COMMAND, ENV)}}}


def test_comments_stay_refused_where_the_client_reads_plain_json(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(JSONC, encoding="utf-8")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        write_config("claude-desktop", COMMAND, ENV, path=path)
    assert path.read_text(encoding="utf-8") == JSONC


def test_a_read_only_file_is_left_alone_unless_forced(tmp_path: Path) -> None:
    """By its mode bits, so root (who may write anything) is refused too."""
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {}}', encoding="utf-8")
    path.chmod(0o444)
    with pytest.raises(InvalidInput) as info:
        write_config("cursor", COMMAND, ENV, path=path)
    assert "read-only" in str(info.value) and "--force" in str(info.value)
    assert path.read_text(encoding="utf-8") == '{"mcpServers": {}}'
    assert list(tmp_path.iterdir()) == [path]

    write_config("cursor", COMMAND, ENV, path=path, force=True)
    assert "memtree" in json.loads(path.read_text(encoding="utf-8"))["mcpServers"]
    assert path.stat().st_mode & 0o777 == 0o444  # still read-only afterwards


def test_a_hard_linked_file_is_rewritten_in_place(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"other": {"command": "x"}}}', encoding="utf-8")
    twin = tmp_path / "dotfiles-mcp.json"
    try:
        os.link(path, twin)
    except OSError:
        pytest.skip("hard links unavailable")
    backup = write_config("cursor", COMMAND, ENV, path=path)
    assert backup is not None
    assert path.stat().st_ino == twin.stat().st_ino and path.stat().st_nlink == 2
    assert set(json.loads(twin.read_text(encoding="utf-8"))["mcpServers"]) == {"other", "memtree"}


def test_a_forced_read_only_hard_linked_file_stays_linked_and_read_only(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {}}', encoding="utf-8")
    twin = tmp_path / "twin.json"
    try:
        os.link(path, twin)
    except OSError:
        pytest.skip("hard links unavailable")
    path.chmod(0o444)
    write_config("cursor", COMMAND, ENV, path=path, force=True)
    assert path.stat().st_ino == twin.stat().st_ino
    assert path.stat().st_mode & 0o777 == 0o444
    assert "memtree" in json.loads(twin.read_text(encoding="utf-8"))["mcpServers"]


def test_an_entry_spliced_before_a_member_on_the_brace_s_line_gets_its_own_lines(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{\n  // mine\n  "servers": {"lint": {"command": "x"},},\n}\n', encoding="utf-8")
    write_config("vscode", COMMAND, ENV, path=path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert '    "lint": {"command": "x"},},' in lines
    assert lines[lines.index('    "lint": {"command": "x"},},') - 1] == "    },"

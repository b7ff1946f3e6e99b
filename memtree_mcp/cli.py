"""The ``memtree-mcp`` command: serve the memory over MCP, or use it from a shell.

A thin skin over MemoryService: every command reads the same settings (MEMTREE_* variables,
overridden by flags) and works on the same store as a running server. Each subcommand is one
function in :data:`COMMANDS`; the ones that serve import their machinery only when they run, so
nothing heavy loads before a client's MCP handshake.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import signal
import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from memtree_mcp import __version__, transfer
from memtree_mcp import hook as claude_hook
from memtree_mcp.config import Settings, settings_or_problem, unknown_variables
from memtree_mcp.core.embedding import embedder_setting
from memtree_mcp.core.names import DEFAULT_STRATEGY, KINDS, STRATEGIES, TREES
from memtree_mcp.core.wording import counted
from memtree_mcp.errors import InvalidInput, MemtreeError
from memtree_mcp.hook import HOOK_SECONDS
from memtree_mcp.inputs import INVISIBLE, format_timestamp
from memtree_mcp.sources import SOURCES

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


class Parser(argparse.ArgumentParser):
    """argparse's parser, except that a mistyped command gets the closest one suggested."""

    def error(self, message: str) -> NoReturn:
        typo = re.search(r"argument COMMAND: invalid choice: '([^']*)'", message)
        if typo:
            word = typo.group(1)
            close = difflib.get_close_matches(word, list(COMMANDS), n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"the commands are {', '.join(COMMANDS)}"
            self.exit(2, f"memtree-mcp: unknown command '{word}'; {hint} (memtree-mcp --help)\n")
        super().error(message)


def _common_options() -> Parser:
    # SUPPRESS: a flag left out of a subcommand must not reset the one given before the subcommand.
    common = Parser(add_help=False, argument_default=argparse.SUPPRESS)
    group = common.add_argument_group("settings (override the MEMTREE_* environment variables)")
    group.add_argument("--home", help="store directory (MEMTREE_HOME)")
    group.add_argument("--namespace", help="namespace to use (MEMTREE_NAMESPACE)")
    group.add_argument("--embedder", help="embedder (MEMTREE_EMBEDDER): local, e5-small or litellm:<model>")
    group.add_argument("--llm", help="LLM for summaries (MEMTREE_LLM): none, litellm:<model> or sampling")
    group.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="(MEMTREE_LOG_LEVEL)"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = Parser(
        prog="memtree-mcp",
        description="A long-term memory for agents, organised as trees, served over MCP.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"memtree-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", parents=[common], help="run the MCP server")
    serve.add_argument(
        "--transport", choices=["stdio", "sse", "streamable-http"], default="stdio", help="default stdio"
    )
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    serve.add_argument(
        "--allow-host", action="append", default=[], help="another Host name clients use (repeatable)"
    )
    serve.add_argument(
        "--allow-edit",
        action="store_true",
        help="let the explorer at /ui forget memories (HTTP transports; read-only without it)",
    )

    install = commands.add_parser("install", parents=[common], help="configure an MCP client to use memtree")
    install.add_argument(
        "--client", required=True, choices=["claude-desktop", "cursor", "vscode", "claude-code"]
    )
    install.add_argument("--write", action="store_true", help="merge it into the client's config file")
    install.add_argument(
        "--hooks", action="store_true", help="claude-code: the hooks that recall and remember each turn"
    )
    install.add_argument(
        "--force", action="store_true", help="with --write: replace a read-only config file too"
    )

    remember = commands.add_parser("remember", parents=[common], help="store a memory")
    remember.add_argument("content", help="the text to remember ('-' reads standard input)")
    remember.add_argument("--role", default="user")
    remember.add_argument("--tag", dest="tags", action="append", default=[], help="a tag (repeatable)")
    remember.add_argument("--timestamp", help="ISO 8601 time it happened (default now)")
    remember.add_argument("--session", help="conversation or session id")
    remember.add_argument(
        "--supersedes",
        action="append",
        default=[],
        metavar="ID",
        help="the id of an earlier memory this one updates (repeatable)",
    )
    remember.add_argument("--json", action="store_true", help="print the result as JSON")

    recall = commands.add_parser("recall", parents=[common], help="look up memories")
    recall.add_argument("query")
    recall.add_argument("-k", type=int, default=8, help="how many hits (default 8)")
    recall.add_argument("--max-tokens", type=int, help="budget for the hits' text")
    recall.add_argument(
        "--strategy", default=DEFAULT_STRATEGY, help=f"{', '.join(STRATEGIES)} (default {DEFAULT_STRATEGY})"
    )
    recall.add_argument("--kind", default="any", choices=KINDS)
    recall.add_argument("--as-of", help="recall from memory as it was at this version or ISO 8601 time")
    recall.add_argument(
        "--min-relevance", type=float, help="leave out hits below this relevance, 0 to 1 (0: every hit)"
    )
    recall.add_argument("--json", action="store_true", help="print the result as JSON")

    doctor = commands.add_parser(
        "doctor",
        parents=[common],
        help="check both trees and the indexes of every namespace (exit 1 on problems)",
    )
    doctor.add_argument(
        "--repair", action="store_true", help="rebuild the trees of a namespace with problems"
    )

    _carrying_parsers(commands, common)
    commands.add_parser("namespaces", parents=[common], help="list the namespaces and their memories")
    tree = commands.add_parser("tree", parents=[common], help="print the outline of a tree")
    tree.add_argument("--tree", dest="which", choices=TREES, default="semantic")
    tree.add_argument("--depth", type=int, default=3, help="levels below the root to show (1-20, default 3)")
    tree.add_argument(
        "--max-children", type=int, default=50, help="children shown under each node (default 50; 0: all)"
    )
    ui = commands.add_parser(
        "ui", parents=[common], help="explore the memory in a browser (serves a page on 127.0.0.1)"
    )
    ui.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    ui.add_argument("--allow-edit", action="store_true", help="let the page forget memories")
    ui.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")

    forget = commands.add_parser(
        "forget", parents=[common], help="delete memories: by id, those a query lists, or a whole subtree"
    )
    forget.add_argument("ids", nargs="*", metavar="ID", help="the memories to delete")
    forget.add_argument("--query", help="list the memories this matches; with --yes, delete those listed")
    forget.add_argument(
        "--all-under",
        metavar="NODE",
        help="every memory under NODE (a summary id; semantic-root for the whole namespace); needs --yes",
    )
    forget.add_argument("--yes", action="store_true", help="delete what --query lists or --all-under covers")
    commands.add_parser(
        "purge",
        parents=[common],
        help="remove forgotten memories and earlier versions from disk now (restore cannot undo it)",
    )
    commands.add_parser("history", parents=[common], help="list the versions the store keeps")
    restore = commands.add_parser(
        "restore", parents=[common], help="bring back the memory as it was (writes a new version)"
    )
    restore.add_argument("--to", required=True, help="a version number (see `history`) or an ISO 8601 time")
    restore.add_argument("--yes", action="store_true", help="restore; without it, say what would change")
    reindex = commands.add_parser(
        "reindex",
        parents=[common],
        help="re-embed a namespace with the configured embedder and rebuild its trees",
    )
    reindex.add_argument(
        "--temporal-policy",
        choices=["cosine", "llm"],
        default="cosine",
        help="who draws the temporal segments: cosine (default) or the configured LLM (one call a memory)",
    )
    commands.add_parser(
        "refine", parents=[common], help="write the LLM summaries a namespace still waits for, now"
    )
    return parser


def _carrying_parsers(commands: argparse._SubParsersAction[Parser], common: Parser) -> None:
    """``import``, ``hook`` and ``export``: the commands that carry memories in and out."""
    importer = commands.add_parser("import", parents=[common], help="remember memories from a file or folder")
    importer.add_argument("file", help="the file (a folder for --from markdown)")
    importer.add_argument(
        "--from",
        dest="source",
        default="jsonl",
        choices=SOURCES,
        help="jsonl (an export; the default), mcp-memory (its memory.jsonl), markdown (a folder of notes)",
    )
    importer.add_argument(
        "--map",
        metavar="FIELD=COLUMN,...",
        help="with --from json, jsonl or csv: the columns of content, role, timestamp, session, tags",
    )
    hook = commands.add_parser(
        "hook",
        parents=[common],
        help="for Claude Code hooks: recall for a prompt, remember a turn (JSON on stdin)",
    )
    hook.add_argument(
        "--seconds", type=float, default=HOOK_SECONDS, help="the longest a hook may take (default 1)"
    )
    hook.add_argument(
        "--queue-only", action="store_true", help="Stop: queue the turn; a later --drain stores it"
    )
    hook.add_argument("--drain", action="store_true", help="store the turns Stop queued, then exit")
    exporter = commands.add_parser("export", parents=[common], help="write every memory as JSONL or Markdown")
    exporter.add_argument(
        "file", nargs="?", help="where to write (standard output without it; a folder for markdown)"
    )
    exporter.add_argument(
        "--format", choices=["jsonl", "markdown"], default="jsonl", help="markdown: a note per session"
    )


def flag_settings(args: argparse.Namespace) -> dict[str, str]:
    """The settings given as flags; they take precedence over the environment."""
    flags = {
        "home": getattr(args, "home", None),
        "namespace": getattr(args, "namespace", None),
        "embedder": getattr(args, "embedder", None),
        "llm": getattr(args, "llm", None),
        "log_level": getattr(args, "log_level", None),
    }
    return {key: value for key, value in flags.items() if value is not None}


def _terminal(text: str) -> str:
    """``text`` safe to print: control characters (escape sequences, carriage returns) become '?',
    and invisible ones (bidi overrides, tag characters) are dropped."""
    return "".join(
        "?" if c not in "\n\t" and unicodedata.category(c) == "Cc" else c for c in INVISIBLE.sub("", text)
    )


# -- the commands: each gets the parsed flags, the settings and the service, and returns the exit status


def serve(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.heap import freeze_after_loads
    from memtree_mcp.server import build_server

    freeze_after_loads()  # this process is the service's for life (see heap.collector_paused)
    server = build_server(service)
    if args.transport == "stdio":
        from memtree_mcp.stdio import serve_stdio

        # Ctrl-C is 130 as a shell expects; SIGTERM (how clients stop a server) is a normal stop.
        return 130 if serve_stdio(server) == signal.SIGINT else 0
    from memtree_mcp.transport import serve_http

    def announce(url: str) -> None:
        explorer = url.rsplit("/", 1)[0] + "/ui/"
        print(
            f"memtree-mcp: serving MCP at {url} and the explorer at {explorer} (Ctrl-C to stop)",
            file=sys.stderr,
            flush=True,
        )
        # No handshake tells an HTTP server that a client comes: load the model and the store now,
        # so the first call does not wait for them.
        service.start_warm_up()

    serve_http(
        server,
        transport=args.transport,
        host=args.host,
        port=args.port,
        token=settings.auth_token or None,
        max_body_bytes=settings.max_body_bytes,
        allowed_hosts=args.allow_host,
        ui_service=service,
        ui_allow_edit=args.allow_edit,
        on_ready=announce,
    )
    return 0


def install(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.install import (
        E5_NOTE,
        client_env,
        config_path,
        configured,
        default_command,
        render,
        write_config,
    )

    env, left_out = client_env(settings)
    if args.hooks:
        return _install_hooks(args, env)
    target = config_path(args.client)
    if args.write and target is not None and configured(args.client, default_command(), env, target):
        print(f"memtree is already in {target} as it would be written; nothing changed")
    elif args.write and target is not None:
        backup = write_config(args.client, default_command(), env, path=target, force=args.force)
        print(f"memtree added to {target}" + (f" (the previous file is in {backup})" if backup else ""))
    else:
        print(render(args.client, default_command(), env), end="")
        if target is not None:  # on standard error: standard output stays the JSON to paste
            print(f"memtree-mcp: this goes into {target}; --write merges it there", file=sys.stderr)
    if settings.embedder == "e5-small":
        print(E5_NOTE, file=sys.stderr)
    if left_out:
        secrets = f"{', '.join(left_out)} " + ("is" if len(left_out) == 1 else "are")
        print(
            f"memtree-mcp: {secrets} set here but not written into the configuration "
            "(secrets stay out of files); add it to the client's env yourself",
            file=sys.stderr,
        )
    return 0


def _install_hooks(args: argparse.Namespace, env: dict[str, str]) -> int:
    from memtree_mcp.install import default_command, hooks_settings

    if args.client != "claude-code" or args.write:
        raise InvalidInput(
            "--hooks prints Claude Code's hook settings to paste: use it with --client claude-code, "
            "without --write"
        )
    print(hooks_settings(default_command(), env), end="")
    print(
        "memtree-mcp: paste this into ~/.claude/settings.json (every project) or .claude/settings.json "
        "(this project), beside any hooks already there",
        file=sys.stderr,
    )
    return 0


def remember(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    stored = service.remember(
        content,
        role=args.role,
        tags=args.tags,
        timestamp=args.timestamp,
        session=args.session,
        supersedes=args.supersedes,
    )
    if args.json:
        print(stored.model_dump_json(indent=2))
    else:
        state = "already remembered" if stored.deduplicated else "remembered"
        where = " > ".join(step.label for step in stored.path) or "top level"
        links = f" (supersedes {', '.join(stored.supersedes)})" if stored.supersedes else ""
        print(f"{state}: {', '.join(stored.ids)}{links} (under: {where})")
    return 0


def recall(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.rendering import recall_text

    cut = {} if args.min_relevance is None else {"min_relevance": args.min_relevance}
    found = service.recall(
        args.query,
        k=args.k,
        max_tokens=args.max_tokens,
        strategy=args.strategy,
        kind=args.kind,
        as_of=args.as_of,
        **cut,
    )
    if args.json:
        print(found.model_dump_json(indent=2))
        return 0
    print(_terminal(recall_text(found)))  # what an agent reads, so a person sees the same
    return 0


def doctor(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    names = [settings.namespace] if getattr(args, "namespace", None) else service.store.namespaces()
    if not names:
        print(f"no namespaces yet in {settings.home}: nothing to check")
        return 0
    failed = False
    for name in names:
        report = service.doctor(name, repair=args.repair)
        if not report:
            print(f"{name}: ok")
            continue
        print(f"{name}: {counted(len(report), 'problem', 'problems')}")
        for problem in report[:50]:
            print(f"  {problem}")
        if args.repair:
            left = service.doctor(name)
            print(
                f"{name}: repaired"
                if not left
                else f"{name}: {counted(len(left), 'problem', 'problems')} after repair"
            )
            failed = failed or bool(left)
        else:
            failed = True
    return 1 if failed else 0


def namespaces(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    found = service.namespaces()
    if not found:
        # On standard error: standard output stays one "name<TAB>count" line per namespace.
        print(f"no namespaces yet in {settings.home}", file=sys.stderr)
    for name, count in found:
        print(f"{name}\t{count}")
    return 0


def tree(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.ui.outline import print_outline

    name = service.resolve_namespace()
    print_outline(
        service.memory(name), args.which, args.depth, namespace=name, max_children=args.max_children
    )
    return 0


def ui(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.ui.server import explorer_token, may_open_browser, open_in_browser, serve_ui

    def announce(url: str) -> None:
        print(f"memtree explorer: {url}", flush=True)
        mode = "editing on" if args.allow_edit else "read-only"
        opening = not args.no_browser and may_open_browser()
        where = "opening it in your browser; " if opening else ""
        print(f"({mode}; {where}Ctrl-C to stop)", flush=True)
        if opening:
            open_in_browser(url)

    try:
        serve_ui(
            service,
            port=args.port,
            allow_edit=args.allow_edit,
            # Without MEMTREE_AUTH_TOKEN, one for this run: other local users can reach the port.
            token=explorer_token(settings.auth_token),
            on_ready=announce,
        )
    except OSError as exc:
        print(f"memtree-mcp: cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def forget(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """Delete memories by id, or list what a query finds (the text an agent reads) and with --yes
    delete exactly those listed, or with --all-under NODE --yes every memory under a summary or
    root: the only bulk wipe, a person's own act."""
    from memtree_mcp.rendering import forget_text

    if sum([bool(args.ids), args.query is not None, args.all_under is not None]) != 1:
        raise InvalidInput(
            "give the ids of memories to delete, or --query TEXT to list candidates first, "
            "or --all-under NODE: one of them."
        )
    if args.ids:
        deleted = service.forget(ids=args.ids, limit=None).deleted
    elif args.query is not None:
        listed = service.forget(query=args.query)
        print(_terminal(forget_text(listed, "run `memtree-mcp forget ID...` with their ids, in braces")))
        chosen = [hit.id for hit in listed.candidates]
        if not args.yes:
            if chosen:
                print(
                    f"--yes deletes the {counted(len(chosen), 'memory', 'memories')} listed; "
                    "or forget some of them by id."
                )
            return 0
        deleted = service.forget(ids=chosen, limit=None).deleted if chosen else []
    else:
        if not args.yes:
            count = service.node_view(args.all_under).leaf_count
            print(
                f"{args.all_under} covers {counted(count, 'memory', 'memories')}; nothing deleted. "
                "Add --yes to delete them all."
            )
            return 0
        deleted = service.forget(node_id=args.all_under, confirm=True, limit=None).deleted
    print(f"deleted {counted(len(deleted), 'memory', 'memories')}")
    if deleted and settings.retention > 0:
        print(
            "their text stays on disk, and `memtree-mcp restore` can bring them back, until the namespace "
            "is purged: after MEMTREE_RETENTION, or now with `memtree-mcp purge`."
        )
    return 0


def purge(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    names = [settings.namespace] if getattr(args, "namespace", None) else service.store.namespaces()
    if not names:
        print(f"no namespaces yet in {settings.home}: nothing to purge")
        return 0
    for name in names:
        version = service.purge(name)
        print(
            f"{name}: purged; nothing forgotten is left on disk, and the history starts at version {version}"
        )
    return 0


def history(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """One line a version: its number, time, what wrote it, the memories it added and deleted, and
    how many there were after it (``store/commits.py`` says how that is read from the rows)."""
    for commit in service.commits():
        change = f"+{commit.added} -{commit.removed}"
        print(
            f"{commit.version}\t{format_timestamp(commit.at)}\t{commit.action}\t{change}\t{commit.memories}"
        )
    return 0


def restore(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """Say what restoring would change; only with --yes do it, as ``forget`` does."""
    version, back, gone, now = service.restore_preview(args.to)
    after = now + back - gone
    change = f"{counted(back, 'memory', 'memories')} back and {gone} deleted ({now} now, {after} after)"
    if not args.yes:
        print(f"restoring version {version} would bring {change}; nothing changed. Add --yes to restore.")
        return 0
    before = service.history()[-1][0]
    restored, latest = service.restore(args.to)
    if latest == restored:
        print(f"version {restored} is the memory as it is now: nothing to restore")
    else:
        print(
            f"restored version {restored} as the new version {latest}: {change}; "
            f"`memtree-mcp restore --to {before} --yes` undoes it, until a purge"
        )
    return 0


def reindex(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    count, previous, version = service.reindex(temporal_policy=args.temporal_policy)
    print(
        f"re-indexed {counted(count, 'memory', 'memories')} with "
        f"{embedder_setting(service.embedder.identity)} (built with {embedder_setting(previous)}); "
        f"new version {version}"
    )
    return 0


def refine(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    # Judged first: the links found move stale marks and labels, which sends summaries back to the LLM.
    judged, unjudged = service.judge_pending()
    summaries, waiting = service.refine_pending()
    print(
        f"judged {counted(judged, 'memory', 'memories')} for updates; wrote "
        f"{counted(summaries, 'summary', 'summaries')}; {unjudged + waiting} still waiting"
    )
    return 0 if waiting == 0 and unjudged == 0 else 1


# Commands that only read: a home or namespace that does not exist is a typo more often than not,
# so they say so (and create nothing) instead of answering from an empty memory.
READS = ("recall", "doctor", "tree", "namespaces", "history", "export")


def _nothing_there(args: argparse.Namespace, settings: Settings, service: MemoryService) -> str | None:
    """Why a read-only command has nothing to read (no store at the home, no such namespace), in
    one line naming what exists; None when it has. Reads without creating anything."""
    home = settings.home
    given = (
        "--home"
        if getattr(args, "home", None)
        else "MEMTREE_HOME"
        if "home" in settings.model_fields_set
        else ""
    )
    if "://" not in home and not os.path.isdir(home):
        where = f" ({given})" if given else " (the default home)"
        return (
            f"no store at {home}{where}: nothing has been remembered there; check the path, or "
            "remember something first"
        )
    if args.command == "namespaces" or (args.command == "doctor" and not getattr(args, "namespace", None)):
        return None
    name = service.resolve_namespace()
    names = service.store.namespaces()
    if name in names:
        return None
    there = f"the namespaces there: {', '.join(names)}" if names else "it holds no namespace yet"
    return f"no namespace '{name}' in {home}; {there}"


Command = Callable[[argparse.Namespace, Settings, "MemoryService"], int]

COMMANDS: dict[str, Command] = {
    "serve": serve,
    "install": install,
    "remember": remember,
    "recall": recall,
    "doctor": doctor,
    "import": transfer.import_memories,
    "export": transfer.export_memories,
    "hook": claude_hook.command,
    "namespaces": namespaces,
    "tree": tree,
    "ui": ui,
    "forget": forget,
    "purge": purge,
    "history": history,
    "restore": restore,
    "reindex": reindex,
    "refine": refine,
}
"""What each subcommand of :func:`build_parser` runs."""


class Terminated(Exception):
    """SIGTERM reached a server before it took the signal over: a stop asked for, not a failure."""


def _terminated(_number: int, _frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memtree-mcp`` command; returns the exit status.

    0 on success and when a server is stopped by SIGTERM or by its client; 1 when ``doctor`` or
    ``refine`` leave something undone, and for any error of ``hook`` (Claude Code takes 2 as a
    block); 2 for a refused setting, argument or store; 130 on Ctrl-C; 141 when the reader of
    standard output closed it (a pipe into ``head``).
    """
    # One BLAS thread: scoring a query is one small matrix-vector product, and waking a second
    # thread for it made recall's p95 25 times its p50 on two cores. Set before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Memories are private: every file this process creates is readable by its user only.
    os.umask(0o077)
    args = build_parser().parse_args(argv)
    # A server takes SIGTERM from here until its transport takes it over (and stops in order).
    previous = signal.signal(signal.SIGTERM, _terminated) if args.command == "serve" else None
    try:
        return _run(args)
    except Terminated:
        return 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of standard output went away (``memtree-mcp doctor | head``): stop quietly,
        # as a command killed by SIGPIPE would, with nothing left to flush into the broken pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    for line in unknown_variables(os.environ):
        print(f"memtree-mcp: {line}", file=sys.stderr)
    settings, problem = settings_or_problem(**flag_settings(args))
    if problem is not None:
        print(f"memtree-mcp: {problem}", file=sys.stderr)
        if args.command == "hook":
            return 1  # Claude Code shows it and goes on; 2 would block the user's prompt
        if args.command != "serve":
            return 2
        # A server exiting now would show its client only "connection closed": it starts, answers
        # the handshake, and every call gets this line as its error.
    logging.basicConfig(
        level=settings.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )

    from memtree_mcp.service import MemoryService

    # Only a server writes LLM summaries in the background; a one-shot command leaves them pending.
    service = MemoryService(settings, background=args.command == "serve", unusable=problem)
    try:
        if args.command in READS and (missing := _nothing_there(args, settings, service)) is not None:
            print(f"memtree-mcp: {missing}", file=sys.stderr)
            return 2
        return COMMANDS[args.command](args, settings, service)
    except MemtreeError as exc:
        print(f"memtree-mcp: {exc}", file=sys.stderr)
        return 2
    finally:
        service.close()


if __name__ == "__main__":
    sys.exit(main())

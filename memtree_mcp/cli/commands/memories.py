"""The commands a person uses as an agent uses the tools: remember, recall and forget."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memtree_mcp.cli.commands import Commands, terminal
from memtree_mcp.config import Settings
from memtree_mcp.core.names import DEFAULT_STRATEGY, KINDS, STRATEGIES
from memtree_mcp.core.wording import counted
from memtree_mcp.errors import InvalidInput

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser("remember", parents=[common], help="store a memory")
    parser.add_argument("content", help="the text to remember ('-' reads standard input)")
    parser.add_argument("--role", default="user")
    parser.add_argument("--tag", dest="tags", action="append", default=[], help="a tag (repeatable)")
    parser.add_argument("--timestamp", help="ISO 8601 time it happened (default now)")
    parser.add_argument("--session", help="conversation or session id")
    parser.add_argument(
        "--supersedes",
        action="append",
        default=[],
        metavar="ID",
        help="the id of an earlier memory this one updates (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(run=remember)
    parser = commands.add_parser(
        "link", parents=[common], help="say that a memory updates others, or undo such a link"
    )
    parser.add_argument("newer", metavar="ID", help="the memory that updates the others")
    parser.add_argument(
        "--supersedes", action="append", default=[], metavar="OLDER", help="a memory it updates (repeatable)"
    )
    parser.add_argument(
        "--unlink", action="append", default=[], metavar="OLDER", help="undo its link to OLDER (repeatable)"
    )
    parser.set_defaults(run=link)
    parser = commands.add_parser("recall", parents=[common], help="look up memories")
    parser.add_argument("query")
    parser.add_argument("-k", type=int, default=8, help="how many hits (default 8)")
    parser.add_argument("--max-tokens", type=int, help="budget for the hits' text")
    parser.add_argument(
        "--strategy", default=DEFAULT_STRATEGY, help=f"{', '.join(STRATEGIES)} (default {DEFAULT_STRATEGY})"
    )
    parser.add_argument("--kind", default="any", choices=KINDS)
    parser.add_argument("--as-of", help="recall from memory as it was at this version or ISO 8601 time")
    parser.add_argument(
        "--min-relevance", type=float, help="leave out hits below this relevance, 0 to 1 (0: every hit)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(run=recall)
    parser = commands.add_parser(
        "forget", parents=[common], help="delete memories: by id, those a query lists, or a whole subtree"
    )
    parser.add_argument("ids", nargs="*", metavar="ID", help="the memories to delete")
    parser.add_argument("--query", help="list the memories this matches; with --yes, delete those listed")
    parser.add_argument(
        "--all-under",
        metavar="NODE",
        help="every memory under NODE (a summary id; semantic-root for the whole namespace); needs --yes",
    )
    parser.add_argument("--yes", action="store_true", help="delete what --query lists or --all-under covers")
    parser.set_defaults(run=forget)


def remember(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    stored = service.remember(
        content,
        role=args.role,
        tags=args.tags,
        timestamp=args.timestamp,
        session=args.session,
        supersedes=args.supersedes,
        by="user",
    )
    if args.json:
        print(stored.model_dump_json(indent=2))
        return 0
    state = "already remembered" if stored.deduplicated else "remembered"
    where = " > ".join(step.label for step in stored.path) or "top level"
    links = f" (supersedes {', '.join(stored.supersedes)})" if stored.supersedes else ""
    print(f"{state}: {', '.join(stored.ids)}{links} (under: {where})")
    if stored.redacted:
        kinds = ", ".join(sorted(set(stored.redacted)))
        print(f"redacted {counted(len(stored.redacted), 'secret', 'secrets')} before storing: {kinds}")
    if stored.candidates:
        print(
            f"it may update these; if it replaces one, run `memtree-mcp link {stored.ids[0]} "
            "--supersedes ID`:"
        )
        for candidate in stored.candidates:
            print(terminal(f"  {candidate.id} ({candidate.timestamp[:10]}) {candidate.text}"))
    return 0


def link(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    if not args.supersedes and not args.unlink:
        raise InvalidInput("give --supersedes OLDER to link, or --unlink OLDER to undo a link.")
    links, undone = service.link(args.newer, args.supersedes, args.unlink, by="user")
    if undone:
        print(f"{args.newer} no longer supersedes {', '.join(undone)}")
    print(f"{args.newer} supersedes {', '.join(links) or 'nothing'}")
    return 0


def recall(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.service.rendering import recall_text
    from memtree_mcp.service.requests import RecallRequest

    cut = {} if args.min_relevance is None else {"min_relevance": args.min_relevance}
    request = RecallRequest(
        args.query,
        k=args.k,
        max_tokens=args.max_tokens,
        strategy=args.strategy,
        kind=args.kind,
        as_of=args.as_of,
        **cut,
    )
    found = service.look_up(request)
    if args.json:
        print(found.model_dump_json(indent=2))
        return 0
    print(terminal(recall_text(found)))  # what an agent reads, so a person sees the same
    return 0


def forget(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """Delete memories by id, or list what a query finds (the text an agent reads) and with --yes
    delete exactly those listed, or with --all-under NODE --yes every memory under a summary or
    root: the only bulk wipe, a person's own act."""
    from memtree_mcp.hook.queue import drain_first
    from memtree_mcp.service.rendering import forget_text

    if sum([bool(args.ids), args.query is not None, args.all_under is not None]) != 1:
        raise InvalidInput(
            "give the ids of memories to delete, or --query TEXT to list candidates first, "
            "or --all-under NODE: one of them."
        )
    if not args.ids:  # a turn still queued is found and forgotten too; an id cannot name one
        drain_first(args, settings, service)
    if args.ids:
        deleted = service.forget(ids=args.ids, limit=None).deleted
    elif args.query is not None:
        listed = service.forget(query=args.query)
        print(terminal(forget_text(listed, "run `memtree-mcp forget ID...` with their ids, in braces")))
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

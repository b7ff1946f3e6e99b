"""Keeping a store sound: ``doctor`` checks (and repairs), ``reindex`` re-embeds, ``refine`` writes
what waits for the LLM."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memtree_mcp.cli.commands import Commands
from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import embedder_setting
from memtree_mcp.core.wording import counted
from memtree_mcp.errors import InvalidInput

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser(
        "doctor",
        parents=[common],
        help="check both trees and the indexes of every namespace (exit 1 on problems)",
    )
    parser.add_argument(
        "--repair", action="store_true", help="rebuild the trees of a namespace with problems"
    )
    parser.add_argument(
        "--timezone",
        metavar="ZONE",
        help="with --repair: count the namespace's days in ZONE from now on (an IANA name or UTC), "
        "its temporal tree built again in it once",
    )
    parser.add_argument(
        "--redact",
        action="store_true",
        help="rewrite the memories that hold secrets with markers in their place, and purge the old text",
    )
    parser.set_defaults(run=doctor)
    parser = commands.add_parser(
        "reindex",
        parents=[common],
        help="re-embed a namespace with the configured embedder and rebuild its trees",
    )
    parser.add_argument(
        "--temporal-policy",
        choices=["cosine", "llm"],
        default="cosine",
        help="who draws the temporal segments: cosine (default) or the configured LLM (one call a memory)",
    )
    parser.set_defaults(run=reindex)
    parser = commands.add_parser(
        "refine", parents=[common], help="write the LLM summaries a namespace still waits for, now"
    )
    parser.set_defaults(run=refine)


def doctor(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    if args.redact:  # a turn still queued is stored now, so that its secrets are redacted too
        from memtree_mcp.hook.queue import drain_first

        drain_first(args, settings, service)
    names = [settings.namespace] if getattr(args, "namespace", None) else service.store.namespaces()
    if not names:
        print(f"no namespaces yet in {settings.home}: nothing to check")
        return 0
    if args.timezone is not None and not args.repair:
        raise InvalidInput("--timezone moves a namespace's days to another zone: give it with --repair.")
    failed = False
    for name in names:
        if args.timezone is not None:
            rebuilt = service.upkeep.move_zone(args.timezone, name)
            moved = ", temporal tree rebuilt" if rebuilt else ""
            print(f"{name}: days in {service.upkeep.zones(name)[0]}{moved}")
        used, wanted = service.upkeep.zones(name)
        if used != wanted:
            print(
                f"{name}: days in {used}, the zone stored with it; MEMTREE_TIMEZONE={wanted} is not "
                f"used for it (doctor --repair --timezone {wanted} moves it)"
            )
        report = service.upkeep.doctor(name, repair=args.repair)
        if settings.secrets != "keep" and _secrets(args, service, name):
            failed = True
        if not report:
            print(f"{name}: ok")
            continue
        print(f"{name}: {counted(len(report), 'problem', 'problems')}")
        for problem in report[:50]:
            print(f"  {problem}")
        if args.repair:
            left = service.upkeep.doctor(name)
            print(
                f"{name}: repaired"
                if not left
                else f"{name}: {counted(len(left), 'problem', 'problems')} after repair"
            )
            failed = failed or bool(left)
        else:
            failed = True
    return 1 if failed else 0


def _secrets(args: argparse.Namespace, service: MemoryService, name: str) -> bool:
    """Say which memories of ``name`` hold secrets (kinds, never values), and rewrite them with
    ``--redact``; whether any is left holding one."""
    held = service.upkeep.secrets_held(name)
    for memory_id, kinds in held[:50]:
        print(f"  secrets [{memory_id}]: holds {', '.join(kinds)}")
    if not held:
        return False
    if not args.redact:
        holding = counted(len(held), "memory holds", "memories hold")
        print(f"{name}: {holding} secrets; doctor --redact rewrites them")
        return True
    rewritten = service.upkeep.redact_stored(name)
    done = counted(len(rewritten), "memory", "memories")
    print(f"{name}: {done} rewritten without secrets; old versions purged")
    return bool(service.upkeep.secrets_held(name))


def reindex(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    count, previous, version = service.upkeep.reindex(temporal_policy=args.temporal_policy)
    print(
        f"re-indexed {counted(count, 'memory', 'memories')} with "
        f"{embedder_setting(service.embedder.identity)} (built with {embedder_setting(previous)}); "
        f"new version {version}"
    )
    return 0


def refine(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    # Judged first: the links found move stale marks and labels, which sends summaries back to the LLM.
    judged, unjudged = service.upkeep.judge_pending()
    summaries, waiting = service.upkeep.refine_pending()
    print(
        f"judged {counted(judged, 'memory', 'memories')} for updates; wrote "
        f"{counted(summaries, 'summary', 'summaries')}; {unjudged + waiting} still waiting"
    )
    return 0 if waiting == 0 and unjudged == 0 else 1

"""The versions a store keeps: ``history`` lists them, ``restore`` brings one back, ``purge`` removes
what is forgotten for good."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memtree_mcp.cli.commands import Commands
from memtree_mcp.config import Settings
from memtree_mcp.core.wording import counted
from memtree_mcp.service.inputs import format_timestamp

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser("history", parents=[common], help="list the versions the store keeps")
    parser.set_defaults(run=history)
    parser = commands.add_parser(
        "restore", parents=[common], help="bring back the memory as it was (writes a new version)"
    )
    parser.add_argument("--to", required=True, help="a version number (see `history`) or an ISO 8601 time")
    parser.add_argument("--yes", action="store_true", help="restore; without it, say what would change")
    parser.set_defaults(run=restore)
    parser = commands.add_parser(
        "purge",
        parents=[common],
        help="remove forgotten memories and earlier versions from disk now (restore cannot undo it)",
    )
    parser.set_defaults(run=purge)


def history(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """One line a version: its number, time, what wrote it, the memories it added and deleted, and
    how many there were after it (``store/commits.py`` says how that is read from the rows)."""
    calendar = service.spaces.calendar_of(service.resolve_namespace())
    for commit in service.upkeep.commits():
        change = f"+{commit.added} -{commit.removed}"
        at = format_timestamp(commit.at, calendar)
        print(f"{commit.version}\t{at}\t{commit.action}\t{change}\t{commit.memories}")
    return 0


def restore(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """Say what restoring would change; only with --yes do it, as ``forget`` does."""
    version, back, gone, now = service.upkeep.restore_preview(args.to)
    after = now + back - gone
    change = f"{counted(back, 'memory', 'memories')} back and {gone} deleted ({now} now, {after} after)"
    if not args.yes:
        print(f"restoring version {version} would bring {change}; nothing changed. Add --yes to restore.")
        return 0
    before = service.upkeep.history()[-1][0]
    restored, latest = service.upkeep.restore(args.to)
    if latest == restored:
        print(f"version {restored} is the memory as it is now: nothing to restore")
    else:
        print(
            f"restored version {restored} as the new version {latest}: {change}; "
            f"`memtree-mcp restore --to {before} --yes` undoes it, until a purge"
        )
    return 0


def purge(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.hook.queue import drain_first

    drain_first(args, settings, service)  # a turn queued before a forget is purged with it, not after
    names = [settings.namespace] if getattr(args, "namespace", None) else service.store.namespaces()
    if not names:
        print(f"no namespaces yet in {settings.home}: nothing to purge")
        return 0
    for name in names:
        version = service.upkeep.purge(name)
        print(
            f"{name}: purged; nothing forgotten is left on disk, and the history starts at version {version}"
        )
    return 0

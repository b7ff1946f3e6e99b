"""``memtree-mcp hook``: the command Claude Code's hooks run (the quick path is
:mod:`memtree_mcp.hook.client`, the worker and the rest :mod:`memtree_mcp.hook.worker`)."""

from __future__ import annotations

import argparse

from memtree_mcp.cli.commands import Commands
from memtree_mcp.hook import worker as claude_hook
from memtree_mcp.hook.worker import HOOK_SECONDS


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser(
        "hook",
        parents=[common],
        help="for Claude Code hooks: recall for a prompt, remember a turn (JSON on stdin)",
    )
    parser.add_argument(
        "--seconds", type=float, default=HOOK_SECONDS, help="the longest a hook may take (default 1)"
    )
    parser.add_argument(
        "--queue-only", action="store_true", help="Stop: queue the turn; a later --drain stores it"
    )
    parser.add_argument("--drain", action="store_true", help="store the turns Stop queued, then exit")
    parser.add_argument(
        "--project",
        action="store_true",
        help="the namespace of the repository the session runs in (MEMTREE_HOOK_PROJECT=1)",
    )
    parser.add_argument(
        "--worker", action="store_true", help="serve the hooks of this home until idle (started by the hooks)"
    )
    parser.set_defaults(run=claude_hook.command)

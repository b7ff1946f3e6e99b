"""``memtree-mcp install``: the configuration an MCP client needs, printed or merged into its file."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memtree_mcp.cli.commands import Commands
from memtree_mcp.config import Settings
from memtree_mcp.errors import InvalidInput

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser("install", parents=[common], help="configure an MCP client to use memtree")
    parser.add_argument(
        "--client", required=True, choices=["claude-desktop", "cursor", "vscode", "claude-code"]
    )
    parser.add_argument("--write", action="store_true", help="merge it into the client's config file")
    parser.add_argument(
        "--hooks", action="store_true", help="claude-code: the hooks that recall and remember each turn"
    )
    parser.add_argument(
        "--force", action="store_true", help="with --write: replace a read-only config file too"
    )
    parser.set_defaults(run=install)


def install(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.cli.client_config import (
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
    from memtree_mcp.cli.client_config import default_command, hooks_settings

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
    if "MEMTREE_HOOK_PROJECT" not in env:
        print(
            "memtree-mcp: to keep each repository's memory in a namespace of its own, run this with "
            "MEMTREE_HOOK_PROJECT=1 (the hooks then take the namespace from the session's folder)",
            file=sys.stderr,
        )
    return 0

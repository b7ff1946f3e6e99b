"""The arguments of every command: the settings they share, and each command's own (``commands/``)."""

from __future__ import annotations

import argparse
import difflib
import re
from typing import Any, NoReturn

from memtree_mcp import __version__
from memtree_mcp.cli.commands import (
    hook,
    install,
    memories,
    serve,
    transfer,
    upkeep,
    versions,
    views,
)

# The families of commands, in the order --help lists them.
FAMILIES = (serve, install, memories, upkeep, versions, views, transfer, hook)


class Parser(argparse.ArgumentParser):
    """argparse's parser, except that a mistyped command gets the closest one suggested."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command_names: list[str] = []  # set by build_parser on the top parser

    def error(self, message: str) -> NoReturn:
        typo = re.search(r"argument COMMAND: invalid choice: '([^']*)'", message)
        if typo:
            word, names = typo.group(1), self.command_names
            close = difflib.get_close_matches(word, names, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"the commands are {', '.join(names)}"
            self.exit(2, f"memtree-mcp: unknown command '{word}'; {hint} (memtree-mcp --help)\n")
        super().error(message)


def common_options() -> Parser:
    """The settings every command takes as flags (each overrides its MEMTREE_* variable)."""
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


def build_parser() -> Parser:
    """The ``memtree-mcp`` parser: each parsed command carries ``run``, the function that runs it."""
    common = common_options()
    parser = Parser(
        prog="memtree-mcp",
        description="A long-term memory for agents, organised as trees, served over MCP.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"memtree-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for family in FAMILIES:
        family.add_parsers(commands, common)
    parser.command_names = list(commands.choices)
    return parser


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

"""What each command runs, a module for each family of commands.

Each module adds its commands' parsers (``add_parsers``; each parser's ``run`` default is the
function that runs the command) and holds those functions: ``(args, settings, service) -> exit
status``. A function imports what only it needs when it runs: nothing heavy before a handshake.
"""

from __future__ import annotations

import argparse
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING

from memtree_mcp.config import Settings
from memtree_mcp.service.inputs import INVISIBLE

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService

Command = Callable[[argparse.Namespace, Settings, "MemoryService"], int]
"""What a command runs: the parsed flags, the settings and the service in, the exit status out."""
Commands = argparse._SubParsersAction  # what ``add_subparsers`` returns: commands are added to it


def terminal(text: str) -> str:
    """``text`` safe to print: control characters (escape sequences, carriage returns) become '?',
    and invisible ones (bidi overrides, tag characters) are dropped."""
    return "".join(
        "?" if c not in "\n\t" and unicodedata.category(c) == "Cc" else c for c in INVISIBLE.sub("", text)
    )

"""The run of one ``memtree-mcp`` command: its settings, its service, its exit status."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtree_mcp.cli.commands import Command
from memtree_mcp.cli.parser import build_parser, flag_settings
from memtree_mcp.config import Settings, settings_or_problem, unknown_variables
from memtree_mcp.errors import MemtreeError

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


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
            if getattr(args, "worker", False):  # started by a hook, which says it on its next try
                from memtree_mcp.hook.client import leave_problem
                from memtree_mcp.hook.settings import home_of, key_flags, worker_key

                home = home_of(getattr(args, "home", None))
                leave_problem(home, worker_key(home, os.environ, key_flags(args)), str(problem))
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
        command: Command = args.run
        return command(args, settings, service)
    except MemtreeError as exc:
        print(f"memtree-mcp: {exc}", file=sys.stderr)
        return 2
    finally:
        service.close()

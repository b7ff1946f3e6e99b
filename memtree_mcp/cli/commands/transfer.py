"""The ``import`` and ``export`` commands: memories carried in from a file or folder, and out again.

What each source reads is in :mod:`memtree_mcp.interchange.sources` and
:mod:`memtree_mcp.interchange.markdown`; here, the counts printed, the Ctrl-C message, and the files opened.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from memtree_mcp.cli.commands import Commands
from memtree_mcp.config import Settings
from memtree_mcp.core.wording import counted
from memtree_mcp.errors import InvalidInput
from memtree_mcp.interchange.markdown import write_notes
from memtree_mcp.interchange.sources import SOURCES, Skipped, records_from

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser("import", parents=[common], help="remember memories from a file or folder")
    parser.add_argument("file", help="the file (a folder for --from markdown)")
    parser.add_argument(
        "--from",
        dest="source",
        default="jsonl",
        choices=SOURCES,
        help="jsonl (an export; the default), mcp-memory (its memory.jsonl), markdown (a folder of notes)",
    )
    parser.add_argument(
        "--map",
        metavar="FIELD=COLUMN,...",
        help="with --from json, jsonl or csv: the columns of content, role, timestamp, session, tags",
    )
    parser.set_defaults(run=import_memories)
    parser = commands.add_parser("export", parents=[common], help="write every memory as JSONL or Markdown")
    parser.add_argument(
        "file", nargs="?", help="where to write (standard output without it; a folder for markdown)"
    )
    parser.add_argument(
        "--format", choices=["jsonl", "markdown"], default="jsonl", help="markdown: a note per session"
    )
    parser.set_defaults(run=export_memories)


def _jsonl(lines: Iterable[str], path: str) -> Iterator[object]:
    """The records of a JSONL file, one a line; InvalidInput names a line that is not JSON."""
    try:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InvalidInput(f"{path}, line {number}: not JSON ({exc.msg}).") from None
                except RecursionError:
                    raise InvalidInput(f"{path}, line {number}: nested too deeply to read.") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; give a JSONL file (one JSON object a line)") from None


def _open(path: str, mode: str) -> IO[str]:
    """``path`` opened as UTF-8 text; InvalidInput with the reason when the system refuses."""
    try:
        return open(path, mode, encoding="utf-8")
    except OSError as exc:
        if mode == "r":
            raise InvalidInput(
                f"cannot read {path} ({exc.strerror or exc}); give the path of a JSONL file"
            ) from None
        raise InvalidInput(
            f"cannot write {path} ({exc.strerror or exc}); give a path in a directory you can write to"
        ) from None


def import_memories(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    left_out = Skipped()
    mapping = getattr(args, "map", None)
    if args.source == "jsonl" and mapping is None:
        with _open(args.file, "r") as lines:
            added, skipped = _import(service, _jsonl(lines, args.file))
    else:
        records = records_from(
            args.source, args.file, left_out, limit=settings.max_content_chars, mapping=mapping
        )
        added, skipped = _import(service, records)
    print(f"imported {counted(added, 'memory', 'memories')} ({skipped} already there)")
    if left_out:
        print(f"skipped {left_out.described()}")
    return 0


def _import(service: MemoryService, records: Iterable[object]) -> tuple[int, int]:
    name = service.resolve_namespace()
    before = dict(service.namespaces()).get(name, 0)
    try:
        return service.upkeep.import_memories(records)
    except KeyboardInterrupt:
        # Each batch is committed whole, and a rerun skips what is already stored.
        done = dict(service.namespaces()).get(name, 0) - before
        print(
            f"\ninterrupted: {counted(done, 'memory', 'memories')} imported; run the same import "
            "again to continue (what is already there is skipped)",
            file=sys.stderr,
        )
        raise


def export_memories(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    if args.format == "markdown":
        if not args.file:
            raise InvalidInput(
                "export --format markdown writes a note per session: give a folder to write into"
            )
        files, written = write_notes(service.export_memories(), Path(args.file))
        print(
            f"exported {counted(written, 'memory', 'memories')} "
            f"to {counted(files, 'note', 'notes')} in {args.file}"
        )
        return 0
    out: IO[str] = _open(args.file, "w") if args.file else sys.stdout
    written = 0
    try:
        for record in service.export_memories():
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            written += 1
    finally:
        if out is not sys.stdout:
            out.close()
    if args.file:
        print(f"exported {counted(written, 'memory', 'memories')} to {args.file}")
    return 0

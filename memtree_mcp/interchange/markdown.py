"""Memories as Markdown, both ways: a folder of notes read as memories, and memories written as notes.

Notes (basic-memory, Obsidian): optional YAML front matter (``tags``, ``date`` or ``created``,
``title``), then sections under headings; each section with text is one memory, tagged with the
front matter's tags and the note's title, dated by the front matter (else by the file's time), in
the note's session (its path in the folder). ``[[links]]`` stay in the text as written. The front
matter is read by PyYAML's safe loader without aliases, within :data:`FRONT_MATTER_CHARS` and
:data:`FRONT_MATTER_DEPTH`, so that a hostile note costs no more than its size; one that cannot be
read so is left out, counted, and the note's sections still come over.

An export is one file per session, readable and diff-able: a heading per memory with its id, time,
tags and the ids it supersedes as ``[[links]]``, then its text. Above each heading, an HTML comment
(invisible once rendered) holds the memory's record exactly, so that reading the export back gives
the same memories: same texts, ids, times, sessions, tags and links.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import yaml

from memtree_mcp.core.trees.calendar import UTC_CALENDAR
from memtree_mcp.errors import InvalidInput
from memtree_mcp.service.inputs import MAX_TAG_CHARS, MAX_TAGS

Record = dict[str, Any]

MARKER = re.compile(r"^<!-- memtree (\{.*\}) -->$", re.MULTILINE)
_HEADING = re.compile(r"#{1,6}\s+\S")
_FENCE = re.compile(r"(```|~~~)")
NO_SESSION = "no-session.md"
# A note's front matter is read only within these bounds (a few lines of metadata in any real note):
# PyYAML's composer recurses once a level, and its parser holds the whole text.
FRONT_MATTER_CHARS = 64 * 1024
FRONT_MATTER_DEPTH = 16


# -- reading


def note_records(folder: Path, skipped: Counter[str]) -> Iterator[Record]:
    """The memories of every ``.md`` file under ``folder`` (hidden folders such as ``.obsidian``
    left out), in path order. Raises InvalidInput when ``folder`` is not a folder."""
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder; --from markdown takes a folder of .md notes")
    inside = folder.resolve()
    for path in sorted(folder.rglob("*.md")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if not path.resolve().is_relative_to(inside) or not path.resolve().is_file():
            skipped["note linking outside the folder"] += 1  # a cloned vault's link to ~/.aws/…
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            skipped["note not readable as UTF-8 text"] += 1
            continue
        if _is_export(text):
            yield from exported_records(text, skipped)
        else:  # a plain note, even one carrying a comment that looks like a marker
            yield from _sections(text, relative, path.stat().st_mtime, skipped)


def exported_records(text: str, skipped: Counter[str]) -> Iterator[Record]:
    """The memories of one file ``export --format markdown`` wrote: each marker's record, with the
    text below its heading as the content."""
    for record, heading, body in _markers(text):
        if record is None:
            skipped["memtree marker not a JSON object"] += 1
            continue
        if not _genuine((record, heading, body)):
            # Not written by export (its heading does not name its id): its text is a memory of
            # its own, and what it claims (id, time, links) is ignored.
            skipped["memtree marker the export did not write"] += 1
            record = {}
            body = f"{heading}\n{body}"
        record["content"] = _unescaped(body.strip())
        yield record


Marker = tuple[dict[str, Any] | None, str, str]


def _markers(text: str) -> Iterator[Marker]:
    """Each marker of ``text``: its record (None when not a JSON object), the heading below it and
    the text below that."""
    blocks = MARKER.split(text.replace("\r\n", "\n"))
    # split: [before the first marker, record, block, record, block, ...]
    for at in range(1, len(blocks), 2):
        try:
            record = json.loads(blocks[at])
        except (json.JSONDecodeError, RecursionError):
            record = None
        below = blocks[at + 1].lstrip("\n").split("\n", 1)  # the heading, then the text
        yield (
            record if isinstance(record, dict) else None,
            below[0],
            below[1] if len(below) == 2 else "",
        )


def _is_export(text: str) -> bool:
    """Whether ``text`` is a file ``export --format markdown`` wrote: its title, then markers only,
    each naming the id of the heading below it (a note that quotes or forges a marker is a note)."""
    head = MARKER.split(text.replace("\r\n", "\n"), maxsplit=1)[0].strip()
    if not (head.startswith("# Session ") or head == "# Memories without a session") or "\n" in head:
        return False
    found = list(_markers(text))
    return bool(found) and all(_genuine(marker) for marker in found)


def _genuine(marker: Marker) -> bool:
    """Whether export wrote this marker: a record whose id the heading below it names."""
    record, heading, _ = marker
    return (
        record is not None
        and isinstance(record.get("id"), str)
        and heading.startswith(f"## {{{record['id']}}}")
    )


# A line of a memory's text that reads like a marker is written with a backslash before it.
_MARKER_LIKE = re.compile(r"^(\\*)<!-- memtree ", re.MULTILINE)


def _escaped(text: str) -> str:
    return _MARKER_LIKE.sub(lambda m: "\\" + m.group(1) + "<!-- memtree ", text)


def _unescaped(text: str) -> str:
    return re.sub(r"^\\(\\*<!-- memtree )", r"\1", text, flags=re.MULTILINE)


def _sections(text: str, relative: Path, mtime: float, skipped: Counter[str]) -> Iterator[Record]:
    front, body = front_matter(text)
    if front is None:
        skipped["front matter not read (not YAML, or too big or deep; the note came without it)"] += 1
        front = {}
    title = _plain(front.get("title")) or relative.stem
    # A tag too long is cut, one that is no text dropped: the note's sections come over either way.
    tags = [_tag(tag.lstrip("#")) for tag in _as_list(front.get("tags"))] + [_tag(title)]
    tags = list(dict.fromkeys(tag for tag in tags if tag))[:MAX_TAGS]
    when = _plain(front.get("date") or front.get("created"))
    timestamp = when or datetime.fromtimestamp(mtime, tz=UTC).isoformat()
    session = relative.with_suffix("").as_posix()
    for section in split_sections(body):
        lines = section.strip().split("\n")
        if not "\n".join(lines[1:] if _HEADING.match(lines[0]) else lines).strip():
            skipped["section without text"] += 1
            continue
        yield {"content": section.strip(), "tags": tags, "timestamp": timestamp, "session": session}


def front_matter(text: str) -> tuple[dict[str, object] | None, str]:
    """The YAML front matter of a note (a mapping between ``---`` lines at its top, its keys in
    lower case) and the text after it; ({}, the text) for a note without one. The front matter is
    None when it cannot be read safely: not YAML, not a mapping, longer than
    :data:`FRONT_MATTER_CHARS`, nested deeper than :data:`FRONT_MATTER_DEPTH`, or with an alias
    (``*name``: a few lines of them expand into billions of items)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    try:
        end = next(n for n in range(1, len(lines)) if lines[n].strip() in ("---", "..."))
    except StopIteration:
        return {}, text
    body = "\n".join(lines[end + 1 :])
    source = "\n".join(lines[1:end])
    if len(source) > FRONT_MATTER_CHARS:
        return None, body
    try:
        found = yaml.load(source, Loader=_FrontMatterLoader)  # safe_load's loader, bounded
    except Exception:  # YAMLError, and what its constructors raise on a hostile tag (ValueError…)
        return None, body
    if found is None:
        return {}, body
    if not isinstance(found, dict):
        return None, body
    return {str(key).lower(): value for key, value in found.items()}, body


class _Unsafe(Exception):
    """A front matter that :class:`_FrontMatterLoader` will not build."""


class _FrontMatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader (plain data only: no Python objects) that refuses aliases and nesting
    deeper than :data:`FRONT_MATTER_DEPTH`, both before anything is built, and keeps a date as the
    text the note wrote (the import reads it as remember does: ``parse_timestamp``)."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise _Unsafe("an alias")
        self._depth += 1
        try:
            if self._depth > FRONT_MATTER_DEPTH:
                raise _Unsafe("nested too deeply")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _tag(text: str) -> str:
    return "".join(c for c in " ".join(text.split()) if c.isprintable())[:MAX_TAG_CHARS].strip()


def _as_list(value: object) -> list[str]:
    """Tags as a note gives them: a YAML list, or one text of tags between commas or spaces."""
    if isinstance(value, list):
        return [text for item in value if (text := _plain(item)) and text.strip()]
    if isinstance(value, str):
        return [part for part in re.split(r"[,\s]+", value) if part]
    return [text] if (text := _plain(value)) else []


def _plain(value: object) -> str | None:
    """A YAML scalar as text (``2024`` is a tag too); None for a list, a mapping, a null or a bool."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value)


def split_sections(body: str) -> list[str]:
    """``body`` cut before each heading (``#`` to ``######``) outside fenced code."""
    sections: list[list[str]] = [[]]
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        if not fenced and _HEADING.match(line) and any(part.strip() for part in sections[-1]):
            sections.append([])
        sections[-1].append(line)
    return ["\n".join(section) for section in sections if "\n".join(section).strip()]


# -- writing


def session_file(session: str | None) -> str:
    """The file of a session in an export: its name when that is a safe file name, else a safe
    form with a hash of the name (two sessions never share a file)."""
    if session is None:
        return NO_SESSION
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", session).strip(".-")[:80]
    if safe != session or not safe:
        safe = f"{safe}-{hashlib.sha256(session.encode()).hexdigest()[:8]}".lstrip("-")
    return f"session-{safe}.md"


def write_notes(records: Iterable[Mapping[str, Any]], folder: Path) -> tuple[int, int]:
    """Write ``records`` (as ``export`` gives them) into ``folder``, one file a session, each in
    the order remembered; returns (files, memories). Raises InvalidInput when ``folder`` is a file
    or holds files already (an export never mixes with other notes)."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput(f"{folder} is not an empty folder; give a new or empty folder to export into")
    by_file: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_file.setdefault(session_file(record.get("session")), []).append(record)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, chosen in by_file.items():
            (folder / name).write_text(note_text(chosen), encoding="utf-8", newline="\n")
    except OSError as exc:
        raise InvalidInput(
            f"cannot write into {folder} ({exc.strerror or exc}); give a folder you can write to"
        ) from None
    return len(by_file), sum(len(chosen) for chosen in by_file.values())


def note_text(records: list[Mapping[str, Any]]) -> str:
    """One session's memories as a Markdown note."""
    session = records[0].get("session")
    parts = [f"# Session {session}" if session is not None else "# Memories without a session", ""]
    for record in records:
        meta = {key: value for key, value in record.items() if key != "content"}
        # '>' appears only inside JSON strings: escaped, no text can close the comment early.
        marker = json.dumps(meta, ensure_ascii=False).replace(">", "\\u003e")
        moment = UTC_CALENDAR.iso(datetime.fromisoformat(record["timestamp"]).timestamp())
        heading = [f"{{{record['id']}}}", moment] + ([record["role"]] if record.get("role") != "user" else [])
        if record.get("tags"):
            heading.append("tags: " + ", ".join(record["tags"]))
        if record.get("supersedes"):
            heading.append("supersedes " + " ".join(f"[[{older}]]" for older in record["supersedes"]))
        parts += [
            f"<!-- memtree {marker} -->",
            "## " + " · ".join(heading),
            "",
            _escaped(str(record["content"])),
            "",
        ]
    return "\n".join(parts)

"""Memories kept elsewhere, read as the records ``import`` stores, and memories written as Markdown.

Each source is one function from a path to records (mappings with ``content`` and optionally
``role``, ``timestamp``, ``session``, ``tags``, ``id``, ``supersedes``, as ``export`` writes them)
that counts in a :class:`Skipped` every record it leaves out, with the reason. A record is checked
here as ``remember`` checks it, so one bad record is counted and skipped rather than stopping the
import. A rerun adds nothing twice: the same source gives the same texts, and the writer skips a
text the namespace already holds.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memtree_mcp.core.trees.calendar import UTC_CALENDAR
from memtree_mcp.errors import InvalidInput
from memtree_mcp.interchange.markdown import note_records
from memtree_mcp.secrets.detection import quoted
from memtree_mcp.service.inputs import (
    MAX_TAG_CHARS,
    check_role,
    check_session,
    check_supersedes,
    check_tags,
    check_text,
    memory_timestamp,
)

SOURCES = ("jsonl", "mcp-memory", "markdown", "json", "csv")
"""What ``import --from`` reads: our own JSONL (``export``), the official MCP memory server's
``memory.jsonl``, a folder of Markdown notes, and any JSON, JSONL or CSV with ``--map``."""

Record = dict[str, Any]


class Skipped(Counter[str]):
    """The records a source left out, counted by reason."""

    def described(self) -> str:
        return "; ".join(f"{count} × {reason}" for reason, count in sorted(self.items()))


def records_from(
    kind: str, path: str, skipped: Skipped, *, limit: int, mapping: str | None = None
) -> Iterator[Record]:
    """The records of source ``kind`` at ``path`` that ``remember`` would take (content of at most
    ``limit`` characters); the others counted in ``skipped``. ``mapping`` (``--map``) names the
    columns of a JSON, JSONL or CSV file. Raises InvalidInput for an unknown kind, a bad mapping or
    a path that cannot be read."""
    readers: dict[str, Callable[[Path, Skipped], Iterator[Record]]] = {
        "mcp-memory": mcp_memory_records,
        "markdown": note_records,
    }
    if kind in ("json", "jsonl", "csv"):
        columns = column_map(mapping)
        readers[kind] = lambda path, skipped: mapped_records(kind, path, columns, skipped)
    elif mapping is not None:
        raise InvalidInput(f"--map is for --from json, jsonl or csv; --from {kind} knows its own fields")
    if kind not in readers:
        raise InvalidInput(f"unknown source {quoted(kind)}; --from takes one of {', '.join(SOURCES)}")
    for record in readers[kind](Path(path), skipped):
        if checked(record, skipped, limit) is not None:
            yield record


def checked(record: Record, skipped: Skipped, limit: int) -> Record | None:
    """``record`` if ``remember`` would take it; otherwise None, with the reason counted."""
    try:
        check_text(record.get("content"), "content", limit)
        check_role(record.get("role", "user"))
        check_tags(record.get("tags", ()))
        check_session(record.get("session"))
        if record.get("timestamp") is not None:
            memory_timestamp(record["timestamp"], UTC_CALENDAR)  # whether it is one: any zone will do
        if record.get("id") is not None:
            check_supersedes([record["id"]])
        check_supersedes(record.get("supersedes"))
    except InvalidInput as exc:
        skipped[f"refused ({str(exc).split(';')[0].rstrip('.')})"] += 1
        return None
    return record


def _tag(text: str) -> str:
    return " ".join(text.split())[:MAX_TAG_CHARS]


def _json_lines(path: Path, skipped: Skipped) -> Iterator[object]:
    """The JSON values of a JSONL file; a line that is not JSON is counted, not fatal."""
    try:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError:
                        skipped["line not JSON"] += 1
                    except RecursionError:
                        skipped["line nested too deeply"] += 1
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; give a JSONL file (one JSON object a line)") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path} ({exc.strerror or exc}); give the path of a file") from None


# -- the official MCP memory server (@modelcontextprotocol/server-memory): its memory.jsonl


def mcp_memory_records(path: Path, skipped: Skipped) -> Iterator[Record]:
    """Each observation of an entity as a memory ("Alice: works at Acme") tagged with the entity's
    name and type, and each relation as a memory ("Alice works_at Acme") tagged with both names
    and ``relation``. The server keeps no dates: the memories are dated at the import."""
    for value in _json_lines(path, skipped):
        if not isinstance(value, Mapping):
            skipped["line not a JSON object"] += 1
        elif value.get("type") == "entity":
            yield from _entity(value, skipped)
        elif value.get("type") == "relation":
            parts = [value.get(key) for key in ("from", "relationType", "to")]
            if not all(isinstance(part, str) and part.strip() for part in parts):
                skipped["relation without from, relationType and to"] += 1
                continue
            tags = [_tag(str(parts[0])), _tag(str(parts[2])), "relation"]
            yield {"content": " ".join(str(part).strip() for part in parts), "tags": tags}
        else:
            skipped["record neither entity nor relation"] += 1


def _entity(value: Mapping[str, Any], skipped: Skipped) -> Iterator[Record]:
    name, kind, observations = value.get("name"), value.get("entityType"), value.get("observations")
    if not isinstance(name, str) or not name.strip():
        skipped["entity without a name"] += 1
        return
    if not isinstance(observations, list) or not observations:
        skipped["entity without observations"] += 1
        return
    tags = [_tag(name)] + ([_tag(kind)] if isinstance(kind, str) and kind.strip() else [])
    for observation in observations:
        if not isinstance(observation, str) or not observation.strip():
            skipped["observation not text"] += 1
            continue
        yield {"content": f"{name.strip()}: {observation.strip()}", "tags": tags}


# -- any JSON, JSONL or CSV, with a column mapping

FIELDS = ("content", "role", "timestamp", "session", "tags")
MAP_RULE = (
    "--map takes field=column pairs separated by commas, e.g. content=text,timestamp=created_at; "
    f"the fields are {', '.join(FIELDS)}"
)


def column_map(mapping: str | None) -> dict[str, str]:
    """``--map``'s text as field -> column (a dotted path reaches into JSON objects); each field
    not named is read from the column of its own name. Raises InvalidInput naming what is wrong."""
    columns = {field: field for field in FIELDS}
    for pair in (mapping or "").split(","):
        if not pair.strip():
            continue
        field, equals, column = pair.partition("=")
        if not equals or not column.strip():
            raise InvalidInput(f"--map: {quoted(pair.strip())} is not field=column; {MAP_RULE}")
        if field.strip() not in FIELDS:
            raise InvalidInput(f"--map: {quoted(field.strip())} is not a field; {MAP_RULE}")
        columns[field.strip()] = column.strip()
    return columns


def mapped_records(kind: str, path: Path, columns: Mapping[str, str], skipped: Skipped) -> Iterator[Record]:
    """The rows of a JSON file (an array of objects), a JSONL file or a CSV file (with a header
    line), each read through ``columns``. Tags given as text are split at commas and semicolons; a
    number as timestamp is seconds since 1970."""
    for row in _rows(kind, path, skipped):
        if not isinstance(row, Mapping):
            skipped["row not an object"] += 1
            continue
        record: Record = {}
        for field, column in columns.items():
            value = _column(row, column)
            if value is not None and value != "":
                record[field] = value
        if "content" not in record:
            skipped[f"row without {columns['content']}"] += 1
            continue
        if isinstance(record.get("tags"), str):
            record["tags"] = [tag.strip() for tag in re.split("[,;]", record["tags"]) if tag.strip()]
        moment = record.get("timestamp")
        if isinstance(moment, int | float) and not isinstance(moment, bool):
            try:
                record["timestamp"] = datetime.fromtimestamp(moment, tz=UTC).isoformat()
            except (OverflowError, OSError, ValueError):
                skipped["timestamp out of range"] += 1
                continue
        yield record


def _column(row: Mapping[str, Any], column: str) -> object:
    if column in row:
        return row[column]
    value: object = row
    for step in column.split("."):
        if not isinstance(value, Mapping) or step not in value:
            return None
        value = value[step]
    return value


def _rows(kind: str, path: Path, skipped: Skipped) -> Iterator[object]:
    if kind == "jsonl":
        yield from _json_lines(path, skipped)
        return
    try:
        with path.open(encoding="utf-8-sig", newline="") as file:
            if kind == "csv":
                # A field longer than csv's 131,072 characters is counted by the content check
                # (remember's limit) instead of stopping the rest.
                csv.field_size_limit(max(csv.field_size_limit(), 16 * 1024 * 1024))
                yield from csv.DictReader(file)
                return
            rows = json.load(file)
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; give a {kind.upper()} file") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not JSON ({exc.msg}, line {exc.lineno}); give a JSON array") from None
    except RecursionError:
        raise InvalidInput(
            f"{path} is nested too deeply to read; give a JSON array of flat objects"
        ) from None
    except csv.Error as exc:
        raise InvalidInput(f"{path} is not CSV ({exc}); give a CSV file with a header line") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path} ({exc.strerror or exc}); give the path of a file") from None
    if not isinstance(rows, list):
        raise InvalidInput(f"{path} is not a JSON array; give an array of objects, or --from jsonl")
    yield from rows

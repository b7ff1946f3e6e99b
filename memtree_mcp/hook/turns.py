"""What Claude Code sends a hook, and the turn Stop queues from it.

The event is one JSON object on standard input; the turn is read from the end of the session's
transcript (a JSONL file), redacted under the caller's MEMTREE_SECRETS, and queued as one private
file, written whole then renamed, naming the caller's namespace, time zone and store for the drain.
"""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from memtree_mcp.hook.settings import Caller, log, private_folder, private_open, queue_folder

GIST_CHARS = 600
"""How much of the answer a remembered turn keeps."""
TRANSCRIPT_TAIL = 2_000_000
"""How much of the end of a transcript is read for the last turn."""
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")


class HookInputError(Exception):
    """The hook's input is not what Claude Code sends; the message says what is wrong."""


def read_event(stream: IO[str]) -> dict[str, Any]:
    """The hook's JSON object from ``stream``; HookInputError says what is wrong with it."""
    try:
        event = json.loads(stream.read() or "null")
    except (ValueError, UnicodeDecodeError) as exc:  # ValueError: also an integer of 5,000 digits
        raise HookInputError(f"hook input is not JSON ({exc}); run this from a Claude Code hook") from None
    except RecursionError:
        raise HookInputError(
            "hook input is nested too deeply to read; run this from a Claude Code hook"
        ) from None
    if not isinstance(event, dict):
        raise HookInputError("hook input is not a JSON object; run this from a Claude Code hook")
    name = event.get("hook_event_name")
    if name not in EVENTS:
        shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:60] + "…"
        raise HookInputError(
            f"hook_event_name is {shown}; memtree-mcp hook handles SessionStart, UserPromptSubmit and Stop"
        )
    if name == "UserPromptSubmit" and not isinstance(event.get("prompt"), str):
        raise HookInputError("UserPromptSubmit input has no prompt text; run this from a Claude Code hook")
    if name == "Stop" and not isinstance(event.get("transcript_path"), str):
        raise HookInputError("Stop input has no transcript_path; run this from a Claude Code hook")
    return event


def last_turn(event: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the user's last prompt, the answer) of the session, from the transcript and the event;
    None when the transcript holds no prompt. Raises HookInputError for an unreadable transcript."""
    path = Path(str(event["transcript_path"]))
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # /dev/zero, a FIFO: never read without end
            raise HookInputError(f"the transcript {path} is not a regular file")
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            # The last turn is near the end; a long last answer pushes its prompt further back.
            for tail in (TRANSCRIPT_TAIL, 16 * TRANSCRIPT_TAIL):
                file.seek(max(0, size - tail))
                lines = file.read(tail).decode("utf-8", errors="replace").splitlines()
                turn = _turn_in(lines, event)
                if turn is not None or tail >= size:
                    return turn
            return turn
    except OSError as exc:
        raise HookInputError(f"cannot read the transcript {path} ({exc.strerror or exc})") from None


def _turn_in(lines: list[str], event: Mapping[str, Any]) -> tuple[str, str] | None:
    prompt: str | None = None
    answers: list[str] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue  # the first line of a tail, a line being written, or one no reader takes
        if not isinstance(entry, dict) or not isinstance(entry.get("message"), dict):
            continue
        text = _text(entry["message"].get("content"))
        if entry.get("type") == "user" and text:
            prompt, answers = text, []
        elif entry.get("type") == "assistant" and text:
            answers.append(text)
    answer = event.get("last_assistant_message")
    if not isinstance(answer, str) or not answer.strip():
        answer = answers[-1] if answers else ""
    return (prompt, answer) if prompt else None


def _text(content: object) -> str:
    """The text of a transcript message: a string, or the ``text`` blocks of a list (tool calls
    and tool results are not what the user said)."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [
            block.get("text") for block in content if isinstance(block, dict) and block.get("type") == "text"
        ]
        return "\n".join(part for part in parts if isinstance(part, str)).strip()
    return ""


def gist(answer: str) -> str:
    """The start of ``answer``, cut at a sentence or word end near :data:`GIST_CHARS`."""
    answer = answer.strip()
    if len(answer) <= GIST_CHARS:
        return answer
    cut = answer[:GIST_CHARS]
    end = max(cut.rfind(". "), cut.rfind("\n"))
    if end < GIST_CHARS // 2:
        end = cut.rfind(" ")
    return cut[: end + 1 if end > 0 else GIST_CHARS].rstrip() + " …"


def turn_record(event: Mapping[str, Any], caller: Caller) -> dict[str, Any] | None:
    """The record of the session's last turn, as the drain reads it: what import takes, and the
    caller's namespace, time zone and store (its prompt shortened to fit its
    MEMTREE_MAX_CONTENT_CHARS); None when there is no turn."""
    turn = last_turn(event)
    if turn is None:
        return None
    prompt, answer = turn
    said = f"\n\nAssistant: {gist(answer)}" if answer else ""
    room = caller.content_chars - len("User: ") - len(said)
    if len(prompt) > room:
        prompt = prompt[: max(room - 2, 0)].rstrip() + " …"
    content = (f"User: {prompt}" + said)[: caller.content_chars]
    record: dict[str, Any] = {
        "content": content,
        "tags": ["claude-code"],
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "namespace": caller.namespace,
        "timezone": caller.timezone,
        "store": caller.store,
    }
    if isinstance(event.get("session_id"), str) and event["session_id"].strip():
        record["session"] = event["session_id"][:128]
    return record


def without_secrets(record: dict[str, Any], mode: str, home: str) -> dict[str, Any] | None:
    """``record`` with the secrets of every field it stores (content, role, tags, session) dealt
    with as MEMTREE_SECRETS ``mode`` (the caller's) says; None when ``refuse`` keeps it out. No
    secret of a turn reaches the queue on disk, or the worker. The mode goes with the record, so
    the drain stores it as its caller said (``hook.queue.drain``)."""
    from memtree_mcp.secrets.detection import (  # detect-secrets: when it finds one
        redact_fields,
        redact_record,
    )

    kept = redact_record(record, mode)
    if kept is None:
        held = redact_fields(record, "refuse")[1]
        what = ", ".join(sorted({f"{h.kind} in the {h.field}" for h in held}))
        log(home, f"Stop: the turn holds a secret ({what}) and MEMTREE_SECRETS=refuse: not stored")
        return None
    return kept | {"secrets": mode}


def write_queued(home: str, record: Mapping[str, Any]) -> Path:
    """Add ``record`` to the queue, private (0600): one file a turn, written whole then renamed, so
    that a drain never reads half a record. Raises OSError when the queue cannot be written."""
    folder = private_folder(queue_folder(home))
    os.chmod(folder, 0o700)  # a queue an older version made readable by others
    partial = folder / f".{uuid.uuid4().hex}.tmp"
    with os.fdopen(private_open(partial, os.O_WRONLY | os.O_EXCL), "wb") as file:
        file.write(json.dumps(record, ensure_ascii=False).encode("utf-8"))
    final = folder / f"{time.time_ns()}-{uuid.uuid4().hex[:8]}.json"
    partial.replace(final)
    return final


def queue_turn(event: Mapping[str, Any], caller: Caller) -> bool:
    """Add the session's last turn to the queue, its secrets dealt with as the caller's
    MEMTREE_SECRETS says; False when there is none (or MEMTREE_SECRETS=refuse kept it out)."""
    record = turn_record(event, caller)
    record = without_secrets(record, caller.secrets, caller.home) if record is not None else None
    if record is None:
        return False
    write_queued(caller.home, record)
    return True

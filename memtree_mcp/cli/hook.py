"""``memtree-mcp hook``: automatic capture for Claude Code, run by its hooks with their JSON on stdin.

Input, as Claude Code sends it (hooks reference, checked November 2026): every event carries
``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name``; ``UserPromptSubmit`` adds
``prompt``; ``Stop`` adds ``stop_hook_active`` and, in recent versions, ``last_assistant_message``
(older ones leave the answer to be read from the transcript, a JSONL file of ``user`` and
``assistant`` lines). Exit 0 with a JSON ``hookSpecificOutput.additionalContext`` adds context to
the prompt; exit 2 would block the prompt (or make Claude go on after Stop), so a malformed input
exits 1, which Claude Code shows as a non-blocking error and goes on.

A hook must not stall the client: ``UserPromptSubmit`` gives recall :data:`HOOK_SECONDS` (loading
the model counts) and adds nothing when it is not done by then; ``Stop`` only appends the turn to
a queue file and starts ``memtree-mcp hook --drain`` in the background, which stores the queue.
The writer skips a text the namespace holds already, so a turn queued twice is remembered once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from memtree_mcp.errors import InvalidInput, MemtreeError

if TYPE_CHECKING:
    import argparse

    from memtree_mcp.config import Settings
    from memtree_mcp.service import MemoryService

STARTED = time.monotonic()
"""About when this process started (the CLI imports this module at once): a hook's time counts from here."""
HOOK_SECONDS = 1.0
"""The longest a hook keeps Claude Code waiting."""
GIST_CHARS = 600
"""How much of the answer a remembered turn keeps."""
TRANSCRIPT_TAIL = 2_000_000
"""How much of the end of a transcript is read for the last turn."""
RECALLED = 3
"""Memories added as context to a prompt."""


def queue_folder(settings: Settings) -> Path:
    """Where Stop leaves the turns to store: beside the store when it is local."""
    if "://" in settings.home:
        import platformdirs

        return Path(platformdirs.user_cache_dir("memtree-mcp")) / "hook-queue"
    return Path(settings.home) / "hook-queue"


def read_event(stream: IO[str]) -> dict[str, Any]:
    """The hook's JSON object from ``stream``; InvalidInput says what is wrong with it."""
    try:
        event = json.loads(stream.read() or "null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"hook input is not JSON ({exc}); run this from a Claude Code hook") from None
    if not isinstance(event, dict):
        raise InvalidInput("hook input is not a JSON object; run this from a Claude Code hook")
    name = event.get("hook_event_name")
    if name not in ("UserPromptSubmit", "Stop"):
        raise InvalidInput(f"hook_event_name is {name!r}; memtree-mcp hook handles UserPromptSubmit and Stop")
    if name == "UserPromptSubmit" and not isinstance(event.get("prompt"), str):
        raise InvalidInput("UserPromptSubmit input has no prompt text; run this from a Claude Code hook")
    if name == "Stop" and not isinstance(event.get("transcript_path"), str):
        raise InvalidInput("Stop input has no transcript_path; run this from a Claude Code hook")
    return event


def context_for(prompt: str, service: MemoryService, seconds: float) -> tuple[str | None, bool]:
    """The memories recall finds for ``prompt`` as a few lines (None when there are none), and
    whether recall was done within ``seconds`` (if not, no context, and recall still runs)."""
    found: list[str] = []

    def look() -> None:
        try:
            result = service.recall(prompt, k=RECALLED, min_relevance=0.3)
        except MemtreeError as exc:  # a prompt too long to recall, a store in use: no context
            print(f"memtree-mcp hook: no context ({exc})", file=sys.stderr)
            return
        found.extend(f"- {hit.text}" for hit in result.hits)

    worker = threading.Thread(target=look, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        return None, False
    return ("What memtree remembers that may bear on this:\n" + "\n".join(found)) if found else None, True


def last_turn(event: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the user's last prompt, the answer) of the session, from the transcript and the event;
    None when the transcript holds no prompt. Raises InvalidInput for an unreadable transcript."""
    path = Path(str(event["transcript_path"]))
    try:
        with path.open("rb") as file:
            file.seek(max(0, path.stat().st_size - TRANSCRIPT_TAIL))
            lines = file.read().decode("utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise InvalidInput(f"cannot read the transcript {path} ({exc.strerror or exc})") from None
    prompt: str | None = None
    answers: list[str] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # the first line of a tail, or a line being written
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


def queue_turn(event: Mapping[str, Any], settings: Settings) -> bool:
    """Append the session's last turn to the queue; False when there is no turn to remember."""
    turn = last_turn(event)
    if turn is None:
        return False
    prompt, answer = turn
    content = f"User: {prompt}" + (f"\n\nAssistant: {gist(answer)}" if answer else "")
    record: dict[str, Any] = {
        "content": content,
        "tags": ["claude-code"],
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "namespace": settings.namespace,
    }
    if isinstance(event.get("session_id"), str) and event["session_id"].strip():
        record["session"] = event["session_id"][:128]
    folder = queue_folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    # One file a turn, written whole then renamed: a drain never reads half a record.
    partial = folder / f".{uuid.uuid4().hex}.tmp"
    partial.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    partial.replace(folder / f"{time.time_ns()}-{uuid.uuid4().hex[:8]}.json")
    return True


def start_drain() -> None:
    """``memtree-mcp hook --drain`` in the background, detached: the hook returns at once."""
    subprocess.Popen(
        [sys.executable, "-m", "memtree_mcp", "hook", "--drain"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def drain(settings: Settings, service: MemoryService) -> int:
    """Store every queued turn, one drain at a time; returns how many memories were added."""
    from filelock import FileLock

    folder = queue_folder(settings)
    if not folder.is_dir():
        return 0
    added = 0
    with FileLock(str(folder / ".drain.lock")):
        for path in sorted(folder.glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                namespace = record.pop("namespace", None)
                added += service.import_memories([record], namespace=namespace)[0]
            except (OSError, ValueError, InvalidInput) as exc:
                print(f"memtree-mcp: hook queue: {path.name} left out ({exc})", file=sys.stderr)
            path.unlink(missing_ok=True)
    return added


def run(
    event: Mapping[str, Any], settings: Settings, service: MemoryService, seconds: float, *, store: bool
) -> bool:
    """Do what ``event`` asks: print the context for a prompt, or queue the turn that ended (and,
    with ``store``, start storing it). False when recall was not done in time and still runs."""
    if event["hook_event_name"] == "UserPromptSubmit":
        context, done = context_for(str(event["prompt"]), service, seconds)
        if context:
            output = {
                "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}
            }
            print(json.dumps(output, ensure_ascii=False), flush=True)
        return done
    if queue_turn(event, settings) and store:
        start_drain()
    return True


def command(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """``memtree-mcp hook``. Exit 1 on a malformed input: Claude Code shows it and goes on (2 would
    block the prompt)."""
    if args.drain:
        drain(settings, service)
        return 0
    try:
        event = read_event(sys.stdin)
        left = args.seconds - (time.monotonic() - STARTED) - 0.1  # 0.1: exit, and Python's start
        done = run(event, settings, service, max(left, 0.0), store=not args.queue_only)
    except MemtreeError as exc:
        print(f"memtree-mcp hook: {exc}", file=sys.stderr)
        return 1
    if not done:  # recall still runs in a thread: leave without waiting for it, or closing under it
        sys.stdout.flush()
        os._exit(0)
    return 0

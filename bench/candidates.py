"""Which older memories ``remember`` offers as ones the new memory may update, and what a store
shows once an agent has confirmed them: the current truth as ``core/ranking/candidates.py`` builds it.

Nothing marks a memory superseded but a stored link (the agent's, the user's, an LLM judge's);
``remember`` only offers candidates. This measures the offers and what follows:

1. ``pairs``: each labelled pair alone (a memory of its older text, then the newer one): is the
   older offered? ``bench/update_pairs.py`` (dev: the pairs the finder was tuned on) and
   ``bench/pairs_heldout.py`` (held out: written apart from the finder), by kind and shape, with
   the foreign-language pairs apart. Offers on look-alikes cost an agent a glance, never a mark.
2. ``project``: a project memory remembered in order through the service (``MemoryService``,
   extractive summaries, the default embedder): ``bench/updates_data.py`` (dev) and
   ``bench/heldout_project.py`` (held out). Per memory, what remember offered: for an update,
   whether the memory it changes is among the candidates; for an ordinary memory, whether any is;
   the look-alikes apart. Then, before any agent acts, per question: does a line holding the fresh
   value come before every line holding the stale one (recall, default arguments), and does any
   mark appear (none may). Then the agent confirms each candidate that is the memory it replaces
   (the labels stand in for its understanding; it leaves the others), and the explicit updates
   are remembered with ``supersedes`` from the start: per question, is the stale memory marked
   superseded by the fresh one (``told``), does a subject summary (``summarize`` with the
   question) state the fresh value and not the stale one, does the memory agent's walk
   (``navigate`` with ``agent``) find the fresh value and mark any stale line, and does the whole
   summary state no stale value. ``--llm`` adds the same run with an LLM judge: the loopback fake
   OpenAI server of the tests answering each judgement from the labels (the plumbing, not a model).
3. ``locomo``: every turn of the LoCoMo dev conversations remembered in order (core only, the
   default embedder): candidates offered per 1,000 turns (LoCoMo's turns update almost nothing).
4. ``cost``: the finder's own time for a memory remembered into a store of 10,000 (core, p50/p95
   of 200 calls; the rest of ``remember`` does not change).

    python bench/candidates.py ../shared/bench/locomo/locomo-dev.json --out bench/results/candidates.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import heldout_project
import pairs_heldout
import update_pairs
import updates_data
from latency import machine_info, source_state
from locomo_data import load_conversations

from memtree_mcp.config import Settings
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.candidates import update_candidates
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest

ROOT = Path(__file__).resolve().parents[1]
DAY = 86_400.0


# -- 1. pairs --------------------------------------------------------------------------------------


def offered_alone(embedder: MiniLMEmbedder, older: str, newer: str) -> bool:
    """Whether ``newer``, remembered a day after ``older`` into a memory of that one, offers it."""
    old_vector, new_vector = embedder.embed_batch([older, newer])
    memory = Memory(len(old_vector))
    memory.add_leaf(Leaf(id="old", text=older, vector=old_vector, seq=0, timestamp=1_000.0))
    new = Leaf(id="new", text=newer, vector=new_vector, seq=1, timestamp=1_000.0 + DAY)
    return any(c.leaf.id == "old" for c in update_candidates(memory, new))


def pairs(embedder: MiniLMEmbedder) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sets = {
        "dev (update_pairs.py)": [(p.kind, p.update, p.older, p.newer, "en") for p in update_pairs.PAIRS],
        "held out (pairs_heldout.py)": [
            (p.shape, p.update, p.older, p.newer, p.language) for p in pairs_heldout.PAIRS
        ],
    }
    for name, items in sets.items():
        by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        totals = {
            "updates": [0, 0],
            "lookalikes": [0, 0],
            "foreign_updates": [0, 0],
            "foreign_lookalikes": [0, 0],
        }
        missed: list[str] = []
        for kind, update, older, newer, language in items:
            hit = offered_alone(embedder, older, newer)
            by_kind[kind][0] += hit
            by_kind[kind][1] += 1
            group = ("foreign_" if language != "en" else "") + ("updates" if update else "lookalikes")
            totals[group][0] += hit
            totals[group][1] += 1
            if update and not hit and language == "en":
                missed.append(f"{older} || {newer}")
        out[name] = {
            **{f"{group}_offered": f"{found}/{count}" for group, (found, count) in totals.items()},
            "by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_kind.items())},
            "updates_missed": missed,
        }
    return out


# -- 2. a project memory through the service -------------------------------------------------------


class Item:
    """One memory of a project set, read the same way from either set."""

    def __init__(
        self, key: str, text: str, timestamp: str, session: str, updates: str | None, explicit: bool
    ):
        self.key, self.text, self.timestamp, self.session = key, text, timestamp, session
        self.updates, self.explicit = updates, explicit


Asked = tuple[str, str, str, str, str]  # question, fresh key, stale key, fresh words, stale words


def dev_items() -> tuple[list[Item], list[Asked], set[str]]:
    """updates_data as items, its questions about updated topics and its subjects (what only the
    newest version and the one before it say), and no look-alikes marked."""
    items = [
        Item(
            m.key,
            m.text,
            m.timestamp,
            m.session,
            f"{m.topic}@{m.version - 1}" if m.version > 1 else None,
            False,
        )
        for m in updates_data.MEMORIES
    ]
    questions: list[Asked] = []
    for subject in updates_data.SUBJECTS:
        newest = updates_data.versions(subject.topic)[-1]
        before = max(subject.stale, key=lambda key: updates_data.BY_KEY[key].version)
        questions.append((subject.query, newest, before, subject.newest, subject.stale[before]))
    return items, questions, set()


def heldout_items(foreign: bool = False) -> tuple[list[Item], list[Asked], set[str]]:
    memories = heldout_project.MEMORIES + (heldout_project.FOREIGN if foreign else [])
    items = [Item(m.key, m.text, m.timestamp, m.session, m.updates, m.explicit) for m in memories]
    by_key = {m.key: m for m in memories}
    asked = heldout_project.QUESTIONS + (heldout_project.FOREIGN_QUESTIONS if foreign else [])
    questions = [(q.question, q.key, by_key[q.key].updates or "", q.fresh, q.stale) for q in asked]
    return items, questions, set(heldout_project.LOOKALIKE_KEYS)


def lines_of(text: str) -> list[tuple[str, bool, str]]:
    """recall's lines as (text, marked superseded, id)."""
    found = []
    for line in text.splitlines():
        got = re.match(r"^\d+\. \[(?P<facts>[^\]]*)\] (?P<text>.*) \{(?P<id>[a-z0-9-]+)\}$", line)
        if got:
            found.append((got["text"], "superseded by" in got["facts"], got["id"]))
    return found


def project(
    embedder: MiniLMEmbedder,
    items: Sequence[Item],
    questions: Sequence[Asked],
    lookalikes: set[str],
    llm: Any = None,
) -> dict[str, Any]:
    """Protocol, 2: one project memory through the service in a fresh store."""
    from memtree_mcp.service.rendering import navigate_text, recall_text

    with tempfile.TemporaryDirectory(prefix="memtree-candidates-") as home:
        settings = Settings(home=home, **(llm or {"llm": "none"}))
        service = MemoryService(settings, embedder=embedder)
        try:
            leaf_of: dict[str, str] = {}
            offers: Counter[str] = Counter()
            offered_on: dict[str, list[str]] = {}
            for item in items:
                links = [leaf_of[item.updates]] if item.explicit and item.updates else None
                stored = service.remember(
                    item.text, timestamp=item.timestamp, session=item.session, supersedes=links
                )
                leaf_of[item.key] = stored.ids[0]
                offered = [c.id for c in stored.candidates]
                offered_on[item.key] = offered
                if item.updates and not item.explicit:
                    offers["updates"] += 1
                    offers["updates_named"] += leaf_of[item.updates] in offered
                elif item.updates is None:
                    offers["ordinary"] += 1
                    offers["ordinary_offered"] += bool(offered)
                    offers["ordinary_candidates"] += len(offered)
                    if item.key in lookalikes:
                        offers["lookalikes"] += 1
                        offers["lookalikes_offered"] += bool(offered)
            if llm and not service.judging.wait_idle(timeout=600):
                raise RuntimeError(f"the judge did not finish: {service.judging.worker.failing}")

            def fresh_first(question: str, fresh: str, stale: str) -> tuple[bool, int]:
                found = lines_of(recall_text(service.look_up(RecallRequest(question))))
                ids = [node_id for _, _, node_id in found]
                marks = sum(marked for _, marked, _ in found)
                new, old = leaf_of[fresh], leaf_of[stale]
                first = new in ids and (old not in ids or ids.index(new) < ids.index(old))
                return first, marks

            implicit = {item.key for item in items if item.updates and not item.explicit}
            asked = [question for question in questions if question[1] in implicit]
            before = [fresh_first(q, fresh, stale) for q, fresh, stale, _, _ in asked]
            # The agent confirms each candidate that is the memory its memory replaces.
            for item in items:
                if item.updates and not item.explicit and leaf_of[item.updates] in offered_on[item.key]:
                    service.remember(
                        item.text,
                        timestamp=item.timestamp,
                        session=item.session,
                        supersedes=[leaf_of[item.updates]],
                    )
            told = summaries = walks = 0
            summary_misses: list[dict[str, str]] = []
            for question, fresh, stale, fresh_words, stale_words in asked:
                memory = service.memory()
                assert memory is not None
                told += memory.links.current_of(leaf_of[stale]) == leaf_of[fresh]
                summary = service.summarize(query=question).summary
                stated = fresh_words in summary and not _states(summary, stale_words)
                summaries += stated
                if not stated:
                    summary_misses.append({"question": question, "summary": summary})
                walked = navigate_text(service.navigate(query=question, agent=True))
                walks += fresh_words in walked and not _states(walked, stale_words)
            whole = service.summarize(max_tokens=4000).summary
            stale_stated = [words for _, _, _, _, words in questions if _states(whole, words)]
            explicit = [item for item in items if item.explicit]
            memory = service.memory()
            assert memory is not None
            explicit_told = sum(
                memory.links.current_of(leaf_of[i.updates or ""]) == leaf_of[i.key] for i in explicit
            )
        finally:
            service.close()
    n = len(asked)
    return {
        "memories": len(items),
        "updates_named_when_remembered": f"{offers['updates_named']}/{offers['updates']}",
        "ordinary_offered_any": f"{offers['ordinary_offered']}/{offers['ordinary']}",
        "candidates_per_1000_ordinary": round(
            1000 * offers["ordinary_candidates"] / max(offers["ordinary"], 1), 1
        ),
        "lookalikes_offered_any": f"{offers['lookalikes_offered']}/{offers['lookalikes']}",
        "before_the_agent": {
            "newest_first": f"{sum(first for first, _ in before)}/{len(before)}",
            "marks": sum(marks for _, marks in before),
        },
        "after_the_agent": {
            "told": f"{told}/{n}",
            "subject_summaries": f"{summaries}/{n}",
            "navigate_agent": f"{walks}/{n}",
            "whole_summary_stale_values": len(stale_stated),
            "explicit_links": f"{explicit_told}/{len(explicit)}",
            "subject_summaries_missed": summary_misses,
        },
    }


def _states(text: str, stale: str) -> bool:
    """Whether ``text`` states the stale value (``stale``, words only the old memory holds)
    unmarked: on a line with no note beside it saying it was superseded or changed later."""
    return any(
        stale in line and "superseded" not in line and "changed later" not in line
        for line in text.splitlines()
    )


# -- 3. LoCoMo -------------------------------------------------------------------------------------


def locomo(embedder: MiniLMEmbedder, data: Path) -> dict[str, Any]:
    turns = offered = candidates = 0
    for conversation in load_conversations(data, None):
        vectors = embedder.embed_batch([turn.text for turn in conversation.turns])
        memory = Memory(vectors.shape[1])
        for seq, (turn, vector) in enumerate(zip(conversation.turns, vectors, strict=True)):
            leaf = Leaf(id=f"t{seq}", text=turn.text, vector=vector, seq=seq, timestamp=turn.timestamp)
            found = update_candidates(memory, leaf)
            turns += 1
            offered += bool(found)
            candidates += len(found)
            memory.add_leaf(leaf)
    return {
        "turns": turns,
        "turns_offered_any_per_1000": round(1000 * offered / turns, 1),
        "candidates_per_1000": round(1000 * candidates / turns, 1),
    }


# -- 4. cost ---------------------------------------------------------------------------------------


def cost(embedder: MiniLMEmbedder, data: Path, size: int = 10_000, calls: int = 200) -> dict[str, Any]:
    texts = [turn.text for conversation in load_conversations(data, None) for turn in conversation.turns]
    corpus = [f"{texts[i % len(texts)]} (note {i})" for i in range(size + calls)]
    vectors = embedder.embed_batch(corpus)
    memory = Memory(vectors.shape[1])
    memory.load(
        [
            Leaf(id=f"m{i}", text=corpus[i], vector=vectors[i], seq=i, timestamp=1e9 + 60 * i)
            for i in range(size)
        ],
        [],
    )
    times = []
    for i in range(size, size + calls):
        leaf = Leaf(id=f"m{i}", text=corpus[i], vector=vectors[i], seq=i, timestamp=1e9 + 60 * i)
        started = time.perf_counter()
        update_candidates(memory, leaf)
        times.append(1000 * (time.perf_counter() - started))
    times.sort()
    return {
        "memories": size,
        "calls": calls,
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * len(times)) - 1], 3),
    }


def judge_settings(server: Any) -> dict[str, Any]:
    return {
        "llm": "litellm:openai/oracle",
        "llm_api_base": server.url,
        "llm_api_key": "sk-test",
        "llm_retries": 0,
    }


def oracle_for(items: Iterable[Item]) -> Any:
    """The fake model's answer to a judgement, from the labels: ``updates`` for the memory the
    new one changes, ``unrelated`` for every other; a summary is its entries verbatim."""
    by_text = {item.text: item for item in items}
    key_text = {item.key: item.text for item in by_text.values()}
    fence = re.compile(r"<<<([A-Z_]+)>>>\n(.*?)\n<<<END_\1>>>", re.S)

    def answer(body: Any) -> str:
        blocks = fence.findall(body["messages"][-1]["content"])
        new = next((by_text.get(t.strip()) for name, t in blocks if name == "NEW_MEMORY"), None)
        if new is None:
            return " ".join(" ".join(t.split()) for _, t in blocks) or "Nothing."
        earlier = [t.strip() for name, t in blocks if name == "EARLIER_MEMORY"]
        target = key_text.get(new.updates or "")
        return "\n".join(
            f"{i}: {'updates' if t == target else 'unrelated'}" for i, t in enumerate(earlier, 1)
        )

    return answer


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the LoCoMo dev split (locomo-dev.json)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/candidates.json"))
    parser.add_argument(
        "--llm", action="store_true", help="also run the project sets with a scripted LLM judge"
    )
    args = parser.parse_args(argv)
    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    report: dict[str, Any] = {
        "benchmark": "update candidates offered by remember, and the current truth after"
    }
    report["pairs"] = pairs(embedder)
    report["project"] = {
        "dev (updates_data.py)": project(embedder, *dev_items()),
        "held out (heldout_project.py)": project(embedder, *heldout_items()),
        "held out, with its foreign pairs": project(embedder, *heldout_items(foreign=True)),
    }
    if args.llm:
        sys.path.insert(0, str(ROOT))
        from tests.fake_openai import fake_openai

        items, questions, lookalikes = heldout_items()
        with fake_openai() as server:
            server.reply_for = oracle_for(items)
            report["project"]["held out, LLM judge (scripted)"] = project(
                embedder, items, questions, lookalikes, judge_settings(server)
            )
    report["locomo"] = locomo(embedder, args.data)
    report["cost"] = cost(embedder, args.data)
    report.update(
        {
            "wall_seconds": round(time.perf_counter() - started, 1),
            "machine": machine_info(),
            "source": source_state(),
            "command": shlex.join([sys.executable, *sys.argv]),
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        json.dumps({k: v for k, v in report.items() if k in ("pairs", "project", "locomo", "cost")}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

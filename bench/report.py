"""Rewrite the figures table at the top of docs/benchmarks.md from bench/results/NAME.json.

    python bench/report.py            # rewrite the block between the figures markers
    python bench/report.py --check    # exit 1 if the block is not what the results say
    python bench/report.py --print    # print the block, write nothing

For each living benchmark of ``bench/run.py`` it reads ``bench/results/NAME.json`` and writes one
row: the main figures, the result file, the command recorded in that file (the one that produced
it) and the code it ran (the ``git_head`` the result recorded, else the commit that added the
file). A benchmark without a result file is listed as not yet run. Nothing is measured here.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from run import BENCHES, RESULTS, ROOT

DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"
CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial")


def n(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def pct(value: float | None) -> str:
    return "–" if value is None else f"{round(100 * value)} %"


def shown_command(recorded: str) -> str:
    """The recorded command with the interpreter's path and the LoCoMo data's absolute path shortened."""
    text = re.sub(r"^\S*python3?(\.\d+)? ", "python ", recorded.strip())
    text = re.sub(r"\S*/shared/bench/locomo/", "../shared/bench/locomo/", text)
    return re.sub(r"/work/[\w.-]+/bench/", "bench/", text)


def locomo(d: dict[str, Any]) -> list[str]:
    rows = []
    # gather (the default strategy) first, with its categories
    order = sorted(d["strategies"].items(), key=lambda item: item[0] != "gather")
    for number, (name, found) in enumerate(order):
        r = found["overall"]
        text = f"`{name}` R@5 / 10 / 25: **{n(r['R@5'], 1)} / {n(r['R@10'], 1)} / {n(r['R@25'], 1)}**"
        if number == 0:
            by = {k.split(" ", 1)[1]: v["R@10"] for k, v in found["per_category"].items()}
            text += " (R@10 " + ", ".join(f"{c} {n(by.get(c), 1)}" for c in CATEGORIES) + ")"
        rows.append(text)
    base = d.get("baselines", {})
    if base:
        rows.append("flat R@10: " + ", ".join(f"{k} {n(v['overall']['R@10'], 1)}" for k, v in base.items()))
    rows.append(f"{d['questions']} questions, {d['turns']:,} turns, {len(d['conversations'])} conversations")
    return rows


def updates(d: dict[str, Any]) -> list[str]:
    m, u = d["metrics"]["all"], d["metrics"]["updated"]
    return [
        f"answer first / in top 3: **{pct(m['top1'])} / {pct(m['top3'])}** "
        f"(changed facts {pct(u['top1'])} / {pct(u['top3'])})",
        f"newest above every older version: {pct(m['newer_above_older'])}; older versions marked "
        f"superseded {pct(m['older_marked_superseded'])} (current ones wrongly marked: "
        f"{m['current_marked_superseded']})",
        f"never-stored questions with at most one hit: {pct(d['metrics']['unrelated']['at_most_one_hit'])}; "
        f"characters read per recall mean / max {n(m['text_chars_mean'])} / {n(m['text_chars_max'])}",
        f"tools/list {n(d['tools_list']['total_chars'])} characters",
        *links(d.get("links", {})),
    ]


def links(found: dict[str, Any]) -> list[str]:
    """Who marks updates: nobody, the agent, explicit links, the LLM path (scripted verdicts)."""
    names = {
        "none": "nobody (no link)",
        "agent": "the agent, confirming remember's candidates",
        "explicit": "explicit links",
        "llm": "the LLM path (scripted verdicts)",
    }
    return [
        f"{names.get(way, way)}: real update pairs handled **{r['pairs_handled']}/{r['pairs']}**, "
        f"false marks {r['false_marks']} (precision {n(r['precision'], 2)}, recall {n(r['recall'], 2)}); "
        f"updated questions handled {r['questions_handled']}/{r['questions']}"
        for way, r in found.items()
    ]


def candidates(d: dict[str, Any]) -> list[str]:
    held = d["project"]["held out (heldout_project.py)"]
    after = held["after_the_agent"]
    pairs = d["pairs"]["held out (pairs_heldout.py)"]
    named, offered = held["updates_named_when_remembered"], held["ordinary_offered_any"]
    return [
        f"held-out project memory: remember names the memory an update changes **{named}**, offers "
        f"any candidate on {offered} ordinary memories; before any agent acts, the newer first "
        f"**{held['before_the_agent']['newest_first']}**",
        f"after the agent confirms: told {after['told']}, subject summaries {after['subject_summaries']}, "
        f"memory agent {after['navigate_agent']}, stale values in the whole summary "
        f"{after['whole_summary_stale_values']}, explicit links {after['explicit_links']}",
        f"held-out pairs alone: updates offered {pairs['updates_offered']}, look-alikes "
        f"{pairs['lookalikes_offered']} (offers, never marks); LoCoMo dev: "
        f"{n(d['locomo']['turns_offered_any_per_1000'])} turns of 1,000 offered any; finder "
        f"{n(d['cost']['p50_ms'], 2)} ms p50 at {d['cost']['memories']:,} memories",
    ]


def per_case(d: dict[str, Any], line: Callable[[dict[str, Any]], str]) -> list[str]:
    """One row per code version of a side-by-side benchmark (``bench/cases.py``): its name, its
    commit and ``line`` of its summary."""
    rows = []
    for name, s in d["summary"].items():
        commit = d["cases"][name].get("commit")
        code = f" (code {commit[:7]})" if commit else ""
        rows.append(f"`{name}`{code}: {line(s)}")
    return rows


def template_recall(d: dict[str, Any]) -> list[str]:
    return per_case(
        d,
        lambda s: (
            f"recall p50 **{n(s['recall']['p50_ms'])} ms** ({s['recall']['vs_first']}×), "
            f"remember p50 {n(s['remember']['p50_ms'])} ms ({s['remember']['vs_first']}×)"
        ),
    )


def after_import(d: dict[str, Any]) -> list[str]:
    return per_case(
        d,
        lambda s: (
            f"remember p50 **{n(s['p50_ms'], 1)} ms** ({s['vs_first']}×), "
            f"p95 {n(s['p95_ms'], 1)} ms; import {n(s['import']['memories_per_s'])} memories/s"
        ),
    )


def time_order(d: dict[str, Any]) -> list[str]:
    s = d["summary"]
    return [
        f"{d['memories']:,} memories: remember p50 in time order **{n(s['in_order']['p50_ms'], 1)} ms**, "
        f"out of it **{n(s['out_of_order']['p50_ms'], 1)} ms** ({d['out_of_order_vs_in_order_p50']}×; "
        f"p95 {n(s['in_order']['p95_ms'], 1)} / {n(s['out_of_order']['p95_ms'], 1)} ms); "
        f"doctor problems afterwards {len(d['doctor_problems'])}"
    ]


def hook(d: dict[str, Any]) -> list[str]:
    warm, stops = d["warm_prompts"], d["stops"]
    return [
        f"{d['memories']:,} memories, each hook a fresh process: prompts after the first p50 / p95 "
        f"**{n(warm['p50_ms'])} / {n(warm['p95_ms'])} ms**, context for **{d['context']}/{d['prompts']}** "
        f"(the memory asked about named {d['named_the_memory']}/{d['prompts']}); session start "
        f"{n(d['session_start_ms'])} ms and first prompt {n(d['first_prompt_ms'])} ms (cold); Stop p50 "
        f"{n(stops['p50_ms'])} ms; turns stored {d['turns_stored']}; worker RSS {n(d['worker_rss_mib'])} MiB"
    ]


def secrets(d: dict[str, Any]) -> list[str]:
    corpus, cost = d["corpus"], d["cost"]
    return [
        f"false alarms: LoCoMo dev **{d['locomo']['redactions']}** in {d['locomo']['turns']:,} turns "
        f"({d['locomo']['per_1000']} per 1,000), engineering memories **{d['engineering']['redactions']}** "
        f"of {d['engineering']['memories']}; fake secrets caught **{corpus['caught']}/{corpus['secrets']}** "
        f"({corpus['kinds']} kinds), held out **{d['heldout']['caught']}/{d['heldout']['secrets']}** "
        f"({d['heldout']['kinds']} kinds)",
        f"{cost['memories']:,} memories: remember p50 {n(cost['remember_p50_ms']['redact'], 1)} ms with "
        f"redaction, {n(cost['remember_p50_ms']['keep'], 1)} ms without (**{cost['more_p50_ms']:+} ms**); "
        f"the detector {cost['detector_p50_ms']} ms a memory",
    ]


def sessions(d: dict[str, Any]) -> list[str]:
    rows = []
    for key, what in (("with_session_ids", "with session ids"), ("without_session_ids", "cut by silences")):
        part = d[key]
        summaries = part["period_summaries"]
        rows.append(
            f"{what}: **{part['lowest_segments']}** lowest segments for {d['memories']} memories in "
            f"{d['sessions']} sessions (at most {part['most_segments_in_a_session']} a session), "
            f"**{part['nodes_cutting_a_session']}** nodes cutting a session; agent top-1 temporal "
            f"**{part['agent_top1_temporal']['right']}/{part['agent_top1_temporal']['of']}**, semantic "
            f"{part['agent_top1_semantic']['right']}/{part['agent_top1_semantic']['of']}; period summaries "
            f"quoting another day {summaries['quoting_outside']}/{summaries['of']}"
        )
    return rows


def scale(d: dict[str, Any]) -> list[str]:
    rows = []
    for size, e in d["sizes"].items():
        rec, rem = e["recall"], e["remember"]["total"]
        by = rec.get("service_recall_by_strategy") or {"all": rec["service_recall"]}
        recall = ", ".join(f"{k} {n(v['p50'], 1)}" for k, v in by.items())
        load = f"load {e['loadavg_at_start'][0]} → {e['loadavg_at_end'][0]}"
        replayed = "; vectors replayed" if e.get("vectors_replayed_from") else ""
        rows.append(
            f"**{int(size):,}**: remember p50 / p95 {n(rem['p50'], 1)} / {n(rem['p95'], 1)} ms; "
            f"service recall p50 {recall} ms (query embedding {n(rec['embedding_only']['p50'], 1)}, "
            f"in memory {n(rec['memory_recall_only']['p50'], 1)}); store {n(e['store_mib'], 1)} MiB; "
            f"RSS after reopen {n(e['reopen']['rss_mib_store_loaded'])} MiB; first recall of a fresh "
            f"process {n(e['reopen']['first_recall_ms'])} ms; import {n(e['import']['memories_per_s'])}/s "
            f"({load}{replayed})"
        )
    return rows


def million(d: dict[str, Any]) -> list[str]:
    rows = []
    for size, e in d["sizes"].items():
        index, answers, stdio = e["index"], e["answers"], e["stdio"]
        modes = "; ".join(
            f"{mode}: recall p50 / p95 {n(s['recall_ms']['p50'], 1)} / {n(s['recall_ms']['p95'], 1)} ms, "
            f"first recall {n(s['first_recall_from_spawn_ms'])} ms from spawn, "
            f"RSS {n(s['rss_after_first_recall_mib'])} → {n(s['rss_after_recalls_mib'])} MiB"
            + (
                f" (own {n(s['memory_after_recalls_mib']['anon'])} MiB)"
                if "memory_after_recalls_mib" in s
                else ""
            )
            + f", remember p50 {n(s['remember_ms']['p50'], 1)} ms"
            for mode, s in stdio.items()
        )
        three = e.get("three_servers")
        shared = (
            f"; three servers on the home after a recall each: RSS {n(three['sum_mib']['rss'])} MiB in all, "
            f"own {n(three['sum_mib']['anon'])} MiB, PSS {n(three['sum_mib']['pss'])} MiB"
            if three
            else ""
        )
        rows.append(
            f"**{int(size):,}**: ANN recall@10 {pct(index['ann_recall_at_10'])}, exact top 10 in the "
            f"shortlist of {index['shortlist']} {pct(index['exact_top10_in_shortlist'])}; answers identical "
            f"{pct(answers['identical_answers'])}, exact hits kept {pct(answers['exact_hits_found'])}; "
            f"look_up p50 index {n(answers['look_up_ms']['index']['p50'], 1)} ms, exact "
            f"{n(answers['look_up_ms']['exact']['p50'], 1)} ms; index built in {n(e['index_build_s'], 1)} s; "
            f"MCP stdio {modes} (load {stdio['index']['load'][0][0]} → {stdio['exact']['load'][-1][0]})"
            f"{shared}"
        )
    return rows


def s3(d: dict[str, Any]) -> list[str]:
    def requests(found: dict[str, int]) -> str:
        return " + ".join(f"{v} {k}" for k, v in found.items())

    return [
        f"requests per remember (median): **{requests(d['requests_per_remember_median'])}**, "
        f"per recall: **{requests(d['requests_per_recall_median'])}**",
        f"{d['memories']} memories on {d['server']}; latencies on loopback say nothing of a bucket",
    ]


def multiclient(d: dict[str, Any]) -> list[str]:
    rows = []
    for key, e in d["runs"].items():
        follow = [s["follow_ms"].get("p50") for s in e["servers_log"] if s["follow_ms"].get("n")]
        after = e["recall_after_foreign_remember"]
        rows.append(
            f"**{key}**: recall after another server's remember p50 / p95 **{n(after['p50'])} / "
            f"{n(after['p95'])} ms** ({e['ratio_p50_after_remember_to_quiet']}× quiet "
            f"{n(e['quiet_recall']['p50'])} ms); after a forget {n(e['recall_after_foreign_forget']['p50'])} "
            f"ms; follow p50 {', '.join(n(f, 1) for f in follow)} ms; remember "
            f"{n(e['remember_on_server_0']['p50'])} ms (load {e['loadavg_at_start'][0]})"
        )
    return rows


def bigwrite(d: dict[str, Any]) -> list[str]:
    rows = []
    for key, label in (("one_remember", "one"), ("three_at_once", "three at once")):
        e = d[key]
        rss, recall = e["rss_mb"], e["recall_during_ms"]
        rows.append(
            f"{label} ({n(e['chars_each'])} characters each): **{e['seconds']} s**, RSS {n(rss['before'])} → "
            f"{n(rss['peak'])} → {n(rss['after'])} MB; recalls meanwhile median {n(recall['median'])} ms, "
            f"max {n(recall['max'])} ms ({recall['count']})"
        )
    return rows


def longrun(d: dict[str, Any]) -> list[str]:
    long, fresh = d["long_running"], d["fresh"]
    return [
        f"RSS after {n(d['remembers'])} remembers over stdio and {n(d['idle_seconds'])} s idle "
        f"**{n(long['rss_mb_after_idle'])} MB**, a fresh server on the same store "
        f"{n(fresh['rss_mb_after_idle'])} MB: ratio **{d['ratio']}** (target ≤ {d['target']})"
    ]


def coldstart(d: dict[str, Any]) -> list[str]:
    m = d["median_ms"]
    return [
        f"spawn → tools/list, median of {d['runs']}: memtree-mcp **{n(m['memtree'])} ms**, bare MCP "
        f"server {n(m['bare'])} ms, ratio **{m['ratio']}** (target ≤ 1.5)"
    ]


def _case_commit(d: dict[str, Any], name: str) -> str:
    """`` (code <commit>)`` for a case whose commit was recorded; a folder on the machine that ran
    it means nothing to a reader, so it is never shown."""
    commit = d["cases"][name].get("commit")
    return f" (code {commit[:7]})" if commit else ""


def firstcall(d: dict[str, Any]) -> list[str]:
    rows = []
    runs = max((len(v["recall"]) for v in d["runs"].values()), default=0)
    for name, s in d["summary"].items():
        rows.append(
            f"`{name}`{_case_commit(d, name)}: first recall **{n(s['first_recall_ms_median'])} ms**, first "
            f"remember **{n(s['first_remember_ms_median'])} ms**, tools/list "
            f"{n(s['tools_list_ms_median_recall_runs'])} ms (medians of {runs})"
        )
    load = d.get("loadavg_at_start")
    if load:
        rows.append(f"load {load[0]} → {d['loadavg_at_end'][0]}")
    return rows


def firstcall_http(d: dict[str, Any]) -> list[str]:
    rows = []
    for name, s in d["summary"].items():
        rows.append(
            f"`{name}`{_case_commit(d, name)}: first recall after 5 s up "
            f"**{n(s['first_recall_ms_median'])} ms**, the next {n(s['second_recall_ms_median'])} ms "
            f"(**{s['first_over_second']}×**; medians of {len(d['runs'][name])})"
        )
    return rows


def bucket_soak(d: dict[str, Any]) -> list[str]:
    c = d["remember_under_contention"]
    return [
        f"{d['writers']} servers × {d['remembers_per_writer']} remembers, {d['forgets_acked']} forgets "
        f"on one namespace: errors **{d['errors']}**, acked lost **{d['acked_lost']}**, stored twice "
        f"**{d['stored_twice']}**, forgotten back **{d['forgotten_back']}**, doctor problems "
        f"**{d['doctor_problems']}**, recalls working {d['recalls_working']}, identical recalls afterwards "
        f"{d['identical_recalls_afterwards']}; remember p50 {n(c['p50'])} ms, p95 {n(c['p95'])} ms; "
        f"{d['wall_s']} s (load {d['machine'].get('loadavg_1_5_15', ['?'])[0]})"
    ]


def bucket_lone(d: dict[str, Any]) -> list[str]:
    base, this = d["remember_baseline"], d["remember_this"]
    return [
        f"lone writer, remember p50 **{n(this['p50'])} ms** with the lease against {n(base['p50'])} ms at "
        f"{d['baseline_rev']}: ratio **{d['p50_ratio']}** (target ≤ 1.5; {d['rounds']} interleaved rounds of "
        f"{d['remembers_per_run']}, load {d['machine'].get('loadavg_1_5_15', ['?'])[0]})"
    ]


def multilingual(d: dict[str, Any]) -> list[str]:
    rows = []
    for name, found in d["embedders"].items():
        if "skipped" in found:
            rows.append(f"{name}: skipped ({found['skipped']})")
            continue
        methods = found["methods"]
        parts = []
        for kind, label in (("english", "EN→foreign"), ("own", "own language")):
            g, dense = methods["gather"][kind], methods["dense"][kind]
            parts.append(
                f"{label} gather R@1 / R@5 **{n(g['R@1'], 1)} / {n(g['R@5'], 1)}** "
                f"(shown {n(g['shown'], 1)}; dense {n(dense['R@1'], 1)} / {n(dense['R@5'], 1)})"
            )
        rows.append(f"{name}: " + "; ".join(parts))
    return rows


def embedders(d: dict[str, Any]) -> list[str]:
    rows = []
    for name in d["embedders"]:
        parts = []
        found = d.get("locomo", {}).get(name)
        if found:
            g = found["gather"]
            by = {k.split(" ", 1)[1]: v for k, v in g["R@10 by category"].items()}
            parts.append(
                f"LoCoMo gather R@5 / 10 / 25 **{n(g['R@5'], 1)} / {n(g['R@10'], 1)} / {n(g['R@25'], 1)}** "
                "(R@10 " + ", ".join(f"{c} {n(by.get(c), 1)}" for c in CATEGORIES) + f"), hybrid R@10 "
                f"{n(found['hybrid']['R@10'], 1)}, flat dense R@10 {n(found['flat dense']['R@10'], 1)}"
            )
        rounds = d.get("scale_10k", {}).get(name, [])
        if rounds:
            parts.append(
                "10k: remember p50 **"
                + " / ".join(n(r["remember_p50_ms"], 1) for r in rounds)
                + " ms**, recall p50 **"
                + " / ".join(n(r["recall_p50_ms"], 1) for r in rounds)
                + " ms**, import "
                + " / ".join(n(r["import_seconds"]) for r in rounds)
                + " s, RSS "
                + " / ".join(n(r["rss_mib_store_loaded"]) for r in rounds)
                + " MiB"
            )
        first = d.get("firstcall_10k", {}).get(name)
        if first:
            parts.append(f"first recall after the handshake {n(first['first_recall_ms_median'])} ms")
        rows.append(f"{name}: " + "; ".join(parts))
    return rows


FIGURES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "multilingual": multilingual,
    "embedders": embedders,
    "bucket-soak": bucket_soak,
    "bucket-lone": bucket_lone,
    "locomo": locomo,
    "sessions": sessions,
    "time-order": time_order,
    "hook": hook,
    "secrets": secrets,
    "updates": updates,
    "candidates": candidates,
    "template-recall": template_recall,
    "after-import": after_import,
    "scale": scale,
    "million": million,
    "scale-s3-moto": s3,
    "multiclient": multiclient,
    "bigwrite": bigwrite,
    "longrun": longrun,
    "coldstart": coldstart,
    "firstcall": firstcall,
    "firstcall-http": firstcall_http,
}


def entries(d: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-size or per-run entries of a result that merges several runs (scale, multiclient)."""
    found = d.get("sizes") or d.get("runs")
    return [e for e in found.values() if isinstance(e, dict)] if isinstance(found, dict) else []


def recorded_commands(d: dict[str, Any]) -> list[str]:
    if "command" in d:
        return [d["command"]]
    return [e["command"] for e in entries(d) if "command" in e]


def code_of(d: dict[str, Any], path: Path) -> str:
    """The code a result ran: the git HEAD it recorded (marked when the package had uncommitted
    changes), else the commit that brought the result in (``recorded_at``, or the last commit that
    changed the file)."""
    heads: dict[str, bool] = {}
    for source in [d.get("source", {}), *(e.get("source", {}) for e in entries(d))]:
        if source.get("git_head"):
            dirty = any("memtree_mcp/" in line for line in source.get("git_status", []))
            heads[source["git_head"][:7]] = heads.get(source["git_head"][:7], False) or dirty
    if heads:
        return ", ".join(
            f"code {h}" + (" + uncommitted changes" if dirty else "") for h, dirty in heads.items()
        )
    if d.get("recorded_at"):
        return f"recorded at {d['recorded_at']}"
    last = subprocess.run(
        ["git", "log", "-1", "--format=%h", "--", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    ).stdout.strip()
    return f"recorded at {last}" if last else "commit unknown"


def block() -> str:
    lines = [
        START,
        "<!-- Generated by `python bench/report.py` from bench/results/<name>.json: do not edit by hand. -->",
        "",
        "| benchmark | figures | result file, and the command that produced it |",
        "|---|---|---|",
    ]
    for name in BENCHES:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            lines.append(f"| `{name}` | not yet run: `python bench/run.py {name}` | – |")
            continue
        found = json.loads(path.read_text())
        figures = "<br>".join(FIGURES[name](found))
        commands = "<br>".join(f"`{shown_command(c)}`" for c in recorded_commands(found)) or "not recorded"
        source = f"`bench/results/{name}.json` ({code_of(found, path)})<br>{commands}"
        lines.append(f"| `{name}` | {figures} | {source} |")
    lines += [
        "",
        "Rerun any row with `python bench/run.py NAME` (its canonical arguments: `python bench/run.py "
        "--list`), then `python bench/report.py`. Times come from a 2-core machine shared with other "
        "work: read them with the load average they record.",
        END,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the docs' block is out of date")
    parser.add_argument("--print", action="store_true", help="print the block only")
    args = parser.parse_args(argv)
    new = block()
    if args.print:
        print(new)
        return 0
    text = DOC.read_text()
    if START not in text or END not in text:
        print(f"{DOC}: no {START} ... {END} block", file=sys.stderr)
        return 1
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    updated = head + new + tail
    if args.check:
        if updated != text:
            print(f"{DOC.relative_to(ROOT)}: figures table out of date (python bench/report.py)")
            return 1
        return 0
    if updated != text:
        DOC.write_text(updated)
        print(f"rewrote the figures table of {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One door to the living benchmarks: each name runs one script with its canonical arguments.

    python bench/run.py --list                    # the names, what each measures, its command
    python bench/run.py NAME [NAME ...]           # writes bench/results/NAME.json
    python bench/run.py NAME --quick              # a small smoke size, written under the temp dir
    python bench/run.py NAME --dry-run            # print the command, run nothing
    python bench/run.py NAME -- EXTRA ARGS        # appended to the script's arguments

Run from the repository root. The canonical arguments are those of the current figures in
docs/benchmarks.md; after a canonical run, ``python bench/report.py`` rewrites the figures table
at the top of that file from bench/results/. A ``--quick`` run never overwrites a canonical
result: it writes to ``<temp dir>/memtree-bench-quick/NAME.json`` unless ``--out`` says where.

The scripts import memtree_mcp from ``PYTHONPATH`` first, then from this checkout (so
``PYTHONPATH=/other/checkout python bench/run.py NAME`` measures another checkout). Benchmarks
are timed on a 2-core machine shared with other work: each result records the load average.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
DEFAULT_DATA = "../shared/bench/locomo/locomo-dev.json"
SCRATCH = Path(tempfile.gettempdir()) / "memtree-bench"


@dataclass(frozen=True)
class Bench:
    script: str
    what: str
    args: tuple[str, ...]
    quick: tuple[str, ...] = ()  # the whole argument list of --quick (empty: as canonical)
    needs: str = ""
    out_flag: str | None = "--out"  # None: {out} is placed in args


# Placeholders: {data} the LoCoMo JSON, {store} a kept store, {out} the result file, {scratch}
# a work directory under the temp dir.
BENCHES: dict[str, Bench] = {
    "locomo": Bench(
        "locomo.py",
        "Quality: LoCoMo dev turn-evidence recall@5/10/25 and by category of gather, hybrid, "
        "collapsed and the propagate strategies, next to flat dense/BM25/RRF baselines, through "
        "the service (about 15 min).",
        ("{data}", "--strategies", "gather,hybrid,collapsed,propagate-down,propagate-up"),
        quick=("{data}", "--strategies", "gather,hybrid", "--limit", "1"),
        needs="the LoCoMo dev split (--data)",
    ),
    "multilingual": Bench(
        "multilingual.py",
        "Multilingual memory: German, Spanish, French and Japanese memories beside English ones, "
        "recalled by English (cross-language) and own-language questions, R@1/R@5 and what a default "
        "recall shows, for the default and the e5-small embedder (e5 skipped without the [e5] extra; "
        "~1 min).",
        (),
    ),
    "embedders": Bench(
        "embedders.py",
        "The default and the e5-small embedder end to end in one run: LoCoMo dev gather/hybrid, the "
        "multilingual benchmark, 10k import/remember/recall/RSS interleaved over 2 rounds, and the "
        "first call after the handshake on the 10k stores (needs the [e5] extra; ~40 min).",
        ("{data}", "--scratch", "{scratch}/embedders"),
        quick=("{data}", "--skip", "locomo,scale,firstcall", "--scratch", "{scratch}/embedders-quick"),
        needs="the LoCoMo dev split (--data) and the [e5] extra",
    ),
    "sessions": Bench(
        "sessions.py",
        "The temporal tree over five sessions of eight unrelated turns (with and without session "
        "ids): lowest segments, nodes cutting a session, the memory agent's top-1 in each tree for "
        "14 questions, period summaries quoting another day (~1 min).",
        (),
    ),
    "time-order": Bench(
        "time_order.py",
        "Time in order at 10,000 memories: remember p50/p95 of a memory in time order and of one "
        "out of it (backdated into past days, sessions and months), taking turns in one process; "
        "doctor's problems afterwards (~3 min, the store kept under the scratch directory).",
        ("--workdir", "{scratch}/time-order"),
        quick=("--memories", "600", "--rounds", "6", "--workdir", "{scratch}/time-order-quick"),
    ),
    "hook": Bench(
        "hook.py",
        "Claude Code's hooks as Claude Code runs them on 10,000 memories: a session start, then 20 "
        "prompts and turns, each hook a fresh process; latency of each (cold first, then warm), "
        "context arrived, the worker's RSS, turns stored (~2 min).",
        ("--workdir", "{scratch}/hook"),
        quick=("--memories", "600", "--turns", "5", "--workdir", "{scratch}/hook-quick"),
    ),
    "secrets": Bench(
        "secret_redaction.py",
        "Secrets at the door: redactions on every LoCoMo dev turn and on 200 ordinary engineering "
        "memories (each listed), fake secrets of 18+ kinds caught, and remember p50 with redaction "
        "against without at 10,000 memories (~2 min).",
        ("{data}", "--workdir", "{scratch}/secrets"),
        quick=("{data}", "--memories", "600", "--rounds", "10", "--workdir", "{scratch}/secrets-quick"),
        needs="the LoCoMo dev split (--data)",
    ),
    "updates": Bench(
        "updates.py",
        "Quality of what the model reads: answers to questions about facts changed later (newest "
        "first, older marked superseded), hits per answer, characters read, tools/list size; and who "
        "marks updates: nobody, the agent confirming remember's candidates, explicit links, the LLM "
        "path with scripted verdicts (~1 min).",
        (),
    ),
    "candidates": Bench(
        "candidates.py",
        "The current truth: which older memories remember offers as ones a new memory may update "
        "(labelled pairs, dev and held out; a project memory, dev and held out, with what recall, "
        "summaries and the memory agent show before and after an agent confirms them, and with a "
        "scripted LLM judge; LoCoMo dev offers per 1,000 turns; the finder's cost at 10k; ~3 min).",
        ("{data}", "--llm"),
        needs="the LoCoMo dev split (--data)",
    ),
    "template-recall": Bench(
        "template_recall.py",
        "A store of look-alike memories: 10,000 of one template, recall and remember p50 through MCP "
        "stdio, code versions taking turns (4ac89d6, before the update rule judged pairs at read "
        "time, against this checkout; ~6 min).",
        (
            "--case",
            "4ac89d6={scratch}/code-4ac89d6",
            "--case",
            "now={root}",
            "--workdir",
            "{scratch}/template",
        ),
        quick=(
            "--case",
            "now={root}",
            "--size",
            "300",
            "--rounds",
            "1",
            "--recalls",
            "6",
            "--remembers",
            "2",
            "--workdir",
            "{scratch}/template-quick",
        ),
        needs="for the canonical run, 4ac89d6's code in {scratch}/code-4ac89d6 (git archive 4ac89d6 "
        "memtree_mcp | tar -x -C it, and its commit in COMMIT)",
    ),
    "after-import": Bench(
        "after_import.py",
        "Remember right after a bulk import: 10,000 memories imported by each code version's own "
        "`memtree-mcp import` (default embedder), then a fresh server on a fresh copy of that store and "
        "60 remembers at once through MCP stdio, 4a36e47 and this checkout taking turns over 3 rounds "
        "(~5 min).",
        (
            "{data}",
            "--case",
            "4a36e47={scratch}/code-4a36e47",
            "--case",
            "now={root}",
            "--workdir",
            "{scratch}/after-import",
        ),
        quick=(
            "{data}",
            "--case",
            "now={root}",
            "--size",
            "300",
            "--rounds",
            "1",
            "--remembers",
            "5",
            "--workdir",
            "{scratch}/after-import-quick",
        ),
        needs="the LoCoMo dev split (--data); for the canonical run, 4a36e47's code in "
        "{scratch}/code-4a36e47 (git archive 4a36e47 memtree_mcp | tar -x -C it, and its commit in COMMIT)",
    ),
    "million": Bench(
        "million.py",
        "A memory that grows: recall through LanceDB's vector index against ranking every memory at "
        "10k and 100k memories: index build, ANN recall@10, the share of exact answers kept, "
        "in-process and MCP stdio recall p50/p95, RSS after the first and after 1,000 recalls, "
        "remember p50 (~20 min).",
        ("--sizes", "10000,100000", "--scratch", "{scratch}/million"),
        quick=(
            "--sizes",
            "2000",
            "--queries",
            "20",
            "--recalls",
            "20",
            "--remembers",
            "5",
            "--scratch",
            "{scratch}/million-quick",
        ),
    ),
    "scale": Bench(
        "scale.py",
        "Speed at scale: stores of 10k and 100k memories through the service: import rate, "
        "remember and recall p50/p95, store on disk, RSS, reopen (100k: half an hour or more).",
        (
            "--sizes",
            "10000,100000",
            "--remember-calls",
            "200",
            "--queries",
            "20",
            "--profile-calls",
            "0",
            "--fresh",
            "--plot",
            "{scratch}/scale.png",
        ),
        quick=(
            "--sizes",
            "300",
            "--remember-calls",
            "10",
            "--queries",
            "10",
            "--profile-calls",
            "0",
            "--fresh",
            "--plot",
            "{scratch}/scale-quick.png",
        ),
        needs="the LoCoMo dev split (its turns are recycled into the corpus)",
    ),
    "scale-s3-moto": Bench(
        "scale.py",
        "Object storage: HTTP requests per remember and recall on an s3:// home served by moto "
        "on loopback (the counts say something of a real bucket, the latencies nothing; ~1 min).",
        ("--s3-moto", "{out}"),
        out_flag=None,
        needs="moto and boto3 installed",
    ),
    "bucket-soak": Bench(
        "bucket_soak.py",
        "Several machines on one bucket namespace: 3 writing servers (lock folders of their own) x 200 "
        "remembers and 30 forgets on moto: acked memories lost or stored twice, forgotten ones back, "
        "doctor problems, recall during the load, identical recalls afterwards (~5 min).",
        ("soak",),
        quick=("soak", "--remembers", "12", "--forget-every", "4", "--recall-every", "3"),
        needs="moto and boto3 installed",
    ),
    "bucket-lone": Bench(
        "bucket_soak.py",
        "A lone writer on a bucket home: remember p50 with the lease against the code before it "
        "(git 28aee11), runs interleaved on moto (~3 min).",
        ("lone", "--rounds", "3", "--remembers", "60"),
        quick=("lone", "--rounds", "1", "--remembers", "8"),
        needs="moto and boto3 installed, git",
    ),
    "multiclient": Bench(
        "multiclient.py",
        "Many clients: two `memtree-mcp serve` processes on one 100k store, recall right after "
        "the other server's remember or forget against a quiet recall, and the follow's cost.",
        ("--size", "100200", "--rounds", "30", "--quiet", "20", "--forgets", "5"),
        quick=(
            "--size",
            "300",
            "--rounds",
            "3",
            "--quiet",
            "3",
            "--forgets",
            "1",
            "--workdir",
            "{scratch}/mc",
        ),
        needs="builds its store once in --workdir (/tmp/memtree-multiclient) if not kept there",
    ),
    "bigwrite": Bench(
        "bigwrite.py",
        "Big writes: one 100,000-character remember, then three at once, on an HTTP server: time, "
        "server RSS before/peak/after, latency of recalls sent meanwhile (~2 min).",
        ("--chars", "100000"),
        quick=("--chars", "5000"),
    ),
    "longrun": Bench(
        "longrun.py",
        "A long-running server: RSS of `memtree-mcp serve` (stdio) after 4,000 remembers and 30 s "
        "idle, next to a fresh server on the same store after one recall (target: at most 1.2 "
        "times; ~10 min).",
        ("--remembers", "4000", "--idle", "30"),
        quick=("--remembers", "50", "--idle", "1", "--every", "10"),
    ),
    "coldstart": Bench(
        "coldstart.py",
        "Start-up: spawn `memtree-mcp serve` (stdio, empty home) to the answer of tools/list, "
        "median of 9, next to a bare one-tool MCP server (target: at most 1.5 times).",
        ("--runs", "9"),
        quick=("--runs", "1"),
    ),
    "firstcall-http": Bench(
        "firstcall.py",
        "Start-up over HTTP: a streamable-HTTP server on a 10k store left up 5 s with no client, "
        "then its first recall against the next one (warm), median of 4.",
        ("--http", "--case", "now={root}:{store}", "--namespace", "scale", "--runs", "4"),
        quick=("--http", "--case", "now={root}:{store}", "--namespace", "scale", "--runs", "1"),
        needs="--store: a kept store with the namespace 'scale' (see firstcall)",
    ),
    "firstcall": Bench(
        "firstcall.py",
        "Start-up on a populated store: spawn, tools/list, then the first recall (and, in other "
        "runs, the first remember) of a fresh server on a 10k store, median of 4.",
        ("--case", "now={root}:{store}", "--namespace", "scale", "--runs", "4"),
        quick=("--case", "now={root}:{store}", "--namespace", "scale", "--runs", "1"),
        needs="--store: a kept store with the namespace 'scale', e.g. W/store-10000 from "
        "`python bench/scale.py --sizes 10000 --keep --workdir W --out /tmp/s.json --plot /tmp/s.png`",
    ),
}


def command(
    name: str, quick: bool, data: str, store: Path | None, out: Path, listing: bool = False
) -> list[str]:
    bench = BENCHES[name]
    args = bench.quick if quick and bench.quick else bench.args
    if any("{store}" in a for a in args) and store is None and not listing:
        raise SystemExit(f"{name} needs {bench.needs}")
    values = {
        "data": data,
        "store": "STORE" if listing or store is None else str(store.resolve()),
        "out": str(out),
        "scratch": str(SCRATCH),
        "root": "." if listing else str(ROOT),
    }
    filled = [a.format(**values) for a in args]
    if bench.out_flag:
        filled += [bench.out_flag, str(out)]
    return [sys.executable, str(Path("bench") / bench.script), *filled]


def list_benches() -> None:
    for name, bench in BENCHES.items():
        print(f"{name}\n    {bench.what}")
        cmd = command(name, False, DEFAULT_DATA, None, RESULTS.relative_to(ROOT) / f"{name}.json", True)
        print(f"    {shlex.join(['python', *cmd[1:]])}")
        if bench.needs:
            print(f"    needs: {bench.needs}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(BENCHES))
    parser.add_argument("--list", action="store_true", help="list the living benchmarks")
    parser.add_argument("--quick", action="store_true", help="a small smoke size (not a canonical result)")
    parser.add_argument("--data", default=DEFAULT_DATA, help=f"LoCoMo JSON (default {DEFAULT_DATA})")
    parser.add_argument("--store", type=Path, help="a kept store, for the benchmarks that need one")
    parser.add_argument("--out", type=Path, help="where to write the result (one NAME only)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args(argv)
    if args.list:
        list_benches()
        return 0
    if not args.names:
        parser.error("name a benchmark (--list shows them)")
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (--list shows them)")
    if args.out and len(args.names) > 1:
        parser.error("--out takes one NAME")
    os.chdir(ROOT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(ROOT)) if p)
    failed = 0
    for name in args.names:
        if args.out:
            out = args.out
        elif args.quick:
            out = SCRATCH.with_name("memtree-bench-quick") / f"{name}.json"
        else:
            out = RESULTS.relative_to(ROOT) / f"{name}.json"
        cmd = command(name, args.quick, args.data, args.store, out) + extra
        print(f"$ {shlex.join(cmd)}", file=sys.stderr, flush=True)
        if args.dry_run:
            continue
        SCRATCH.mkdir(parents=True, exist_ok=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(cmd, env=env, check=False)
        if done.returncode != 0:
            print(f"{name}: exit status {done.returncode}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: wrote {out}", file=sys.stderr)
    if not args.quick and not args.dry_run and not args.out and failed < len(args.names):
        print("then: python bench/report.py (rewrites the table of docs/benchmarks.md)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

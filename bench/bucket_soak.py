"""Servers on several machines writing one namespace of a bucket home, against moto's S3 on loopback.

    python bench/bucket_soak.py soak --out bench/results/bucket-soak.json [--writers 3 --remembers 200]
    python bench/bucket_soak.py lone --out bench/results/bucket-lone.json [--baseline-rev 28aee11]
    python bench/bucket_soak.py faults --out bench/results/bucket-faults.json [--runs 3]
    python bench/bucket_soak.py ordinary --out bench/results/bucket-ordinary.json [--baseline-rev e3db866]

``soak``: WRITERS processes (``tests/bucket_writer.py``), each with a lock folder of its own as if on
a machine of its own, remember REMEMBERS facts each at once, forgetting one of theirs every
FORGET_EVERY and recalling every RECALL_EVERY. Then a fresh service checks what issue 28 asks:
no acknowledged memory lost or stored twice, nothing forgotten back, ``doctor`` clean, and the same
recalls answered identically by a fresh service per "machine".

``lone``: one writer's ``remember`` latency on a bucket home, this checkout against the code at
BASELINE_REV (extracted with ``git archive`` under the temp dir), runs interleaved (old, new, old,
new, …) so that the machine's load falls on both alike; each run on a prefix of its own.

``ordinary``: the soak's three writers without faults, this checkout against the code at
BASELINE_REV in turns (baseline, this, baseline, this, ...), each run on a prefix of its own: the
wall time and each remember's latency, so that a change to the commit protocol shows what it costs
when nothing goes wrong.

``faults``: the lease misbehaving under the writers, as issue 48 found it. Scenario ``deleted``:
three servers with lease lengths of 2, 10 and 5 seconds, 60 remembers each (every 7th a large one,
every 13th followed by an import of five records), a forget every 10, while the lease object is
deleted every quarter second for 45 seconds. Scenario ``unequal``: a server with a 60-second lease
and one with a half-second lease, 12 large remembers each. After each run fresh servers read the
bucket: what was acknowledged and is lost, stored twice, forgotten and back, (id, revision) pairs
that count twice, ``doctor``'s problems, and whether every server answers alike.

moto is a Python server sharing this machine's cores: latencies say little of a real bucket; the
ratios between the two codes and the checks say what they say.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from latency import machine_info, package_version, source_state, summary_ms  # noqa: E402

WRITER = ROOT / "tests" / "bucket_writer.py"
BUCKET = "memtree-soak"
QUERIES = ["who owns the budget review?", "database migration owner", "on-call rota", "deploy window"]


def moto_env() -> tuple[Any, dict[str, str]]:
    """A moto S3 server on 127.0.0.1 with an empty bucket, and the environment that points at it
    alone (instance metadata off: nothing here may reach AWS)."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    os.environ.update(env)
    urllib.request.urlopen(urllib.request.Request(f"{env['AWS_ENDPOINT_URL']}/moto-api/reset", method="POST"))
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    return server, {**os.environ, **env}


def run_writers(
    env: dict[str, str],
    home: str,
    work: Path,
    writers: int,
    args: list[str],
    leases: list[float] | None = None,
) -> list[list[dict[str, Any]]]:
    """Run ``writers`` writer processes to their end; each one's outcomes. ``leases``: each
    writer's MEMTREE_LEASE_SECONDS (else the environment's)."""
    processes = [
        subprocess.Popen(
            [sys.executable, str(WRITER), home, str(work / f"machine{w}"), str(w), *args],
            env={**env, "MEMTREE_LEASE_SECONDS": str(leases[w])} if leases else env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for w in range(writers)
    ]
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=3600)
        results.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
    return results


def soak(writers: int, remembers: int, forget_every: int, recall_every: int, lease: float) -> dict[str, Any]:
    from memtree_mcp.config import Settings
    from memtree_mcp.service import MemoryService
    from memtree_mcp.service.requests import RecallRequest

    server, env = moto_env()
    env["MEMTREE_LEASE_SECONDS"] = str(lease)
    home = f"s3://{BUCKET}/soak"
    try:
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            started = time.perf_counter()
            args = [str(remembers), "--forget-every", str(forget_every), "--recall-every", str(recall_every)]
            results = run_writers(env, home, work, writers, args)
            wall = time.perf_counter() - started
            lines = [r for rs in results for r in rs]
            acked = {r["acked"] for r in lines if "acked" in r}
            forgotten = {r["forgot"] for r in lines if "forgot" in r}
            services = [
                MemoryService(Settings(home=home, namespace="default", lock_dir=str(work / f"check{w}")))
                for w in range(writers)
            ]
            memory = services[0].memory()
            assert memory is not None
            held = set(memory.leaves)
            texts = [leaf.text for leaf in memory.leaves.values()]
            problems = [str(p) for p in services[0].upkeep.doctor()]
            answers = [
                [[h.id for h in s.look_up(RecallRequest(q, k=5)).hits] for q in QUERIES] for s in services
            ]
            for service in services:
                service.close()
    finally:
        server.stop()
    recalls = [r for r in lines if "recall" in r]
    return {
        "writers": writers,
        "remembers_per_writer": remembers,
        "lease_seconds": lease,
        "wall_s": round(wall, 1),
        "remembers_acked": len(acked),
        "forgets_acked": len(forgotten),
        "errors": len([r for r in lines if "error" in r]),
        "error_examples": [r["error"] for r in lines if "error" in r][:3],
        "acked_lost": len(acked - forgotten - held),
        "stored_twice": len(texts) - len(set(texts)),
        "forgotten_back": len(held & forgotten),
        "doctor_problems": len(problems),
        "doctor_examples": problems[:3],
        "recalls_working": f"{sum(1 for r in recalls if r['recall'])} of {len(recalls)}",
        "recall_during_load": summary_ms([r["ms"] / 1000 for r in recalls if "ms" in r]),
        "identical_recalls_afterwards": all(a == answers[0] for a in answers),
        "remember_under_contention": summary_ms([r["ms"] / 1000 for r in lines if "acked" in r]),
    }


def delete_lease_every(seconds: float, during: float, key: str, stop: threading.Event) -> list[int]:
    """Delete the lease object ``key`` every ``seconds`` for ``during`` seconds, or until ``stop``
    (an operator, a lifecycle rule, a sync); counts the deletions in the list returned (filled
    in the background)."""
    import boto3

    client = boto3.client("s3")
    done = [0]

    def run() -> None:
        ends = time.monotonic() + during
        while time.monotonic() < ends and not stop.wait(seconds):
            client.delete_object(Bucket=BUCKET, Key=key)
            done[0] += 1

    threading.Thread(target=run, daemon=True).start()
    return done


def faults_run(scenario: str) -> dict[str, Any]:
    """One run of a fault scenario (see the module's docstring), checked by fresh servers."""
    from memtree_mcp.store.bucket import lease_key

    server, env = moto_env()
    env["MEMTREE_LOCK_TIMEOUT"] = "60"
    home = f"s3://{BUCKET}/faults-{scenario}"
    if scenario == "deleted":
        leases, args = (
            [2.0, 10.0, 5.0],
            ["60", "--forget-every", "10", "--large-every", "7", "--import-every", "13"],
        )
    else:
        leases, args = [60.0, 0.5], ["12", "--large-every", "1"]
    stop = threading.Event()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            deleted = (
                delete_lease_every(0.25, 45.0, lease_key(home, "default"), stop)
                if scenario == "deleted"
                else [0]
            )
            started = time.perf_counter()
            results = run_writers(env, home, work, len(leases), args, leases)
            wall = time.perf_counter() - started
            stop.set()
            found = check_bucket(home, work, results, len(leases))
    finally:
        stop.set()
        server.stop()
    lines = [r for rs in results for r in rs]
    acked = [r for r in lines if "acked" in r]
    return {
        "scenario": scenario,
        "lease_seconds": leases,
        "writer_args": args,
        "lease_deletions": deleted[0],
        "wall_s": round(wall, 1),
        "remembers_tried": sum(1 for r in lines if "acked" in r or ("error" in r and "text" in r)),
        "remembers_acked": len(acked),
        "large_acked": sum(1 for r in acked if r.get("large")),
        "forgets_acked": sum(1 for r in lines if "forgot" in r),
        "imports_acked": sum(1 for r in lines if r.get("imported")),
        "errors": len([r for r in lines if "error" in r]),
        "error_examples": sorted({r["error"][:160] for r in lines if "error" in r})[:4],
        **found,
        "remember_under_contention": summary_ms([r["ms"] / 1000 for r in acked]),
    }


def check_bucket(home: str, work: Path, results: list[list[dict[str, Any]]], servers: int) -> dict[str, Any]:
    """What fresh servers, one per machine, find in the bucket after the writers of ``results``."""
    import lancedb
    import pyarrow.compute as pc

    from memtree_mcp.config import Settings
    from memtree_mcp.service import MemoryService
    from memtree_mcp.store.fences import unfenced
    from memtree_mcp.store.lance import object_store_options

    lines = [r for rs in results for r in rs]
    acked_ids = {i for r in lines if "acked" in r for i in r.get("ids", [r["acked"]])}
    forgotten = {r["forgot"] for r in lines if "forgot" in r}
    imported = {t for r in lines for t in r.get("imported", ()) if r.get("added") is not None}
    services = [
        MemoryService(Settings(home=home, namespace="default", lock_dir=str(work / f"check{w}")))
        for w in range(servers)
    ]
    try:
        memory = services[0].memory()
        assert memory is not None
        held = set(memory.leaves)
        texts = [leaf.text for leaf in memory.leaves.values()]
        problems = [str(p) for p in services[0].upkeep.doctor()]
        answers = [[recalled(s, q) for q in QUERIES] for s in services]
    finally:
        for service in services:
            service.close()
    table = lancedb.connect(home, storage_options=object_store_options(home)).open_table("default")
    rows = unfenced(table.search().select(["id", "rev"]).limit(None).to_arrow())
    pairs = pc.binary_join_element_wise(rows.column("id"), pc.cast(rows.column("rev"), "string"), "@")
    return {
        "acked_lost": len(acked_ids - forgotten - held),
        "imports_lost": len(imported - set(texts)),
        "stored_twice": len(texts) - len(set(texts)),
        "forgotten_back": len(held & forgotten),
        "pairs_counted_twice": len(pairs) - len(pc.unique(pairs)),
        "doctor_problems": len(problems),
        "doctor_examples": problems[:3],
        "identical_recalls_afterwards": all(a == answers[0] for a in answers),
    }


def recalled(service: Any, query: str) -> list[str] | str:
    """The ids ``service`` recalls for ``query``, or what went wrong (a damaged store)."""
    from memtree_mcp.service.requests import RecallRequest

    try:
        return [h.id for h in service.look_up(RecallRequest(query, k=5)).hits]
    except Exception as exc:  # the point is to count these
        return f"{type(exc).__name__}: {exc}"[:120]


def faults(runs: int, scenarios: list[str]) -> dict[str, Any]:
    return {"runs": [faults_run(scenario) for _ in range(runs) for scenario in scenarios]}


def baseline_tree(rev: str) -> Path:
    """The package at ``rev``, extracted once under the temp dir."""
    target = Path(tempfile.gettempdir()) / "memtree-bench" / f"baseline-{rev}"
    if not (target / "memtree_mcp").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", rev, "memtree_mcp"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def lone(rounds: int, remembers: int, baseline_rev: str) -> dict[str, Any]:
    old = baseline_tree(baseline_rev)
    server, env = moto_env()
    runs: dict[str, list[float]] = {"baseline": [], "this": []}
    per_run: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for round_ in range(rounds):
                for code, path in (("baseline", str(old)), ("this", str(ROOT))):
                    run_env = {**env, "PYTHONPATH": path}
                    home = f"s3://{BUCKET}/lone-{code}-{round_}"
                    work = Path(scratch) / f"{code}{round_}"
                    [results] = run_writers(run_env, home, work, 1, [str(remembers)])
                    ms = [r["ms"] / 1000 for r in results if "acked" in r]
                    assert len(ms) == remembers, results[-3:]
                    runs[code] += ms[1:]  # the first creates the table
                    package = next(r["code"] for r in results if "ready" in r)
                    per_run.append(
                        {"code": code, "package": package, "round": round_, "remember": summary_ms(ms[1:])}
                    )
    finally:
        server.stop()
    base, this = summary_ms(runs["baseline"]), summary_ms(runs["this"])
    return {
        "baseline_rev": baseline_rev,
        "rounds": rounds,
        "remembers_per_run": remembers,
        "remember_baseline": base,
        "remember_this": this,
        "p50_ratio": round(float(this["p50"]) / float(base["p50"]), 2),
        "runs": per_run,
    }


def ordinary(rounds: int, writers: int, remembers: int, baseline_rev: str) -> dict[str, Any]:
    old = baseline_tree(baseline_rev)
    server, env = moto_env()
    runs: list[dict[str, Any]] = []
    every: dict[str, list[float]] = {"baseline": [], "this": []}
    walls: dict[str, list[float]] = {"baseline": [], "this": []}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for round_ in range(rounds):
                for code, path in (("baseline", str(old)), ("this", str(ROOT))):
                    run_env = {**env, "PYTHONPATH": path}
                    home = f"s3://{BUCKET}/ordinary-{code}-{round_}"
                    work = Path(scratch) / f"{code}{round_}"
                    started = time.perf_counter()
                    results = run_writers(run_env, home, work, writers, [str(remembers)])
                    wall = time.perf_counter() - started
                    lines = [r for rs in results for r in rs]
                    ms = [r["ms"] / 1000 for r in lines if "acked" in r]
                    every[code] += ms
                    walls[code].append(wall)
                    package = next(r["code"] for r in lines if "ready" in r)
                    runs.append(
                        {
                            "code": code,
                            "package": package,
                            "round": round_,
                            "wall_s": round(wall, 1),
                            "acked": len(ms),
                            "errors": len([r for r in lines if "error" in r]),
                            "remember": summary_ms(ms),
                        }
                    )
    finally:
        server.stop()
    base, this = summary_ms(every["baseline"]), summary_ms(every["this"])
    return {
        "baseline_rev": baseline_rev,
        "rounds": rounds,
        "writers": writers,
        "remembers_per_writer": remembers,
        "remember_baseline": base,
        "remember_this": this,
        "p50_ratio": round(float(this["p50"]) / float(base["p50"]), 2),
        "wall_s_baseline": [round(w, 1) for w in walls["baseline"]],
        "wall_s_this": [round(w, 1) for w in walls["this"]],
        "runs": runs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("mode", choices=["soak", "lone", "faults", "ordinary"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--remembers", type=int, default=200)
    parser.add_argument("--forget-every", type=int, default=20)
    parser.add_argument("--recall-every", type=int, default=10)
    parser.add_argument("--lease", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-rev", default="28aee11")
    parser.add_argument("--runs", type=int, default=3, help="faults: runs of each scenario")
    parser.add_argument("--scenario", action="append", choices=["deleted", "unequal"], help="faults: which")
    args = parser.parse_args()
    if args.mode == "soak":
        found = soak(args.writers, args.remembers, args.forget_every, args.recall_every, args.lease)
    elif args.mode == "ordinary":
        found = ordinary(args.rounds, args.writers, args.remembers, args.baseline_rev)
    elif args.mode == "faults":
        found = faults(args.runs, args.scenario or ["deleted", "unequal"])
    else:
        found = lone(args.rounds, args.remembers, args.baseline_rev)
    found.update(
        server=f"moto {package_version('moto')} ThreadedMotoServer on 127.0.0.1",
        command=" ".join(["python", "bench/bucket_soak.py", *sys.argv[1:]]),
        machine=machine_info(),
        source=source_state(),
    )
    args.out.write_text(json.dumps(found, indent=2) + "\n")
    print(json.dumps({k: v for k, v in found.items() if k not in ("machine", "source", "runs")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The e5-small embedder on a busy machine: query latency with CPU burners running, for the OpenMP
wait policy memtree-mcp sets (``PASSIVE``) and the engine's default spinning (``ACTIVE``).

Each run starts ``--burners`` processes that spin on the CPU, then in a fresh process loads the
embedder (the policy is read when the engine loads) and times ``--queries`` one-question
embeddings, 50 ms apart, as an agent's recalls come. Runs alternate between the policies.

    python bench/e5_busy.py [--burners 2] [--rounds 2] [--out bench/results/e5-busy.json]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

from latency import machine_info

PROBE = """
import json, os, statistics, sys, time
if sys.argv[1] == "ACTIVE":
    os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
from memtree_mcp.providers.e5 import E5Embedder
embedder = E5Embedder()
embedder.embed_batch(["warm up"])
times = []
for i in range(int(sys.argv[2])):
    started = time.perf_counter()
    embedder.embed_queries([f"What did I decide about the staging database, question {i}?"])
    times.append(1000 * (time.perf_counter() - started))
    time.sleep(0.05)
print(json.dumps({"policy": os.environ["OMP_WAIT_POLICY"], "p50_ms": round(statistics.median(times), 1),
                  "max_ms": round(max(times), 1)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("bench/results/e5-busy.json"))
    args = parser.parse_args()
    runs = []
    for _ in range(args.rounds):
        for policy in ("PASSIVE", "ACTIVE"):
            spin = [sys.executable, "-c", "while True: pass"]
            burners = [subprocess.Popen(spin) for _ in range(args.burners)]
            try:
                done = subprocess.run(
                    [sys.executable, "-c", PROBE, policy, str(args.queries)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
            finally:
                for burner in burners:
                    burner.kill()
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(runs[-1], flush=True)
    report = {
        "burners": args.burners,
        "runs": runs,
        "machine": machine_info(),
        "command": shlex.join([sys.executable, *sys.argv]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

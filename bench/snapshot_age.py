"""How reopening a namespace slows as its snapshot ages, and what a server that stops gives back.

    python bench/snapshot_age.py STORE --remember 300 1000 --out bench/results/snapshot-age-10k.json

``STORE`` is a MEMTREE_HOME holding the namespace ``scale`` with its snapshot (``bench/scale.py
--keep``, then one reopen); it is copied, never changed. On the copy, in turn:

1. a reopen (a fresh process timing ``Spaces.reload``, the open of a new server);
2. for each count in ``--remember``: that many remembers by a one-shot process (LoCoMo turns, as
   ``bench/scale.py`` reads them, each marked as a later note so none is a duplicate; it saves no
   snapshot), then a reopen, which follows every row appended since the snapshot;
3. a server's stop: a service that watched (``Spaces.watch``) is closed, which saves the snapshot
   anew when it is far behind (``Spaces.close``); timed, then a reopen.

Each reopen is done twice and both are kept. Run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `memtree-mcp serve` runs

HERE = Path(__file__).resolve().parent
NAMESPACE = "scale"
DATA = HERE.parent.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"


def reopen(home: Path) -> dict[str, Any]:
    """A fresh process's ``Spaces.reload`` of ``home``: wall and CPU ms, and the table's rows."""
    script = f"""
import json, time
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService
import memtree_mcp.store.lance, memtree_mcp.store.opening
service = MemoryService(Settings(home={str(home)!r}, namespace={NAMESPACE!r}, llm="none"))
service.embedder.embed_batch(["warm up"])
space = service.spaces.get({NAMESPACE!r}, create=False)
started, cpu = time.perf_counter(), time.process_time()
service.spaces.reload(space)
print(json.dumps({{"reload_ms": round((time.perf_counter() - started) * 1000, 1),
                  "reload_cpu_ms": round((time.process_time() - cpu) * 1000, 1),
                  "rows": space.table.row_count_seen, "snapshot_rows": space.snapshot_rows}}))
"""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--remember", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE.parent))
    from scale import load_locomo

    from memtree_mcp.config import Settings
    from memtree_mcp.service import MemoryService

    texts = [turn["content"] for turn in load_locomo(args.data)[0]]
    work = Path(tempfile.mkdtemp(prefix="snapshot-age-", dir=args.workdir))
    home = work / "home"
    shutil.copytree(args.store, home, symlinks=True)
    steps: list[dict[str, Any]] = []
    try:
        steps.append({"step": "start", "reopens": [reopen(home), reopen(home)]})
        written = 0
        for count in args.remember:
            command = MemoryService(
                Settings(home=str(home), namespace=NAMESPACE, llm="none"), background=False
            )
            for i in range(count):
                command.remember(f"{texts[(written + i) % len(texts)]} (later note #{written + i})")
            command.close()
            written += count
            steps.append({"step": f"{written} remembers later", "reopens": [reopen(home), reopen(home)]})
            print(json.dumps(steps[-1]), flush=True)
        server = MemoryService(Settings(home=str(home), namespace=NAMESPACE, llm="none"))
        server.memory()
        server.spaces.watch()
        started = time.perf_counter()
        server.close()
        stop_ms = round((time.perf_counter() - started) * 1000, 1)
        steps.append(
            {"step": "after a server stopped", "stop_ms": stop_ms, "reopens": [reopen(home), reopen(home)]}
        )
        print(json.dumps(steps[-1]), flush=True)
    finally:
        shutil.rmtree(work)
    report = {
        "benchmark": "reopen as a namespace's snapshot ages, and after a server's stop",
        "command": " ".join([sys.executable, *sys.argv]),
        "store": str(args.store),
        "loadavg": list(os.getloadavg()),
        "steps": steps,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

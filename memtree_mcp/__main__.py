"""``python -m memtree_mcp`` runs the same command as ``memtree-mcp``."""

import sys

from memtree_mcp.cli import main

sys.exit(main())

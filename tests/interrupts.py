"""Children that Ctrl-C stops, whatever the disposition of SIGINT the test run inherited.

A shell starts a background job (``pytest ... &``, ``nohup``, a CI step run by a non-interactive
shell) with SIGINT ignored, every child inherits that, and Python leaves an ignored SIGINT ignored:
a command sent SIGINT went on to the end (an import finished, exit 0) and uvicorn, after its
graceful stop, re-raised an ignored signal (exit 0, not 130). A test that sends SIGINT starts its
child through :data:`WITH_DEFAULT_SIGINT`, which puts SIGINT back to its default and then execs
the command (same process, same pid): a disposition set to the default survives ``exec``.
``preexec_fn`` would do the same, but it runs Python between fork and exec in a process whose
parent has threads (the embedder's), which Python's documentation warns may deadlock.
"""

from __future__ import annotations

import sys

__all__ = ["WITH_DEFAULT_SIGINT"]

WITH_DEFAULT_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]

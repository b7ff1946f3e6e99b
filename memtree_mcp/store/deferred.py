"""lancedb's REST namespace client, registered without running its package initialiser.

lancedb imports ``lance_namespace``, which imports models from ``lance_namespace_urllib3_client``,
a generated REST client. That package's ``__init__`` imports every API module and every model
(hundreds of pydantic classes), though a local store uses none of its APIs and only the models
``lance_namespace`` names. That initialiser is a large part of lancedb's import time (see it with
``python -X importtime -c 'import lancedb'``), which every process pays once: the server before
its first call, and each CLI command.

:func:`defer_init` puts the package in ``sys.modules`` as it would be, minus what its ``__init__``
runs: its submodules import as usual (``from lance_namespace_urllib3_client.models import X``),
and the first lookup of a name the package itself defines (``ApiClient``, ``__version__``) runs
the initialiser then, once, so any code that uses the REST client gets exactly the package it
expects. When the package is missing or already imported, nothing is done. ``memtree_mcp.store``
defers it on import, before ``store/lance.py`` imports lancedb.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

DEFERRED = "lance_namespace_urllib3_client"


def defer_init(name: str) -> bool:
    """Register package ``name`` with its ``__init__`` not yet run; True when it was deferred."""
    if name in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.Lock()

    def __getattr__(attribute: str) -> Any:  # the module hook of PEP 562
        with lock:
            hook = module.__dict__.pop("__getattr__", None)
            if hook is not None:
                try:
                    loader.exec_module(module)
                except BaseException:
                    module.__dict__["__getattr__"] = hook  # the next lookup tries again
                    raise
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module
    return True

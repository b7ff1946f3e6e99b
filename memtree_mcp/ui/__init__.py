"""Seeing the memory: the ``tree`` outline for terminals and the read-only explorer page.

``outline`` renders a tree with rich for ``memtree-mcp tree``. ``api`` is the explorer: a small
JSON API over a MemoryService and a self-contained page (``static/``), mounted at ``/ui`` of the
HTTP transports and served alone by ``memtree-mcp ui`` (``server``). Nothing here is imported by
the MCP server's start-up path; starlette and rich load only when a command needs them.

May import ``core``, ``secrets``, ``errors``, ``service`` and the HTTP guards of ``transports``.
"""

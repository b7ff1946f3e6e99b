"""Memories in and out of files: the import sources and the Markdown notes an export writes.

``sources`` reads records from a JSONL export, the official MCP memory server's ``memory.jsonl``,
JSON, CSV (through a column mapping) and a folder of Markdown notes (``markdown``), which is also
what ``export --format markdown`` writes.

May import ``core``, ``secrets`` (an error quotes a value redacted), ``errors`` and the service's
``inputs`` (the checks every record passes); the CLI's ``import`` and ``export`` commands drive it.
"""

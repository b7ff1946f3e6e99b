"""The language models memtree-mcp may ask: litellm endpoints and the client's own (MCP sampling).

``endpoint`` reaches a model through litellm (imported on the first call, offline and quiet) within
a deadline and a byte cap (``bounded_http``, the HTTP client it hands litellm: imported only on the
``llm`` extra's path); ``chat`` the text generator the service asks; ``sampling`` the client's
model; ``prompts`` every prompt sent and the parsing of the answers; ``policies`` the memory
agent and the temporal segmenter driven by a model.

May import ``core``, ``config`` and ``errors`` only: the service decides when a model is asked.
"""

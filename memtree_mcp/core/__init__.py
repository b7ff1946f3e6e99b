"""Pure algorithms over in-memory nodes: numpy and the standard library only.

May import nothing of the package but itself, and no library but numpy and the standard library:
no mcp, lancedb, onnxruntime or litellm (tests/test_layers.py checks both).
"""

"""Pure algorithms over in-memory nodes: numpy and the standard library only.

Nothing here may import mcp, lancedb, onnxruntime or litellm (a test checks it).
"""

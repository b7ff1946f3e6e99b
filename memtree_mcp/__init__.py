"""memtree-mcp: a long-term memory for agents, organised as trees, served over MCP."""

__version__ = "0.1.0"

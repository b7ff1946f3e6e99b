"""How MCP reaches the server: standard input and output, or HTTP (streamable HTTP and SSE).

``stdio`` serves a client on standard input and output and stops at once on a signal; ``http``
builds and serves the HTTP app (another app, such as the explorer, may be mounted beside MCP);
``guards`` the checks every HTTP request passes: Host, bearer token, body size, connections.

May import ``host`` (which addresses are loopback), ``secrets`` (an error quotes a value redacted)
and ``errors``: the server and what is mounted are handed in.
"""

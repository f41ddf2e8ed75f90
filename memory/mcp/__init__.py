"""MCP endpoint (`/mcp`): read-only `recall_memory` and `get_context` tools for agent loops.

transport.py  the Django view: Streamable HTTP, stateless, JSON responses; authentication
server.py     JSON-RPC methods: initialize, ping, tools/list, tools/call
tools.py      tool schemas and handlers over the existing selectors
"""

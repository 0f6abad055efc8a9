"""What agents' tools reach the world with: the owner's stored secrets (encrypted at rest, never
returned), the HTTP request of ``tool.http`` and ``http.request`` (through the network guard,
redirects checked again, answers bounded), and the MCP client of ``tool.mcp`` (docs/tools.md).
"""

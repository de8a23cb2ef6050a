"""MCP servers as a tool source: the hub and its parts (see hub.py for the map).

Importing this package imports nothing of the optional `mcp` extra, and no submodule: start-up
pays for MCP only when a server is configured.
"""

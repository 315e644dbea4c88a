"""vwt seen from other programs: the MCP server, shell integration and the agent skill."""

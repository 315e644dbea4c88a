"""Integration tests of the agent and shell integrations (issue 6)."""

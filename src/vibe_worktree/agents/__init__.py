"""Agents' own worktrees: Claude Code's hooks (create, remove, session holds, activity), its
settings and status line; Mistral Vibe's hooks (activity) and its hooks.toml; any agent's
activity (`vwt activity`)."""

AGENTS = ("claude-code", "vibe")  # the agents whose hooks `vwt hook` and `vwt install` know

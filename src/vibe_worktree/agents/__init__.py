"""Agents' own worktrees: Claude Code's hooks (create, remove, session holds, activity), its
settings and status line, and the worktrees other tools made (`vwt foreign`, `vwt adopt`)."""

AGENTS = ("claude-code",)  # the agents whose hooks `vwt hook` and `vwt install` know

"""vibe-worktree: one isolated git worktree per coding session."""

__version__ = "0.1.0"

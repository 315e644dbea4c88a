"""Agent sessions as vwt keeps them: what each is doing (activity) and the worktrees it
holds for its life (holds, and the detached watcher that keeps a hold)."""

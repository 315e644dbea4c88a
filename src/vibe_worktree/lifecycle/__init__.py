"""A worktree's life: create, carry, hooks, copies, hold, inspect, snapshot, remove, prune."""

"""What runs in the worktrees (SPEC §17): each one's ports and environment as `vwt port` and
`vwt env` print them (`env.py`), and the processes inside them (`ps.py`)."""

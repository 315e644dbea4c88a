"""`python -m vibe_worktree.cli`, as `vwt`."""

import sys

from . import main

sys.exit(main())

"""Landing the work (SPEC §8): integration detection, merge and sync."""

"""Landing the work: merge, sync, and where parallel sessions will collide (vwt conflicts)."""

"""`vwt doctor`: the read-only health check of a home, and the repairs it offers."""

"""Say it: one sentence per finding naming cause, rank and host, the evidence lines, a fix to apply, and the
diagnosis as data (report)."""

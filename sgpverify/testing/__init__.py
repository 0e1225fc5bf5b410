"""Public helpers for users' own property tests (see :mod:`.strategies`)."""

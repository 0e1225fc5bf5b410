"""``python -m sgpverify.assumptions``: print the constants table of docs/constants.md (markdown)."""

from .table import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

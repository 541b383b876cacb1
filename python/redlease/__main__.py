"""``python -m redlease``: the ``redlease`` command (redlease.cli)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())

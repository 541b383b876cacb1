"""``python -m redlease``: the ``redlease`` command (redlease.cli)."""

from .cli import main

raise SystemExit(main())

"""The ``redlease`` command (also ``python -m redlease``): who holds what, for operators.

    redlease inspect NAME         the lock's kind, owners, lease, waiters
    redlease watch NAME           the same, refreshed until Ctrl-C
    redlease force-unlock NAME    delete a lock whoever holds it (asks; --yes for scripts)
    redlease scan [PATTERN]       lock-shaped keys, found with SCAN (never KEYS)
    redlease drop-fence NAME      delete a free fenced lock's token counter (asks; --yes)

Every command takes ``--url`` (default: ``$REDIS_URL``, else redis://127.0.0.1:6379/0) and
``--json``. Exit codes: 0 found (done), 1 not found, 2 error or refusal, 130 interrupted (Ctrl-C).
"""

import argparse
import os
import sys
from typing import List, Optional

from .._client import Client
from .._errors import LockError
from . import commands

DEFAULT_URL = "redis://127.0.0.1:6379/0"
INTERRUPTED = 128 + 2  # the shell's code for a command that SIGINT ended


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=os.environ.get("REDIS_URL") or DEFAULT_URL,
                        help="Redis URL (default: $REDIS_URL, else %(default)s)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    parser = argparse.ArgumentParser(
        prog="redlease", description="Inspect and operate redlease (and Redisson) locks.",
        epilog="exit codes: 0 found, 1 not found, 2 error or refusal, 130 interrupted")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", parents=[common], help="who holds a lock, and who waits")
    p.add_argument("name")
    p = sub.add_parser("watch", parents=[common], help="inspect, refreshed until Ctrl-C")
    p.add_argument("name")
    p.add_argument("--count", type=int, default=0, help="stop after N views (0: never)")
    p = sub.add_parser("force-unlock", parents=[common],
                       help="delete a lock whoever holds it (waiters are woken)")
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    p = sub.add_parser("drop-fence", parents=[common],
                       help="delete a free fenced lock's token counter (tokens restart at 1)")
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    p = sub.add_parser("scan", parents=[common], help="find lock-shaped keys with SCAN")
    p.add_argument("pattern", nargs="?", default=None, help="a SCAN MATCH pattern")
    p.add_argument("--limit", type=int, default=100, help="list at most N locks (default 100)")
    p.add_argument("--count", type=int, default=1000,
                   help="SCAN COUNT: keys per step (default 1000, at most 10000)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    try:
        with Client(args.url, connect_timeout=5, command_timeout=10) as client:
            if args.command == "inspect":
                return commands.inspect(client, args.name, args.json, out)
            if args.command == "watch":
                return commands.watch(client, args.name, args.json, args.count, out)
            if args.command == "force-unlock":
                return commands.force_unlock(client, args.name, args.json, args.yes, out, err)
            if args.command == "drop-fence":
                return commands.drop_fence(client, args.name, args.json, args.yes, out, err)
            return commands.scan(client, args.pattern, args.limit, args.count, args.json, out,
                                 err)
    except (LockError, ValueError, TypeError) as e:
        print(f"redlease: {e}", file=err)
        return 2
    except KeyboardInterrupt:  # Ctrl-C (how `watch` ends): as an interrupted command does
        return INTERRUPTED

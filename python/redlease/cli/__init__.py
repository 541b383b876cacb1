"""The ``redlease`` command (also ``python -m redlease``): who holds what, for operators.

    redlease inspect NAME         the lock's kind, owners, lease, waiters
    redlease watch NAME           the same, refreshed until Ctrl-C
    redlease force-unlock NAME    delete a lock whoever holds it (asks; --yes for scripts)
    redlease scan [PATTERN]       lock-shaped keys, found with SCAN (never KEYS)
    redlease drop-fence NAME      delete a free fenced lock's token counter (asks; --yes)

Every command takes ``--url`` (default: ``$REDIS_URL``, else redis://127.0.0.1:6379/0) and
``--json``, before or after the subcommand; ``redlease --version`` prints the version. Exit
codes: 0 found (done), 1 not found, 2 error or refusal, 130 interrupted (Ctrl-C); each
command's ``--help`` says what they mean for it (docs/operations.md, "Exit codes").
"""

import argparse
import os
import sys
from typing import List, Optional

from .._client import Client
from .._core import CORE_VERSION
from .._errors import ConnectionError, LockError
from . import commands

DEFAULT_URL = "redis://127.0.0.1:6379/0"
INTERRUPTED = 128 + 2  # the shell's code for a command that SIGINT ended
EXIT_CODES = "exit codes: 0 found, 1 not found, 2 error or refusal, 130 interrupted (Ctrl-C)"
URL_FORMS = ("URL forms: redis://[user:password@]host:port/db, rediss:// (TLS), "
             "redis+sentinel://, redis+cluster://, unix:///path")


def _common(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """--url and --json, taken before the subcommand (the main parser's defaults) and after it
    (SUPPRESS: a subcommand that is not given them leaves what came before)."""
    url_default = argparse.SUPPRESS if suppress else None
    json_default = argparse.SUPPRESS if suppress else False
    # The URL's default is resolved after parsing: --help never shows $REDIS_URL's password.
    parser.add_argument("--url", metavar="URL", default=url_default,
                        help=f"the Redis server (default: $REDIS_URL, else {DEFAULT_URL})")
    parser.add_argument("--json", action="store_true", default=json_default,
                        help="machine-readable output")


# Each subcommand's own meaning of the codes (docs/operations.md, "Exit codes").
COMMAND_EXIT_CODES = {
    "inspect": "exit codes: 0 the key exists, 1 no such key, 2 error, 130 interrupted",
    "watch": "exit codes: 0 after --count views, 2 error, 130 interrupted (Ctrl-C)",
    "force-unlock": "exit codes: 0 deleted, 1 no such lock (or free already), 2 error or "
                    "refusal (declined, no --yes off a terminal, not a lock), 130 interrupted",
    "scan": "exit codes: 0 locks found, 1 none, 2 error, 130 interrupted",
    "drop-fence": "exit codes: 0 dropped, 1 no counter, 2 error or refusal (held, declined, "
                  "no --yes off a terminal), 130 interrupted",
}


def _sub(sub: "argparse._SubParsersAction[argparse.ArgumentParser]", name: str,
         text: str) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".",
                       epilog=f"{COMMAND_EXIT_CODES[name]}. {URL_FORMS}.")
    _common(p, suppress=True)
    return p


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="redlease", description="Inspect and operate redlease (and Redisson) locks. "
        "--url and --json go before or after the subcommand.",
        epilog=f"{EXIT_CODES}. {URL_FORMS}.")
    parser.add_argument("--version", action="version", version=f"redlease {CORE_VERSION}")
    _common(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = _sub(sub, "inspect", "who holds a lock, and who waits")
    p.add_argument("name", help="the lock's name")
    p = _sub(sub, "watch", "inspect, refreshed on every change until Ctrl-C")
    p.add_argument("name", help="the lock's name")
    p.add_argument("--count", type=int, default=0, help="stop after N views (0: never)")
    p = _sub(sub, "force-unlock", "delete a lock whoever holds it (waiters are woken)")
    p.add_argument("name", help="the lock's name")
    p.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    p = _sub(sub, "drop-fence", "delete a free fenced lock's token counter (tokens restart at 1)")
    p.add_argument("name", help="the fenced lock's name")
    p.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    p = _sub(sub, "scan", "find lock-shaped keys with SCAN (never KEYS)")
    p.add_argument("pattern", nargs="?", default=None, help="a SCAN MATCH pattern")
    p.add_argument("--limit", type=int, default=100, help="list at most N locks (default 100)")
    p.add_argument("--count", type=int, default=1000,
                   help="SCAN COUNT: keys per step (default 1000, at most 10000)")
    return parser


def _where_from(given: Optional[str]) -> str:
    """What a failed connection adds: where the URL came from and how to give another."""
    if given is not None:
        return "the server is the one --url names; see redlease --help for the URL forms"
    if os.environ.get("REDIS_URL"):
        return "the server is the one $REDIS_URL names; give --url URL for another"
    return (f"no --url given and $REDIS_URL is not set, so it tried {DEFAULT_URL}; point it at "
            "your server with --url redis://HOST:PORT/DB or REDIS_URL=...")


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    url = args.url or os.environ.get("REDIS_URL") or DEFAULT_URL
    out, err = sys.stdout, sys.stderr
    try:
        with Client(url, connect_timeout=5, command_timeout=10) as client:
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
    except ConnectionError as e:
        print(f"redlease: {e}\nredlease: {_where_from(args.url)}", file=err)
        return 2
    except (LockError, ValueError, TypeError) as e:
        print(f"redlease: {e}", file=err)
        return 2
    except KeyboardInterrupt:  # Ctrl-C (how `watch` ends): as an interrupted command does
        return INTERRUPTED

"""The embedded local model: a llama.cpp server that peras starts and stops itself.

The command line that scripts/setup_local_model.sh calls: `python -m peras.local_model prepare`.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Sequence

from peras.errors import PerasError, UsageError
from peras.local_model.server import find_server_binary, local_server
from peras.local_model.weights import DEFAULT_MODEL, ensure_weights
from peras.settings import Settings, load_settings


def _prepare(settings: Settings) -> None:
    """Assemble, upcast and verify the model file; say whether the server is built."""
    path = ensure_weights(settings)
    served = DEFAULT_MODEL.upcast or DEFAULT_MODEL
    print(f"model  {path}")
    print(f"size   {served.size} bytes")
    print(f"sha256 {served.sha256}")
    try:
        print(f"server {find_server_binary(settings)}")
    except UsageError as exc:
        print(f"server {exc}")


def _serve(settings: Settings, parallel: int | None, ctx: int | None) -> None:
    """Start the server and block until Ctrl-C or SIGTERM."""
    # SIGTERM would otherwise end Python without running the cleanup that stops the server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with local_server(settings, parallel=parallel, ctx=ctx) as server:
        print(f"base_url {server.base_url}")
        print(f"model    {server.model}")
        print(f"pid      {server.pid}  (Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


def main(argv: Sequence[str] | None = None) -> int:
    """python -m peras.local_model prepare | serve [--parallel N] [--ctx N]"""
    parser = argparse.ArgumentParser(prog="python -m peras.local_model", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="assemble and verify the GGUF; e.g. python -m peras.local_model prepare")
    serve = commands.add_parser("serve", help="start llama-server and block; e.g. ... serve --parallel 2")
    serve.add_argument("--parallel", type=int, default=None, help="slots (default: settings.local_parallel)")
    serve.add_argument("--ctx", type=int, default=None, help="context shared by slots (default: settings.local_ctx)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        if args.command == "prepare":
            _prepare(settings)
        else:
            _serve(settings, args.parallel, args.ctx)
    except PerasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``clusterbench serve-metrics``: the gauges of ``export openmetrics`` on an HTTP ``/metrics``
endpoint for Prometheus to scrape, read from the database at every scrape."""

from __future__ import annotations

import signal
import sys

import click

from clusterbench.cli.bounds import PORT
from clusterbench.cli.options import db_option
from clusterbench.judge.history import parse_since
from clusterbench.judge.profiles import load_profile
from clusterbench.report import openmetrics


def _address(ctx: click.Context, param: click.Parameter, value: str) -> str:
    # the socket layer encodes a host name as IDNA and raises UnicodeError, not OSError, for
    # one it cannot (a label over 63 characters, a control character, bytes that are not UTF-8)
    try:
        value.encode("idna")
    except UnicodeError as e:
        raise click.BadParameter(f"{value!r} is not a host name or address ({e})", ctx, param) from None
    return value


@click.command("serve-metrics")
@click.argument("selectors", nargs=-1, metavar="[RUN|SELECTOR]...")
@click.option("--port", type=PORT, required=True, help="TCP port to listen on.")
@click.option("--addr", default="127.0.0.1", show_default=True, callback=_address,
              help="Address to listen on (0.0.0.0: every interface, for a remote Prometheus).")
@click.option("--since", default=None, metavar="AGE|DATE", help="Only runs started since then (30d).")
@click.option("--profile", "profile_name", default=None, metavar="NAME|FILE",
              help="Also export each criterion's verdict per host.")
@db_option
def serve_metrics(selectors: tuple[str, ...], port: int, addr: str, since: str | None,
                  profile_name: str | None, db: str | None) -> int:
    """Serve the latest results of the selected runs (default: all) on http://ADDR:PORT/metrics,
    read from the database at every scrape, until interrupted (SIGINT or SIGTERM)."""
    profile = load_profile(profile_name) if profile_name else None
    since_t = parse_since(since) if since else None
    # Read once before listening: a wrong --db or selector is an error now, not at each scrape.
    openmetrics.from_store(db, selectors, since_t, profile)

    def load() -> list[openmetrics.Gauge]:
        return openmetrics.from_store(db, selectors, since_t, profile)

    def on_error(text: str) -> None:
        print(f"# serve-metrics: scrape failed: {text}", file=sys.stderr, flush=True)

    def listening() -> None:
        host = f"[{addr}]" if ":" in addr else addr   # an IPv6 address in brackets, as URLs write it
        print(f"# serve-metrics: http://{host}:{port}/metrics (Ctrl-C to stop)", file=sys.stderr, flush=True)

    signum = openmetrics.serve_until_stopped(load, port, addr, on_error, listening)
    print(f"# serve-metrics: stopped by {signal.Signals(signum).name}", file=sys.stderr, flush=True)
    return 0


commands = [serve_metrics]

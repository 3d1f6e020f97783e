"""``clusterbench serve-metrics``: the gauges of ``export openmetrics`` on an HTTP ``/metrics``
endpoint for Prometheus to scrape, read from the database when runs were stored and answered
from memory."""

from __future__ import annotations

import signal
import sys

import click

from clusterbench.cli.bounds import PORT
from clusterbench.cli.options import db_option
from clusterbench.judge.history import current_since
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
@click.option("--window", default=None, metavar="AGE",
              help="Only values of runs started within AGE of each read (2d): what counts as current.")
@click.option("--all", "every_row", is_flag=True,
              help="Every row of each headline metric, not only the headline series.")
@click.option("--refresh", type=click.FloatRange(0.5, 86400), default=15.0, show_default=True, metavar="SECONDS",
              help="How often to ask the database whether runs were stored (and read it again if so).")
@click.option("--profile", "profile_name", default=None, metavar="NAME|FILE",
              help="Also export each criterion's verdict per host.")
@db_option
def serve_metrics(selectors: tuple[str, ...], port: int, addr: str, since: str | None, window: str | None,
                  every_row: bool, refresh: float, profile_name: str | None, db: str | None) -> int:
    """Serve the latest results of the selected runs (default: all) on http://ADDR:PORT/metrics,
    until interrupted (SIGINT or SIGTERM). The gauges are read from the database by a thread of
    their own when runs were stored, and every scrape is answered from memory."""
    profile = load_profile(profile_name) if profile_name else None
    current_since(since, window)   # a bad --since or --window is an error now
    # Checked before listening (a wrong --db, a selector that picks nothing): an error now, not at
    # each read; reading everything can take a while on a large store, and is done while serving.
    openmetrics.check_source(db, selectors)

    def load() -> list[openmetrics.Gauge]:
        return openmetrics.from_store(db, selectors, current_since(since, window), profile, every_row=every_row)

    def on_error(text: str) -> None:
        print(f"# serve-metrics: reading the results database failed: {text}", file=sys.stderr, flush=True)

    def listening() -> None:
        host = f"[{addr}]" if ":" in addr else addr   # an IPv6 address in brackets, as URLs write it
        print(f"# serve-metrics: http://{host}:{port}/metrics (Ctrl-C to stop)", file=sys.stderr, flush=True)

    cache = openmetrics.GaugeCache(load, on_error, changed=lambda: openmetrics.store_token(db), refresh=refresh,
                                   always=window is not None)
    signum = openmetrics.serve_until_stopped(cache, port, addr, on_error, listening)
    print(f"# serve-metrics: stopped by {signal.Signals(signum).name}", file=sys.stderr, flush=True)
    return 0


commands = [serve_metrics]

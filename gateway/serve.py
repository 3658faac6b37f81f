"""Running the gateway: one process, or N uvicorn worker processes that
share the listening socket, to use several cores. uvicorn picks uvloop and
httptools when they are installed (the `speed` extra). uvicorn's access
log line, written before the response headers, can be turned off.

Workers are separate processes, each loading the config again: the path
goes to them in `$PARSEGATE_CONFIG`, which `app_from_environment` reads.
With workers, SIGHUP goes to uvicorn's supervisor, which replaces them one
by one; a new worker gets `WORKER_START_SECONDS` to come up.
An address that cannot be bound (a port in use) stops `serve` with
`CannotListen` before any start-up line, and a store that does not answer
a trivial question within `store.read_timeout` with `StoreUnavailable`
(ops/store: `check_store`); a store that stops answering later is a 503
to the requests that need it, until it answers again.
In-flight streams finish on shutdown, up to `server.shutdown_timeout`.
Each serving process sets its garbage collector for serving as its app
starts (ops/collector.py).
The start-up lines (ops/startup.py, and the one that says whether the fast
paths run: upstream/fast_paths.py) are written once, before any worker
starts; a process that reloads its config writes ops/startup.py's again
(reload.py).
"""

from __future__ import annotations

import asyncio
import errno
import logging.config
import os
import socket
from typing import Any, TypedDict

import uvicorn

from gateway.app import create_app
from gateway.ops.config import Config, load_config
from gateway.ops.env_overlay import CONFIG_FILE_VARIABLE
from gateway.ops.logs import logging_config
from gateway.ops.startup import log_startup
from gateway.ops.store import check_store
from gateway.upstream import fast_paths

WORKER_START_SECONDS = 30  # uvicorn's default of 5 is too short on a busy host


class CannotListen(Exception):
    """The address to serve on cannot be bound; the message says which and why."""


def check_address(host: str, port: int) -> None:
    """Raise CannotListen unless `host:port` can be bound now, as uvicorn
    binds it (address reuse on): before the start-up lines, so that a port
    in use is said as such, and before anything is opened."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise CannotListen(f"cannot listen on {shown}: {error.strerror}") from None
    for family, kind, protocol, _, address in addresses:
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    raise CannotListen(
                        f"cannot listen on {shown}: the port is already in use (another process listens there); "
                        "stop it, or serve on another port with --port, server.port or PARSEGATE_SERVER__PORT"
                    ) from None
                raise CannotListen(f"cannot listen on {shown}: {error.strerror or error}") from None


class _ServerOptions(TypedDict):
    """The `uvicorn.run` options shared by one process and N workers."""

    host: str
    port: int
    loop: str
    http: str
    timeout_graceful_shutdown: int | None
    log_config: dict[str, Any]
    access_log: bool


def serve(
    config: Config, config_path: str, host: str, port: int, *, workers: int = 1, log_format: str = "text"
) -> None:
    options: _ServerOptions = {
        "host": host,
        "port": port,
        "loop": "auto",
        "http": "auto",
        # uvicorn annotates an int but passes it to asyncio.wait_for, which takes seconds as a float.
        "timeout_graceful_shutdown": config.server.shutdown_timeout,  # type: ignore[typeddict-item]
        "log_config": logging_config(log_format),
        "access_log": False,
    }
    check_address(host, port)
    asyncio.run(check_store(config.store))
    logging.config.dictConfig(options["log_config"])  # uvicorn sets the same up again, after these lines
    log_startup(config, host)
    fast_paths.log_choice()  # workers decide alike: same packages, same environment
    if workers == 1:
        uvicorn.run(create_app(config, config_path=config_path, host=host, settle_collector=True), **options)
        return
    os.environ[CONFIG_FILE_VARIABLE] = os.path.abspath(config_path)
    uvicorn.run(
        "gateway.serve:app_from_environment",
        factory=True,
        workers=workers,
        timeout_worker_healthcheck=WORKER_START_SECONDS,
        **options,
    )


def app_from_environment():
    """The app of one worker process."""
    path = os.environ[CONFIG_FILE_VARIABLE]
    return create_app(load_config(path), config_path=path, settle_collector=True)

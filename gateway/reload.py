"""Config reload on SIGHUP, without dropping requests in flight.

The new file (with the environment applied) is validated first; if it is
invalid it is refused, logged, and the running config stays. Otherwise the
new config and backends take over for new requests: a model whose entry did
not change keeps its backend (its pool and circuit-breaker state); the
others are retired and close once their last request is done. New backends
are traced (with `server.opentelemetry`) and new models' metric series
declared, as at start-up, and the start-up lines (ops/startup.py) are
logged for the new config (docs/operations.md#start-up-lines).
`server.host`/`server.port` apply at the next start.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

import anyio
from fastapi import FastAPI

from gateway.ops.config import Config, ConfigError, load_config
from gateway.ops.logs import redact_in_logs
from gateway.ops.secrets import Secrets
from gateway.ops.startup import log_startup
from gateway.ops.tracing import trace_clients
from gateway.upstream.backends import open_backend
from gateway.upstream.derived_parsers import with_template_parsers
from gateway.upstream.template_backend import check_templates

logger = logging.getLogger("parsegate.reload")


def _checked_config(path: str | Path) -> Config:
    """The config at `path`, its templates read and their parsers derived."""
    config = load_config(path)
    check_templates(config.models)
    return with_template_parsers(config)


async def reload_config(app: FastAPI, path: str | Path, host: str) -> bool:
    """Load `path` into the app listening on `host` (read, checked and its
    templates analysed in a worker thread, so requests go on meanwhile);
    False (and the old config kept) if invalid."""
    try:
        config = await anyio.to_thread.run_sync(_checked_config, path)
    except ConfigError as error:
        logger.error("config reload refused, keeping the running config: %s", error)
        return False
    old_config, old = app.state.config, app.state.backends
    secrets = Secrets.of(config)
    redact_in_logs(secrets)
    backends = {
        model.name: old[model.name]
        if model.name in old and old[model.name].config == model
        else open_backend(model, secrets)
        for model in config.models
    }
    for backend in backends.values():
        backend.secrets = secrets
    if config.server.opentelemetry:
        trace_clients(backend.client for name, backend in backends.items() if old.get(name) is not backend)
    app.state.metrics.declare_models(list(backends))
    app.state.config, app.state.backends = config, backends
    for name, backend in old.items():
        if backends.get(name) is not backend:
            await backend.retire()
    if (config.server.host, config.server.port) != (old_config.server.host, old_config.server.port):
        logger.warning("config reloaded; server.host and server.port change at the next start")
    logger.warning("config reloaded from %s: models %s", path, ", ".join(backends))
    log_startup(config, host)
    return True


def reload_on_sighup(app: FastAPI, path: str | Path, host: str) -> None:
    """From now on, SIGHUP reloads `path` into the app listening on `host` (call inside the running loop)."""
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task] = set()

    def on_signal() -> None:
        task = loop.create_task(reload_config(app, path, host))
        pending.add(task)
        task.add_done_callback(pending.discard)

    loop.add_signal_handler(signal.SIGHUP, on_signal)

"""`parsegate serve` (run the gateway) and `parsegate health` (ask a
running one for `GET /health`), and the config file both read
(docs/operations.md).
"""

from __future__ import annotations

import argparse
import logging
import logging.config
import os
import sys
from pathlib import Path

from gateway.ops.env_overlay import CONFIG_FILE_VARIABLE, config_variables

DEFAULT_CONFIG = "config.yaml"
DEMO_CONFIG = Path(__file__).parent / "ops" / "demo_config.yaml"  # served when no config is found
HOW_TO_CONFIGURE = f"pass your config file with --config PATH or ${CONFIG_FILE_VARIABLE}=PATH"


def _config_path(args: argparse.Namespace) -> tuple[str, str | None]:
    """The config file to serve, and the option that named it (None: found
    by default). With no file named, ./config.yaml; with none there either
    and no PARSEGATE_*__* variables to build a config from, the demo."""
    if args.config:
        return args.config, "--config"
    if os.environ.get(CONFIG_FILE_VARIABLE):
        return os.environ[CONFIG_FILE_VARIABLE], f"${CONFIG_FILE_VARIABLE}"
    if Path(DEFAULT_CONFIG).exists() or config_variables(os.environ):
        return DEFAULT_CONFIG, None
    return str(DEMO_CONFIG), None


def serve_command(args: argparse.Namespace) -> int:
    from gateway.ops.config import ConfigError, load_config
    from gateway.ops.logs import logging_config
    from gateway.upstream.derived_parsers import with_template_parsers
    from gateway.upstream.template_backend import check_templates

    path, named_by = _config_path(args)
    try:
        config = load_config(path)
        check_templates(config.models)
        config = with_template_parsers(config)
    except ConfigError as error:
        missing = named_by and not Path(path).exists()
        hint = f" (named by {named_by}); {HOW_TO_CONFIGURE}, or neither to serve the built-in demo" if missing else ""
        print(f"parsegate: {error}{hint}", file=sys.stderr)
        return 2
    log_format = args.log_format or config.server.log_format
    if path == str(DEMO_CONFIG):
        logging.config.dictConfig(logging_config(log_format))
        logging.getLogger("parsegate.cli").warning(
            "no ./%s here: serving the built-in demo model; %s", DEFAULT_CONFIG, HOW_TO_CONFIGURE
        )
    from gateway.ops.store import StoreUnavailable
    from gateway.serve import CannotListen, serve  # the web stack loads only once there is something to serve

    try:
        serve(
            config,
            path,
            args.host or config.server.host,
            args.port or config.server.port,
            workers=args.workers,
            log_format=log_format,
        )
    except (CannotListen, StoreUnavailable) as error:
        print(f"parsegate: {error}", file=sys.stderr)
        return 1
    return 0


def health_command(args: argparse.Namespace) -> int:
    """Exit 0 when the gateway the config describes answers `GET /health`,
    else 1 (a container healthcheck: Docker reads any other code as 1)."""
    from urllib.error import URLError
    from urllib.request import urlopen

    from gateway.ops.config import ConfigError, load_config

    path, _ = _config_path(args)
    try:
        server = load_config(path).server
    except ConfigError as error:
        print(f"parsegate health: {error}", file=sys.stderr)
        return 1
    host = args.host or server.host
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # every interface: loopback
    url = f"http://{f'[{host}]' if ':' in host else host}:{args.port or server.port}/health"
    try:
        with urlopen(url, timeout=args.timeout) as answer:
            status = answer.status
    except (URLError, OSError) as error:
        print(f"parsegate health: {url}: {getattr(error, 'reason', None) or error}", file=sys.stderr)
        return 1
    print(f"{url}: {status}")
    return 0 if status == 200 else 1

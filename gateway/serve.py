"""Running the gateway: one process, or N uvicorn worker processes that
share the listening socket, to use several cores. uvicorn picks uvloop and
httptools when they are installed (the `speed` extra). uvicorn's access
log line, written before the response headers, can be turned off.

Workers are separate processes, each loading the config again: the path
goes to them in `$PARSEGATE_CONFIG`, which `app_from_environment` reads.
"""

from __future__ import annotations

import os

import uvicorn

from gateway.app import create_app
from gateway.config import Config, load_config

CONFIG_VARIABLE = "PARSEGATE_CONFIG"


def serve(config: Config, config_path: str, host: str, port: int, workers: int = 1, access_log: bool = True) -> None:
    options = {"host": host, "port": port, "loop": "auto", "http": "auto", "access_log": access_log}
    if workers == 1:
        uvicorn.run(create_app(config), **options)
        return
    os.environ[CONFIG_VARIABLE] = os.path.abspath(config_path)
    uvicorn.run("gateway.serve:app_from_environment", factory=True, workers=workers, **options)


def app_from_environment():
    """The app of one worker process."""
    return create_app(load_config(os.environ[CONFIG_VARIABLE]))

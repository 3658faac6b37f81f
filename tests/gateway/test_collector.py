"""The garbage collector of a serving process (gateway/ops/collector.py):
`parsegate serve`, in one process or in each of its workers, freezes what
start-up made and collects young objects less often, once its app starts.
An app made anywhere else (embedded in another program, or in these tests)
leaves the collector as it was."""

from __future__ import annotations

import gc
import logging.config

import pytest
from fastapi.testclient import TestClient

from gateway import app as app_module
from gateway import serve as serving
from gateway.app import create_app
from gateway.ops.collector import YOUNG_THRESHOLD
from gateway.ops.config import load_config
from gateway.ops.env_overlay import CONFIG_FILE_VARIABLE

CONFIG = "models:\n  - name: plain\n    backend:\n      url: http://127.0.0.1:9/v1\n"


@pytest.fixture
def config_path(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return str(path)


@pytest.fixture
def no_sighup(monkeypatch):
    """A served app reloads on SIGHUP, which only the main thread may
    handle, and TestClient runs the app on a thread of its own
    (tests/gateway/test_gateway_lifecycle.py reloads a real process)."""
    monkeypatch.setattr(app_module, "reload_on_sighup", lambda app, path, host: None)


@pytest.fixture
def collector():
    """The collector as this process had it, given back after the test."""
    threshold = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def assert_settled_once_started(app) -> None:
    assert gc.get_freeze_count() == 0
    with TestClient(app) as client:
        assert gc.get_freeze_count() > 1000  # the modules, classes and functions start-up made
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert client.get("/health").status_code == 200


def test_serve_in_one_process_settles_the_collector_as_its_app_starts(config_path, collector, no_sighup, monkeypatch):
    served = []
    monkeypatch.setattr(serving.uvicorn, "run", lambda app, **options: served.append(app))
    monkeypatch.setattr(logging.config, "dictConfig", lambda config: None)  # this process's logging stays
    serving.serve(load_config(config_path), config_path, "127.0.0.1", 0)
    assert_settled_once_started(served[0])


def test_each_worker_of_serve_settles_the_collector_as_its_app_starts(config_path, collector, no_sighup, monkeypatch):
    monkeypatch.setenv(CONFIG_FILE_VARIABLE, config_path)
    assert_settled_once_started(serving.app_from_environment())


def test_an_app_made_elsewhere_leaves_the_collector_alone(config_path, collector):
    threshold = gc.get_threshold()
    with TestClient(create_app(load_config(config_path))) as client:
        assert client.get("/health").status_code == 200
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == threshold

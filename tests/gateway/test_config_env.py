"""Every setting has an environment twin: `PARSEGATE_<PATH>` with `__`
between the parts of the key's path."""

from __future__ import annotations

import pytest

from gateway.ops.config import ConfigError, load_config
from parsers import tool_call_parser_names
from tests.gateway.test_cli import parsegate

BASE = "server:\n  port: 9000\nmodels:\n  - name: qwen3\n    backend: {url: 'http://10.0.0.1:8000/v1'}\n"


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(BASE)
    return path


def test_variables_override_the_file_with_typed_values(config_file):
    config = load_config(
        config_file,
        {
            "PARSEGATE_SERVER__PORT": "9100",
            "PARSEGATE_SERVER__METRICS_AUTH": "true",
            "PARSEGATE_SERVER__API_KEYS": "sk-one,sk-two",
            "PARSEGATE_MODELS__0__BACKEND__IDLE_TIMEOUT": "2.5",
            "PARSEGATE_MODELS__0__TOOL_CALL_PARSER": "qwen25",
            "PARSEGATE_CONFIG": "not-a-key.yaml",
        },
    )
    assert config.server.port == 9100 and config.server.metrics_auth is True
    assert config.server.api_keys == ["sk-one", "sk-two"]
    assert config.models[0].backend.idle_timeout == 2.5 and config.models[0].tool_call_parser == "qwen25"
    assert config.models[0].backend.url == "http://10.0.0.1:8000/v1"


def test_variables_can_add_a_model_and_lists(config_file):
    config = load_config(
        config_file,
        {
            "PARSEGATE_MODELS__1__NAME": "spread",
            "PARSEGATE_MODELS__1__BACKEND__URLS": "[http://a:1/v1, http://b:2/v1]",
            "PARSEGATE_SERVER__API_KEYS": '["123"]',
        },
    )
    assert [model.name for model in config.models] == ["qwen3", "spread"]
    assert config.models[1].backend.base_urls == ["http://a:1/v1", "http://b:2/v1"]
    assert config.server.api_keys == ["123"]


def test_without_a_file_the_environment_is_the_config(tmp_path):
    config = load_config(
        tmp_path / "absent.yaml",
        {
            "PARSEGATE_MODELS__0__NAME": "demo",
            "PARSEGATE_MODELS__0__BACKEND__DEMO": "true",
        },
    )
    assert config.models[0].backend.demo is True


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        ("PARSEGATE_MODELS__5__NAME", "x", "PARSEGATE_MODELS__5__NAME: '5' is not an index"),
        ("PARSEGATE_SERVER__PORT", "high", "server.port"),
        ("PARSEGATE_SERVER__PROT", "1", "unknown key 'prot' \\(did you mean 'port'\\?\\)"),
    ],
)
def test_a_bad_variable_is_named(config_file, variable, value, fragment):
    with pytest.raises(ConfigError, match=fragment):
        load_config(config_file, {variable: value})


def test_parsegate_serve_runs_on_the_environment_alone(tmp_path, fake_backend_server, fake):
    import httpx

    from tests.conftest import GatewayProcess

    gateway = GatewayProcess(
        str(tmp_path / "absent.yaml"),
        env={
            "PARSEGATE_SERVER__API_KEYS": "sk-env-key",
            "PARSEGATE_MODELS__0__NAME": "from-env",
            "PARSEGATE_MODELS__0__BACKEND__URL": f"{fake_backend_server[1]}/v1",
        },
    )
    try:
        headers = {"authorization": "Bearer sk-env-key"}
        assert httpx.get(f"{gateway.url}/v1/models", timeout=5).status_code == 401
        models = httpx.get(f"{gateway.url}/v1/models", headers=headers, timeout=5).json()["data"]
        assert [model["id"] for model in models] == ["from-env"]
        body = {"model": "from-env", "messages": [{"role": "user", "content": "Hi"}]}
        reply = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=headers, timeout=10)
        assert reply.json()["choices"][0]["message"]["content"] == "Hello!"
    finally:
        gateway.stop()


def test_backend_urls_expand_environment_variables(tmp_path, monkeypatch):
    """`${VAR}` expands in backend.url and backend.urls as in api_key (docs/configuration.md)."""
    monkeypatch.setenv("LLM_HOST", "10.0.0.7:8000")
    path = tmp_path / "config.yaml"
    path.write_text(
        "models:\n"
        "  - name: one\n    backend: {url: 'http://${LLM_HOST}/v1/'}\n"
        "  - name: two\n    backend: {urls: ['http://${LLM_HOST}/v1', 'http://127.0.0.1:9/v1']}\n"
    )
    one, two = load_config(path).models
    assert one.backend.url == "http://10.0.0.7:8000/v1"
    assert two.backend.urls == ["http://10.0.0.7:8000/v1", "http://127.0.0.1:9/v1"]


def test_an_unset_variable_in_a_backend_url_names_it(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_HOST", raising=False)
    path = tmp_path / "config.yaml"
    path.write_text("models:\n  - name: one\n    backend: {url: 'http://${NO_SUCH_HOST}/v1'}\n")
    with pytest.raises(ConfigError, match="NO_SUCH_HOST is not set"):
        load_config(path)


def test_a_bad_value_from_a_variable_names_the_variable_not_the_file(config_file):
    result = parsegate("serve", "--config", str(config_file), env={"PARSEGATE_SERVER__PORT": "high"})
    assert result.returncode == 2
    assert result.stderr.startswith("parsegate: environment variable PARSEGATE_SERVER__PORT: server.port: ")
    assert str(config_file) not in result.stderr
    result = parsegate("serve", "--config", str(config_file), env={"PARSEGATE_SERVER__PROT": "9000"})
    assert result.stderr.startswith(
        "parsegate: environment variable PARSEGATE_SERVER__PROT: server: unknown key 'prot' (did you mean 'port'?)"
    )


def test_errors_from_the_file_and_from_a_variable_each_name_their_source(config_file):
    config_file.write_text(BASE.replace("name: qwen3", "name: qwen3\n    tool_call_parser: qwen26"))
    with pytest.raises(ConfigError) as error:
        load_config(config_file, {"PARSEGATE_MODELS__0__BACKEND__URL": "10.0.0.1:8000/v1"})
    assert str(error.value) == (
        "environment variable PARSEGATE_MODELS__0__BACKEND__URL: models[0].backend.url: "
        "must be an http:// or https:// URL, got '10.0.0.1:8000/v1' | "
        f"{config_file}: models[0].tool_call_parser: unknown tool-call parser 'qwen26' (did you mean 'qwen25'?); "
        "allowed: " + ", ".join([*tool_call_parser_names(), "none"])
    )


def test_without_a_file_an_error_names_the_variables(tmp_path):
    with pytest.raises(ConfigError, match=r"^the PARSEGATE_\* environment variables \(no file .*absent.yaml\): models"):
        load_config(tmp_path / "absent.yaml", {"PARSEGATE_SERVER__PORT": "9000"})


def test_a_bad_value_expanded_from_a_variable_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_URL", "localhost:8000/v1")
    monkeypatch.setenv("TEAM_KEY", "")
    path = tmp_path / "config.yaml"
    path.write_text("server: {api_keys: ['${TEAM_KEY}']}\nmodels:\n  - name: one\n    backend: {url: '${LLM_URL}'}\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == (
        f"{path}: server.api_keys: API keys must be non-empty strings (from environment variable TEAM_KEY) | "
        "models[0].backend.url: must be an http:// or https:// URL, got 'localhost:8000/v1' "
        "(from environment variable LLM_URL)"
    )

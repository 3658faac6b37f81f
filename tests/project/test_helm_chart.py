"""The Helm chart (deploy/helm/parsegate) renders to valid manifests: the
config the gateway accepts, API keys from a Secret, probes on /health,
the metrics annotations. No `helm` binary installs from Debian or PyPI
here, so the chart is rendered by tests/project/helm_template.py, which
implements the template language the chart uses."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

from gateway.ops.config import load_config
from tests.project.helm_template import TemplateError, merged, render_chart

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "parsegate"
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
KEYS = {"apiKeys": {"secretName": "parsegate-keys", "create": True, "keys": ["sk-team-a", "sk-team-b"]}}


def manifests(values: dict, release: str = "demo") -> dict[str, dict]:
    """The rendered objects by kind (one of each here); every file must be YAML."""
    rendered = render_chart(CHART, values, release)
    objects = [yaml.safe_load(text) for name, text in rendered.items() if name.endswith(".yaml")]
    return {item["kind"]: item for item in objects if item is not None}


def container(objects: dict[str, dict]) -> dict:
    (only,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


def test_the_chart_versions_follow_the_package():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert chart["apiVersion"] == "v2" and chart["appVersion"] == version
    assert container(manifests(VALUES))["image"] == f"parsegate:{version}"


def test_the_default_values_render_a_config_the_gateway_accepts(tmp_path):
    objects = manifests(VALUES)
    assert sorted(objects) == ["ConfigMap", "Deployment", "Service"]  # no Secret without keys
    config_text = objects["ConfigMap"]["data"]["config.yaml"]
    assert yaml.safe_load(config_text) == VALUES["config"]
    path = tmp_path / "config.yaml"
    path.write_text(config_text)
    config = load_config(path, environ={})
    assert [(model.name, model.backend.server) for model in config.models] == [("qwen3", "vllm")]
    assert config.server.api_keys == []


def test_the_pod_serves_the_mounted_config_on_the_probed_and_scraped_port():
    objects = manifests(VALUES)
    pod = objects["Deployment"]["spec"]["template"]
    main = container(objects)
    mounts = {mount["name"]: mount for mount in main["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert sorted(mounts) == sorted(volumes) == ["config", "state"]
    mount = mounts["config"]
    assert volumes["config"]["configMap"] == {"name": objects["ConfigMap"]["metadata"]["name"]}
    # the default SQLite store (docs/state.md) is written where the image runs
    assert volumes["state"] == {"name": "state", "emptyDir": {}}
    assert mounts["state"]["mountPath"] == "/var/lib/parsegate" and not mounts["state"].get("readOnly")
    args = main["args"]
    assert args[args.index("--config") + 1] == f"{mount['mountPath']}/config.yaml"
    assert args[args.index("--host") + 1] == "0.0.0.0"
    assert main["ports"] == [{"name": "http", "containerPort": int(args[args.index("--port") + 1])}]
    for probe in ("readinessProbe", "livenessProbe"):
        assert main[probe]["httpGet"] == {"path": "/health", "port": "http"}
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/path"] == "/metrics"
    assert annotations["prometheus.io/port"] == str(main["ports"][0]["containerPort"])
    service = objects["Service"]["spec"]
    assert service["selector"] == objects["Deployment"]["spec"]["selector"]["matchLabels"]
    assert service["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["ports"][0]["targetPort"] == "http"


def test_api_keys_come_from_a_secret_the_gateway_reads(tmp_path):
    objects = manifests(merged(VALUES, KEYS))
    secret = objects["Secret"]
    assert secret["metadata"]["name"] == "parsegate-keys"
    main = container(objects)
    (variable,) = main["env"]
    keys_mount = next(mount for mount in main["volumeMounts"] if mount["name"] == "api-keys")
    volumes = objects["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "api-keys", "secret": {"secretName": "parsegate-keys"}} in volumes
    # The pod as kubelet lays it out: each Secret key a file in the mounted folder.
    (key_name, key_file_text) = next(iter(secret["stringData"].items()))
    assert variable["value"] == f"{keys_mount['mountPath']}/{key_name}"
    keys_file = tmp_path / key_name
    keys_file.write_text(key_file_text)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(objects["ConfigMap"]["data"]["config.yaml"])
    config = load_config(config_file, environ={variable["name"]: str(keys_file)})
    assert config.server.api_keys == ["sk-team-a", "sk-team-b"]


def test_model_entries_and_metrics_annotations_come_from_values(tmp_path):
    models = [
        {"name": "coder", "backend": {"url": "http://sglang:30000/v1", "server": "sglang"}},
        {"name": "small", "backend": {"url": "http://llama:8080/v1", "server": "llamacpp"}},
    ]
    values = merged(VALUES, {"config": {"models": models}, "metrics": {"podAnnotations": False}})
    objects = manifests(values, release="parsegate")
    assert objects["Deployment"]["metadata"]["name"] == "parsegate"
    assert "prometheus.io/scrape" not in objects["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    path = tmp_path / "config.yaml"
    path.write_text(objects["ConfigMap"]["data"]["config.yaml"])
    assert [model.name for model in load_config(path, environ={}).models] == ["coder", "small"]


def test_a_created_secret_needs_its_name():
    with pytest.raises(TemplateError, match="apiKeys.create needs apiKeys.secretName"):
        manifests(merged(VALUES, {"apiKeys": {"create": True, "keys": ["sk-x"]}}))


@pytest.mark.parametrize(
    ("template", "values", "expected"),
    [
        ("a:\n  {{- .Values.x | nindent 4 }}\nb", {"x": "one\ntwo"}, "a:\n    one\n    two\nb"),
        ("{{ if .Values.x }}yes{{ else }}no{{ end }}", {"x": []}, "no"),
        ('{{ .Values.x | default "d" | quote }}', {"x": ""}, '"d"'),
        ("x {{- /* note */ -}} y", {}, "xy"),
        ('{{ join "," (list) }}', {}, None),  # an unknown function is an error, not silence
    ],
)
def test_the_renderer_follows_go_templates(tmp_path, template, values, expected):
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("name: t\nversion: 0.1.0\nappVersion: '1'\n")
    (tmp_path / "templates" / "t.txt").write_text(template)
    if expected is None:
        with pytest.raises(TemplateError):
            render_chart(tmp_path, values)
    else:
        assert render_chart(tmp_path, values)["t.txt"] == expected

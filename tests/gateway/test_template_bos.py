"""Template mode against llama.cpp's server: the template's BOS is taken off
the prompt only when the server will add its own, which llama.cpp does when
the model says so (GGUF `tokenizer.ggml.add_bos_token`, tokenizer_config.json
`add_bos_token`). With `chat_template: backend` the server is asked, since
its `GET /props` does not say: what its `POST /tokenize` makes of an empty
text with its special tokens. The prompt the backend receives shows which."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from gateway.app import create_app
from gateway.ops.config import Config
from tests.scripted_backend import ScriptedBackend, completion_answer
from tests.sdk_clients import openai_client

TEMPLATE = "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
MESSAGES = [{"role": "user", "content": "Hi"}]
RENDERED = "<s><|user|>Hi"
# source -> the template source's add_bos_token (None: it says nothing)
SOURCES = {
    "config-adds": True,
    "config-adds-none": False,
    "config-silent": None,
    "gguf-adds": True,
    "gguf-adds-none": False,
}


def _tokenizer_config(folder: Path, add_bos_token: bool | None) -> Path:
    config: dict = {"chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": "</s>"}
    if add_bos_token is not None:
        config["add_bos_token"] = add_bos_token
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder / "tokenizer_config.json"


def _gguf(path: Path, add_bos_token: bool) -> Path:
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_chat_template(TEMPLATE)
    writer.add_token_list(["<unk>", "<s>", "</s>"])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(add_bos_token)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def client(serve, fake_backend_server, tmp_path_factory) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    folder = tmp_path_factory.mktemp("bos")
    models = []
    for name, adds in SOURCES.items():
        if name.startswith("gguf"):
            source = _gguf(folder / f"{name}.gguf", bool(adds))
        else:
            source = _tokenizer_config(folder / name, adds)
        backend = {"url": f"{fake_url}/v1", "server": "llamacpp"}
        models.append({"name": name, "backend": backend, "chat_template": str(source), "tool_call_parser": "none"})
    app = create_app(Config.model_validate({"models": models}))
    return openai_client(serve(app))


@pytest.mark.parametrize(
    ("model", "prompt"),
    [
        ("config-adds", RENDERED.removeprefix("<s>")),
        ("config-adds-none", RENDERED),
        ("config-silent", RENDERED.removeprefix("<s>")),  # llama.cpp's default for most models: it adds one
        ("gguf-adds", RENDERED.removeprefix("<s>")),
        ("gguf-adds-none", RENDERED),
    ],
)
def test_the_bos_is_stripped_only_when_llama_cpp_adds_its_own(client, fake, model, prompt):
    fake.script("Hello.")
    client.chat.completions.create(model=model, messages=MESSAGES)
    assert fake.last_body["prompt"] == prompt


@pytest.fixture(scope="module")
def asked(serve) -> tuple[openai.OpenAI, dict[bool, ScriptedBackend]]:
    """A gateway with a `chat_template: backend` model on a llama.cpp-like
    server that adds a BOS, and one on a server that adds none."""
    servers = {adds: ScriptedBackend() for adds in (True, False)}
    models = []
    for adds, server in servers.items():
        server.routes["/props"] = (200, {"chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": "</s>"})
        server.routes["/tokenize"] = (200, {"tokens": [{"id": 1, "piece": "<s>"}] if adds else []})
        server.routes["/v1/completions"] = completion_answer("Hello.")
        backend = {"url": f"{server.url}/v1", "server": "llamacpp"}
        models.append(
            {"name": f"adds-{adds}", "backend": backend, "chat_template": "backend", "tool_call_parser": "none"}
        )
    app = create_app(Config.model_validate({"models": models}))
    client = openai_client(serve(app))
    return client, servers


@pytest.mark.parametrize(("adds", "prompt"), [(True, RENDERED.removeprefix("<s>")), (False, RENDERED)])
def test_with_the_server_s_template_the_server_says_whether_it_adds_a_bos(asked, adds, prompt):
    client, servers = asked
    client.chat.completions.create(model=f"adds-{adds}", messages=MESSAGES)
    assert servers[adds].received("/v1/completions")[-1]["prompt"] == prompt
    assert servers[adds].received("/tokenize") == [{"content": "", "add_special": True, "with_pieces": True}]

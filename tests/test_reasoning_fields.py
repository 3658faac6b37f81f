"""Reasoning on the way out (the field name per model) and the reasoning
switches on the way in (`reasoning_effort`, `reasoning: {effort}`), through
the real gateway with the official `openai` client."""

from __future__ import annotations

import openai
import pytest

from gateway.app import create_app
from gateway.config import Config, ConfigError, load_config
from tests.test_gateway_e2e import MESSAGES, THINK_THEN_ANSWER


@pytest.fixture(scope="module")
def client(serve, fake_backend_server) -> openai.OpenAI:
    _, fake_url = fake_backend_server
    backend = {"url": f"{fake_url}/v1"}
    models = [
        {"name": f"qwen3-{field}", "backend": backend, "reasoning_parser": "qwen3", "reasoning_field": field}
        for field in ("reasoning_content", "reasoning", "both")
    ]
    models += [
        {"name": "deepseek", "backend": backend, "reasoning_parser": "deepseek-v3"},
        {"name": "r1", "backend": backend, "reasoning_parser": "deepseek-r1"},
    ]
    url = serve(create_app(Config.model_validate({"models": models})))
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=10)


def reasoning_fields(client, fake, text: str, **request) -> tuple[dict, dict]:
    """The message's reasoning fields, and the streamed deltas' joined per field."""
    fake.script(text, chunk_size=3)
    message = client.chat.completions.create(messages=MESSAGES, **request).choices[0].message.to_dict()
    streamed: dict[str, str] = {}
    for chunk in client.chat.completions.create(messages=MESSAGES, stream=True, **request):
        for choice in chunk.choices:
            for key, value in choice.delta.to_dict().items():
                if key.startswith("reasoning") and value:
                    streamed[key] = streamed.get(key, "") + value
    whole = {key: value for key, value in message.items() if key.startswith("reasoning")}
    return whole, streamed


@pytest.mark.parametrize(
    ("field", "keys"),
    [("reasoning_content", ["reasoning_content"]), ("reasoning", ["reasoning"]), ("both", ["reasoning_content", "reasoning"])],
)
def test_the_reasoning_field_name_is_chosen_per_model(client, fake, field, keys):
    whole, streamed = reasoning_fields(client, fake, THINK_THEN_ANSWER, model=f"qwen3-{field}")
    expected = {key: "\nThe user asks about Paris.\n" for key in keys}
    assert whole == expected and streamed == expected


def test_an_unknown_reasoning_field_stops_start_up(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("models:\n  - name: m\n    backend: {url: 'http://127.0.0.1:9/v1'}\n    reasoning_field: thoughts\n")
    with pytest.raises(ConfigError, match=r"models\[0\]\.reasoning_field.*'reasoning_content', 'reasoning' or 'both'"):
        load_config(path)

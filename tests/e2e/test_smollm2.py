"""A real model through parsegate: SmolLM2-135M-Instruct (smollm2.py) on
llama-server, with the config README.md serves it with (docs/smollm2.yaml),
in chat mode and in template mode with the chat template read from the
GGUF. Greedy decoding gives the same answer on every run; it must come back
whole through the official openai SDK, streamed and not, and end where the
model ends its turn: finish_reason "stop" well before max_tokens, with no
end-of-turn text in the content."""

from __future__ import annotations

import openai
import pytest
import yaml

from gateway.app import create_app
from gateway.ops.config import Config
from tests.e2e.llama import RAW_TEXT_ARGS
from tests.project import ROOT
from tests.sdk_clients import openai_client

QUESTION = [{"role": "user", "content": "Tell me the capital of France."}]
MAX_TOKENS = 24  # the answer is 8 tokens, its end of turn included
TURN_MARKERS = ("<|im_end|>", "<|im_start|>", "<|endoftext|>")  # the GGUF's EOS, BOS and padding


@pytest.fixture(scope="module")
def client(serve, start_llama_server, smollm2_model) -> openai.OpenAI:
    server = start_llama_server(*RAW_TEXT_ARGS, model=smollm2_model)
    [entry] = yaml.safe_load((ROOT / "docs" / "smollm2.yaml").read_text(encoding="utf-8"))["models"]
    entry["backend"] = {**entry["backend"], "url": f"{server.url}/v1", "timeout": 120}
    template = {**entry, "name": "smollm2-template", "chat_template": str(smollm2_model)}
    url = serve(create_app(Config.model_validate({"models": [entry, template]})))
    return openai_client(url, timeout=120)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("model", ["smollm2", "smollm2-template"])
def test_the_model_s_answer_comes_back_whole_and_ends_at_its_end_of_turn(client, model, stream):
    request = {"model": model, "messages": QUESTION, "max_tokens": MAX_TOKENS, "temperature": 0, "seed": 7}
    if stream:
        chunks = list(client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True}))
        content = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
        [finish] = [
            chunk.choices[0].finish_reason for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason
        ]
        usage = chunks[-1].usage
    else:
        reply = client.chat.completions.create(**request)
        content, finish, usage = reply.choices[0].message.content or "", reply.choices[0].finish_reason, reply.usage
    assert "Paris" in content, content
    assert not any(marker in content for marker in TURN_MARKERS), content
    assert finish == "stop" and usage is not None and usage.completion_tokens < MAX_TOKENS, (finish, usage)


def test_template_mode_sends_the_prompt_the_server_itself_renders(client):
    """The GGUF says its tokenizer adds no BOS (`add_bos_token` false), and
    its BOS is `<|im_start|>`: template mode must keep the template's
    leading `<|im_start|>`, so the server counts the same prompt tokens as
    when it renders the template itself."""
    request = {"messages": QUESTION, "max_tokens": 1, "temperature": 0}
    chat = client.chat.completions.create(model="smollm2", **request).usage
    template = client.chat.completions.create(model="smollm2-template", **request).usage
    assert chat is not None and template is not None
    assert template.prompt_tokens == chat.prompt_tokens, (template, chat)

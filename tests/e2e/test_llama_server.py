"""The real-server infrastructure, proved against llama.cpp's llama-server.

A tiny random model is forced by a one-literal grammar to write a known
text; that text must come back byte for byte through real sampling,
tokenisation and detokenisation. What the tests observe of the server is
written up in tests/e2e/README.md.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.e2e.llama import literal_grammar
from tests.e2e.tiny_gguf import BOS, CHAT_TEMPLATE, EOS, MARKERS

# Reasoning, a Hermes tool call, and text that needs escaping in JSON and
# GBNF alike: quotes, a backslash, a tab, newlines, 2-, 3- and 4-byte UTF-8.
FORCED = (
    '<think>Naïve plan: "ask" the API\\tool\tfor 東京 🌦</think>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "°C"}}\n</tool_call>'
)

USER = [{"role": "user", "content": "Weather in Zürich?"}]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def sse_events(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON events of an SSE stream, up to its `[DONE]`."""
    assert response.status_code == 200, response.read()
    assert response.headers["content-type"].startswith("text/event-stream")
    events: list[dict[str, Any]] = []
    for line in response.iter_lines():
        if not line.startswith("data: "):
            continue
        data = line.removeprefix("data: ")
        if data == "[DONE]":
            return events
        events.append(json.loads(data))
    raise AssertionError("stream ended without [DONE]")


def complete(client: httpx.Client, body: dict[str, Any]) -> tuple[str, str | None, list[str]]:
    """POST /v1/completions: the text, finish_reason and (streamed) deltas."""
    body = {"seed": 7, **body}
    if not body.get("stream"):
        response = client.post("/v1/completions", json=body)
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        return choice["text"], choice["finish_reason"], [choice["text"]]
    with client.stream("POST", "/v1/completions", json=body) as response:
        events = sse_events(response)
    deltas = [e["choices"][0]["text"] for e in events if e["choices"]]
    finish = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    return "".join(deltas), finish[-1], [d for d in deltas if d]


def chat(client: httpx.Client, body: dict[str, Any]) -> tuple[str, str | None, list[str]]:
    """POST /v1/chat/completions: the content, finish_reason and deltas."""
    body = {"seed": 7, "messages": USER, **body}
    if not body.get("stream"):
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        message = choice["message"]
        assert not message.get("reasoning_content")
        assert not message.get("tool_calls")
        return message["content"], choice["finish_reason"], [message["content"]]
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        events = sse_events(response)
    deltas: list[str] = []
    finish: str | None = None
    for event in events:
        for choice in event["choices"]:
            delta = choice["delta"]
            assert not delta.get("reasoning_content")
            assert not delta.get("tool_calls")
            if delta.get("content"):
                deltas.append(delta["content"])
            finish = choice["finish_reason"] or finish
    return "".join(deltas), finish, deltas


ENDPOINTS = {"completions": complete, "chat": chat}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_forced_output_comes_back_byte_exact(llama: httpx.Client, endpoint: str, stream: bool) -> None:
    body = {"grammar": literal_grammar(FORCED), "max_tokens": 400, "stream": stream}
    if endpoint == "completions":
        body["prompt"] = "Weather in Zürich?\n"
    text, finish, deltas = ENDPOINTS[endpoint](llama, body)
    assert text.encode() == FORCED.encode()
    assert finish == "stop"
    if stream:
        # In pieces, yet none of them a broken UTF-8 sequence: the server
        # holds back the bytes of an unfinished character.
        assert len(deltas) > 1
        assert "東" in deltas and "🌦" in deltas


def marker_ids(client: httpx.Client) -> dict[str, int]:
    ids = {}
    for marker in MARKERS:
        tokens = client.post("/tokenize", json={"content": marker}).json()["tokens"]
        assert len(tokens) == 1, (marker, tokens)
        ids[marker] = tokens[0]
    return ids


# The marker texts that llama.cpp itself retypes as end-of-generation
# CONTROL tokens; the grammar keeps the sampler from picking them mid-text.
END_OF_GENERATION = {"<|im_end|>", "<|call|>", "<|return|>"}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_marker_token_is_rendered_as_text(llama: httpx.Client, endpoint: str) -> None:
    """Pushed by logit_bias, the sampler takes each marker as one token
    wherever the grammar allows; the text still spells every marker."""
    ids = marker_ids(llama)
    text_in = "".join(f"{marker}{i}" for i, marker in enumerate(MARKERS))
    body: dict[str, Any] = {
        "grammar": literal_grammar(text_in),
        "max_tokens": 600,
        "logit_bias": [[token, 100] for token in ids.values()],
        "seed": 1,
        "logprobs": True if endpoint == "chat" else 1,
    }
    if endpoint == "chat":
        body["messages"] = USER
        response = llama.post("/v1/chat/completions", json=body)
    else:
        body["prompt"] = "x"
        response = llama.post("/v1/completions", json=body)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    text = choice["text"] if endpoint == "completions" else choice["message"]["content"]
    assert text == text_in
    assert choice["finish_reason"] == "stop"
    sampled = [entry["token"] for entry in choice["logprobs"]["content"]]
    single = set(MARKERS) - END_OF_GENERATION
    assert single <= set(sampled)
    assert not END_OF_GENERATION & set(sampled)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_stream_splits_a_marker_spelled_in_bytes(llama: httpx.Client, endpoint: str) -> None:
    """A stream's deltas are the sampled tokens: a marker sampled as its
    token is one delta, a marker spelled in bytes is several."""
    think = marker_ids(llama)["<think>"]
    text_in = "<think>ok</think>done"
    for bias, expected in ((100, ["<think>"]), (False, None)):
        body: dict[str, Any] = {
            "grammar": literal_grammar(text_in),
            "max_tokens": 60,
            "stream": True,
            "logit_bias": [[think, bias]],
        }
        if endpoint == "completions":
            body["prompt"] = "x"
        text, finish, deltas = ENDPOINTS[endpoint](llama, body)
        assert (text, finish) == (text_in, "stop")
        head: list[str] = []
        while "".join(head) != "<think>":
            head.append(deltas[len(head)])
        if expected is not None:
            assert head == expected
        else:
            assert len(head) > 1, head


def test_props_give_template_bos_and_eos(llama: httpx.Client) -> None:
    props = llama.get("/props").json()
    assert props["chat_template"] == CHAT_TEMPLATE
    assert props["bos_token"] == BOS
    assert props["eos_token"] == EOS
    # Per slot: the context is shared among the server's slots (-np).
    assert props["default_generation_settings"]["n_ctx"] == 4096


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_max_tokens_cuts_with_finish_reason_length(llama: httpx.Client, endpoint: str, stream: bool) -> None:
    body = {"grammar": literal_grammar(FORCED), "max_tokens": 12, "stream": stream}
    if endpoint == "completions":
        body["prompt"] = "x"
    text, finish, _ = ENDPOINTS[endpoint](llama, body)
    assert finish == "length"
    assert text and FORCED.startswith(text) and text != FORCED


def test_grammar_with_tools_is_refused_unless_tool_choice_none(llama: httpx.Client) -> None:
    body = {"messages": USER, "tools": TOOLS, "grammar": literal_grammar(FORCED)}
    for tool_choice in (None, "auto", "required"):
        sent = body if tool_choice is None else {**body, "tool_choice": tool_choice}
        response = llama.post("/v1/chat/completions", json=sent)
        assert response.status_code == 400, (tool_choice, response.text)
        error = response.json()["error"]
        assert error["message"] == "Cannot use custom grammar constraints with tools."
        assert error["type"] == "invalid_request_error"
    text, finish, _ = chat(llama, {**body, "tool_choice": "none", "max_tokens": 400})
    assert (text, finish) == (FORCED, "stop")


def prompt_tokens(client: httpx.Client, path: str, body: dict[str, Any]) -> int:
    body = {"max_tokens": 1, "grammar": literal_grammar("a"), **body}
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return int(response.json()["usage"]["prompt_tokens"])


def test_completions_add_bos_and_parse_special_tokens(llama: httpx.Client) -> None:
    # The byte vocabulary makes one token a byte, so "hi" is 2 tokens.
    assert prompt_tokens(llama, "/v1/completions", {"prompt": "hi"}) == 1 + 2
    # The BOS text is parsed as the BOS token: a prompt that already starts
    # with it gets two.
    assert prompt_tokens(llama, "/v1/completions", {"prompt": BOS + "hi"}) == 2 + 2
    # Markers in the prompt are parsed as one token each.
    assert prompt_tokens(llama, "/v1/completions", {"prompt": "<think>hi"}) == 1 + 1 + 2


def test_chat_prompt_has_one_bos(llama: httpx.Client) -> None:
    """The template writes `{{ bos_token }}`, but the server takes that text
    off the rendered prompt and adds the BOS token: one BOS in all."""
    rendered = llama.post("/apply-template", json={"messages": USER}).json()["prompt"]
    assert rendered == "<|im_start|>user\nWeather in Zürich?<|im_end|>\n<|im_start|>assistant\n"
    tokens = llama.post("/tokenize", json={"content": rendered}).json()["tokens"]
    assert prompt_tokens(llama, "/v1/chat/completions", {"messages": USER}) == 1 + len(tokens)
    # The same prompt sent to /v1/completions gets the same BOS...
    assert prompt_tokens(llama, "/v1/completions", {"prompt": rendered}) == 1 + len(tokens)
    # ...and a second one if the gateway renders the BOS text itself.
    assert prompt_tokens(llama, "/v1/completions", {"prompt": BOS + rendered}) == 2 + len(tokens)

"""Template mode's wire: a chat request as a `/v1/completions` request, and
the completions answer read back as a chat answer.

Out: the rendered prompt, and the request's sampling fields mapped —
`max_completion_tokens` is `max_tokens`, `logprobs: true` with
`top_logprobs: N` is `logprobs: N`, `stop` is the request's or else the
template's end-of-turn texts; fields only a chat request has (`messages`,
`tools`, `tool_choice`, `response_format`…) are dropped, every other field
passes through as sent (`seed`, `n`, penalties, `stream_options`,
decoding constraints, a server's own extras). How the prompt's BOS is kept
single, and whether special tokens are asked for, is the server's dialect:

| server | BOS the template wrote | special tokens |
|---|---|---|
| `vllm`, `sglang` | kept; `add_special_tokens: false` | `skip_special_tokens: false` |
| `llamacpp` | stripped (the server adds its own), unless the template source says the model adds none | always rendered as text |
| `other` | kept as rendered | not asked |

In: each completions choice's `text` is the chat choice's content, with
its `finish_reason`, and its logprobs in the chat shape.
"""

from __future__ import annotations

from typing import Any

CHAT_ONLY_FIELDS = (
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "chat_template_kwargs",
    "documents",
    "response_format",
    "reasoning_effort",
    "reasoning",
    "max_completion_tokens",
    "top_logprobs",
    "logprobs",
    "add_generation_prompt",
    "continue_final_message",
)
ADDS_BOS_ITSELF = ("llamacpp",)
TAKES_SPECIAL_TOKEN_FLAGS = ("vllm", "sglang")


def completion_body(chat: dict[str, Any], prompt: str, stop_texts: list[str], server: str) -> dict[str, Any]:
    """The completions request for a chat request whose prompt is `prompt`."""
    body = {key: value for key, value in chat.items() if key not in CHAT_ONLY_FIELDS}
    body["prompt"] = prompt
    max_tokens = chat.get("max_completion_tokens", chat.get("max_tokens"))
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if chat.get("logprobs"):
        body["logprobs"] = chat.get("top_logprobs") or 0
    if chat.get("stop") is None and stop_texts:
        body["stop"] = stop_texts
    if server in TAKES_SPECIAL_TOKEN_FLAGS:
        body["add_special_tokens"] = False
        body.setdefault("skip_special_tokens", False)
    return body


def chat_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
    """A streamed completions chunk as a chat completion chunk."""
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return chunk
    if len(choices) == 1 and isinstance(choices[0], dict):  # every chunk of a request for one choice
        return {**chunk, "choices": [_chat_choice(choices[0], "delta")]}
    read = [_chat_choice(choice, "delta") for choice in choices if isinstance(choice, dict)]
    return {**chunk, "choices": read}


def chat_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """A completions answer as a chat completion."""
    choices = answer.get("choices")
    if not isinstance(choices, list):
        return answer
    read = [_chat_choice(choice, "message") for choice in choices if isinstance(choice, dict)]
    return {**answer, "choices": read}


def _chat_choice(choice: dict[str, Any], part: str) -> dict[str, Any]:
    text = choice.get("text")
    read = {
        "index": choice.get("index", 0),
        part: {"content": text} if isinstance(text, str) else {},
        "finish_reason": choice.get("finish_reason"),
    }
    logprobs = choice.get("logprobs")
    if logprobs is not None and (logprobs := _chat_logprobs(logprobs)) is not None:
        read["logprobs"] = logprobs
    return read


def _chat_logprobs(logprobs: object) -> dict[str, Any] | None:
    """Completions logprobs (`tokens`, `token_logprobs`, `top_logprobs`
    lists side by side) as chat's `{"content": [{token, logprob, top_logprobs}]}`."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("tokens"), list):
        return None
    tokens = logprobs["tokens"]
    values = logprobs.get("token_logprobs") or [None] * len(tokens)
    tops = logprobs.get("top_logprobs") or [None] * len(tokens)
    content = []
    for token, value, top in zip(tokens, values, tops, strict=False):
        alternatives = top.items() if isinstance(top, dict) else ()
        content.append(
            {
                "token": token,
                "logprob": value,
                "top_logprobs": [{"token": other, "logprob": score} for other, score in alternatives],
            }
        )
    return {"content": content}

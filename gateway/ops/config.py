"""config.yaml: the served models, their backends and parsers (docs/configuration.md).

Everything is checked at start-up: unknown keys, malformed values, unknown
parser names and duplicate model names are errors naming the key and what
it accepts, so a typo never surfaces as a surprise at request time.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gateway.ops.backend_config import BackendConfig
from gateway.ops.config_section import Section
from gateway.ops.env_overlay import apply_environment, config_variables, expand_variables, from_variables, variable_at
from gateway.ops.model_families import family_of
from gateway.ops.request_bounds import RequestBounds, with_server_bounds
from gateway.ops.response_template_file import load_response_template
from gateway.ops.server_config import ServerConfig
from gateway.ops.servers import SERVERS, ServerKind
from gateway.ops.store_config import StoreConfig
from gateway.ops.validation_errors import describe_errors, described, error_items, unknown_name
from parsers import reasoning_parser_name, reasoning_parser_names, tool_call_parser_name, tool_call_parser_names
from parsers.formats.response_template import TemplateFormats
from parsers.stages.reasoning import ReasoningFormat
from parsers.stages.tool_calls import ToolFormat

CATCH_ALL = "*"  # the model entry that serves every name no other entry has
CHAT_TEMPLATE_FROM_BACKEND = "backend"  # ask the server (llama.cpp GET /props)
NO_PARSER = "none"  # a parser setting that turns the stage off (and the name lookup with it)
OWNED_BY_GATEWAY = ("model", "messages", "prompt", "stream")  # request fields extra_body may not set


class ConfigError(Exception):
    """The configuration cannot be used; the message is one line for humans,
    except a YAML syntax error, whose line is followed by PyYAML's own
    lines: the text around the place and a caret under it."""


class ModelConfig(Section, RequestBounds):
    name: str = Field(min_length=1)
    backend: BackendConfig
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None
    guided_decoding: Literal["vllm", "sglang", "llamacpp", "none"] | None = None  # None: the server's
    reasoning_field: Literal["reasoning_content", "reasoning", "both"] = "reasoning_content"
    keep_special_tokens: bool | None = None  # None: when the parsers need them
    extra_body: dict[str, Any] = {}
    images: bool = False  # the model takes images, also from tool results (docs/api.md)
    chat_template: str | None = None  # template mode: a .jinja, tokenizer_config.json or .gguf path, or "backend"
    bos_token: str | None = None  # template mode: overrides the template source's
    eos_token: str | None = None
    response_template: str | None = None  # a declarative response format (tokenizer_config.json or JSON)
    parsers_from: str | None = None  # a chat template source the parsers are derived from (docs/derived-parsers.md)

    @field_validator("chat_template", "parsers_from")
    @classmethod
    def _template_path(cls, source: str, info: ValidationInfo) -> str:
        """`backend`, or a path (relative to the config file's folder) that exists."""
        expanded = expand_variables(source)
        if expanded == CHAT_TEMPLATE_FROM_BACKEND:
            return expanded
        base = (info.context or {}).get("config_dir", ".")
        path = Path(base, expanded).expanduser()
        if not path.exists():
            raise ValueError(
                f"no such file: {path}{from_variables(source)}; "
                "give a .jinja, tokenizer_config.json or .gguf file, or 'backend'"
            )
        return str(path)

    @field_validator("extra_body")
    @classmethod
    def _mergeable_extra_body(cls, extra: dict[str, Any]) -> dict[str, Any]:
        owned = [key for key in OWNED_BY_GATEWAY if key in extra]
        if owned:
            raise ValueError(f"{owned[0]!r} cannot be set here; it comes from the request and this config")
        if not isinstance(extra.get("chat_template_kwargs", {}), dict):
            raise ValueError("'chat_template_kwargs' must be a mapping")
        return extra

    _parsers_from_name: bool = PrivateAttr(default=False)
    _response_formats: TemplateFormats | None = PrivateAttr(default=None)
    _parsers_origin: str = PrivateAttr(default="config")
    _derived_stages: tuple[ReasoningFormat | None, ToolFormat | None] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _compiled_response_template(self, info: ValidationInfo) -> ModelConfig:
        """The `response_template` file, read and compiled once; it declares
        both stages, so it does not mix with parser names."""
        if self.response_template is None:
            return self
        named = [key for key in ("reasoning_parser", "tool_call_parser") if getattr(self, key) is not None]
        if named:
            raise ValueError(
                f"model {self.name!r}: response_template and {' / '.join(named)} cannot be combined: "
                "the template declares the reasoning and the tool-call format"
            )
        base = (info.context or {}).get("config_dir", ".")
        path = Path(base, expand_variables(self.response_template)).expanduser()
        try:
            formats = load_response_template(path)
        except ValueError as error:
            raise ValueError(
                f"model {self.name!r}: response_template {error}{from_variables(self.response_template)}"
            ) from None
        compiled = self.model_copy(update={"response_template": str(path)})
        compiled._response_formats = formats
        return compiled

    @field_validator("reasoning_parser")
    @classmethod
    def _known_reasoning_parser(cls, name: str) -> str:
        return _known_name(reasoning_parser_name(name), "reasoning", [*reasoning_parser_names(), NO_PARSER])

    @field_validator("tool_call_parser")
    @classmethod
    def _known_tool_call_parser(cls, name: str) -> str:
        return _known_name(tool_call_parser_name(name), "tool-call", [*tool_call_parser_names(), NO_PARSER])

    @model_validator(mode="after")
    def _server_dialect(self) -> ModelConfig:
        """Unset `guided_decoding` is the backend server's dialect (a detected one's: `with_server`)."""
        if self.guided_decoding is not None or self.backend.server is None:
            return self
        return self.with_server(self.backend.server)

    def with_server(self, kind: ServerKind) -> ModelConfig:
        """This entry on a server found to be of `kind`: its `backend.server`
        set, and its `guided_decoding` that server's unless the entry sets one."""
        backend = self.backend.model_copy(update={"server": kind})
        dialect = self.guided_decoding or SERVERS[kind].guided_decoding
        return self.model_copy(update={"backend": backend, "guided_decoding": dialect})

    @model_validator(mode="after")
    def _effective_parsers(self) -> ModelConfig:
        """An entry naming no parser takes them from its backend model name
        (model_families.py); `none` turns a stage off. A response template
        names its own formats."""
        if self.response_template is not None:
            return self
        if self.reasoning_parser is None and self.tool_call_parser is None:
            if self.template_for_parsers is not None:
                return self  # derived from the template (`with_template_parsers`)
            picked = self._picked_parsers(self.upstream_model)
            picked._parsers_from_name = True
            return picked
        named = {"reasoning_parser": self.reasoning_parser, "tool_call_parser": self.tool_call_parser}
        return self.model_copy(update={key: None for key, value in named.items() if value == NO_PARSER})

    def _picked_parsers(self, upstream_model: str) -> ModelConfig:
        match = family_of(upstream_model)
        family = match[1] if match else None
        return self.model_copy(
            update={
                "reasoning_parser": family and family.reasoning_parser,
                "tool_call_parser": family and family.tool_call_parser,
            }
        )

    @property
    def template_for_parsers(self) -> str | None:
        """The template source this entry's parsers are derived from:
        `parsers_from`, or in template mode the `chat_template` of an entry
        that names no parser (docs/derived-parsers.md)."""
        named = {"reasoning_parser", "tool_call_parser"} & self.model_fields_set
        if self.response_template is not None or named:
            return None  # names in the entry win, `none` included
        if self._parsers_origin != "config" or self._parsers_from_name:
            return None  # already derived, or picked
        return self.parsers_from or self.chat_template

    def with_template_parsers(
        self,
        reasoning: str | ReasoningFormat | None,
        tool_calls: str | ToolFormat | None,
        origin: str,
    ) -> ModelConfig:
        """This entry served by the parsers its template implies: registered
        names, or formats derived as data; `origin` says which."""
        named = {
            "reasoning_parser": reasoning if isinstance(reasoning, str) else None,
            "tool_call_parser": tool_calls if isinstance(tool_calls, str) else None,
        }
        served = self.model_copy(update=named)
        served._parsers_origin = origin
        if not isinstance(reasoning, str | None) or not isinstance(tool_calls, str | None):
            served._derived_stages = (
                reasoning if isinstance(reasoning, ReasoningFormat) else None,
                tool_calls if isinstance(tool_calls, ToolFormat) else None,
            )
        return served

    def _private(self) -> dict[str, Any]:
        """The private attributes, read as pydantic's `__getattr__` reads
        them in the end, without its check on the way (two AttributeErrors
        raised and caught inside it, pydantic 2.14: about 3.6 µs a read, and
        a request's turn read a dozen; bench/README.md, "Performance IV")."""
        private = self.__pydantic_private__
        assert private is not None, "a model config has private attributes"
        return private

    @property
    def parsers_origin(self) -> str:
        """Where the parsers come from: `config`, `model name`, or
        `template: recognised as X` / `template: derived`."""
        private = self._private()
        return "model name" if private["_parsers_from_name"] else private["_parsers_origin"]

    @property
    def parsers_from_name(self) -> bool:
        """The entry names neither parser: both were picked from the model name."""
        return bool(self._private()["_parsers_from_name"])

    @property
    def response_formats(self) -> TemplateFormats | None:
        """What the `response_template` compiled to, if the model has one."""
        formats: TemplateFormats | None = self._private()["_response_formats"]
        return formats

    @property
    def reasoning_stage(self) -> str | ReasoningFormat | None:
        """The reasoning parser's name, or the response template's or derived format."""
        private = self._private()
        derived, formats = private["_derived_stages"], private["_response_formats"]
        if derived is not None and derived[0] is not None:
            return derived[0]
        return formats.reasoning if formats else self.reasoning_parser

    @property
    def tool_stage(self) -> str | ToolFormat | None:
        """The tool-call parser's name, or the response template's or derived format."""
        private = self._private()
        derived, formats = private["_derived_stages"], private["_response_formats"]
        if derived is not None and derived[1] is not None:
            return derived[1]
        return formats.tool_calls if formats else self.tool_call_parser

    @property
    def reasoning_keys(self) -> tuple[str, ...]:
        """The message/delta fields the reasoning is returned in."""
        return ("reasoning_content", "reasoning") if self.reasoning_field == "both" else (self.reasoning_field,)

    @property
    def upstream_model(self) -> str:
        """The model name sent to the backend."""
        return self.backend.model or self.name

    def routed(self, requested: str) -> ModelConfig:
        """This catch-all entry serving the model name `requested`: sent
        upstream as `backend.model` if set, else as requested, with the
        parsers picked from that name unless the entry names its own."""
        backend = self.backend.model_copy(update={"model": self.backend.model or requested})
        served = self.model_copy(update={"name": requested, "backend": backend})
        return served._picked_parsers(served.upstream_model) if self._parsers_from_name else served


def _known_name(name: str, kind: str, allowed: list[str]) -> str:
    if name not in allowed:
        raise ValueError(unknown_name(f"{kind} parser", name, allowed))
    return name


class Config(Section):
    server: ServerConfig = ServerConfig()
    store: StoreConfig = StoreConfig()
    models: list[ModelConfig] = Field(min_length=1)

    @field_validator("models")
    @classmethod
    def _unique_names(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        seen: set[str] = set()
        for model in models:
            if model.name in seen:
                raise ValueError(f"duplicate model name {model.name!r}; model names must be unique")
            seen.add(model.name)
        return models

    @model_validator(mode="after")
    def _server_bounds(self) -> Config:
        """Each model entry takes the server's request bounds it does not set."""
        models = [model.model_copy(update=with_server_bounds(model, self.server)) for model in self.models]
        return self.model_copy(update={"models": models})


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> Config:
    """Read and validate a config file, with the `PARSEGATE_…__…` environment
    variables applied over it; raise ConfigError with a one-line reason.
    With such variables set, a missing file counts as empty."""
    environ = os.environ if environ is None else environ
    overlay = config_variables(environ)
    origin = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not overlay:
            raise ConfigError(f"{path}: cannot read config file: No such file or directory") from None
        data, origin = {}, f"the PARSEGATE_* environment variables (no file {path})"
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config file: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(_yaml_error(path, error)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping with a 'models' list")
    try:
        data = apply_environment(data, overlay)
    except ValueError as error:  # names the variable
        raise ConfigError(str(error)) from None
    try:
        return Config.model_validate(data, context={"config_dir": Path(path).parent})
    except ValidationError as error:
        raise ConfigError(_described(error, origin, overlay)) from None


def _described(error: ValidationError, origin: str, overlay: Mapping[str, str]) -> str:
    """The errors after the file's path, or each after the environment
    variable it comes from (env_overlay.variable_at)."""
    items = [(variable_at(loc, message, overlay), described(loc, message)) for loc, message in error_items(error)]
    if not any(variable for variable, _ in items):
        return f"{origin}: {describe_errors(error)}"
    return " | ".join(
        f"{f'environment variable {variable}' if variable else origin}: {text}" for variable, text in items
    )


def _yaml_error(path: str | Path, error: yaml.YAMLError) -> str:
    """`PATH: not valid YAML at line L, column C: PROBLEM`, then PyYAML's
    message as it wrote it, indented: each place it names with the text
    there and a caret under the column, in the file (PyYAML, given the
    file's text, calls it `<unicode string>`)."""
    for named in (error, getattr(error, "context_mark", None), getattr(error, "problem_mark", None)):
        if named is not None and hasattr(named, "name"):
            named.name = str(path)
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    detail = textwrap.indent(str(error).rstrip(), "  ")
    return f"{path}: not valid YAML{where}: {problem}\n{detail}"

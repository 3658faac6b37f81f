"""A renderer for the part of Helm's template language the chart in
deploy/helm/parsegate uses, for tests on machines without `helm`.

Go's text/template (https://pkg.go.dev/text/template): `{{ }}` actions
with `{{-`/`-}}` trimming the white space beside them, comments, fields
(`.Values.a.b`), string and number literals, pipelines (`a | f x`: the
value goes last), parentheses, `if`/`else`/`end` and `define`/`end`; and
the functions Helm adds that the chart calls (https://helm.sh/docs/chart_template_guide/function_list/).
It is stricter than Helm where that finds mistakes: a missing value, a map
printed as text or an unknown function is an error, not `<no value>`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\(|\)|\||[^\s()|]+)')


class TemplateError(Exception):
    """The chart uses something this renderer does not know, or a value is missing."""


def render_chart(chart: Path, values: dict, release: str = "demo") -> dict[str, str]:
    """Each template file's output (the partials, `_*.tpl`, left out), as `helm template` prints them."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    context = {
        "Values": values,
        "Release": {"Name": release, "Namespace": "default", "Service": "Helm"},
        "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta["appVersion"]},
    }
    templates = sorted((chart / "templates").iterdir())
    defines: dict[str, list] = {}
    for path in templates:
        if path.name.startswith("_"):
            _Renderer(defines).render(_parse(path.read_text()), context)
    return {
        path.name: _Renderer(defines).render(_parse(path.read_text()), context)
        for path in templates
        if not path.name.startswith("_")
    }


def merged(base: dict, override: dict) -> dict:
    """`override` over `base`, mappings merged key by key, as `helm --set/-f` do."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _lex(text: str) -> list[tuple[str, str]]:
    """("text", s) and ("action", body) pieces, with the trim markers applied."""
    pieces: list[tuple[str, str]] = []
    position, trim_next = 0, False
    for match in _ACTION.finditer(text):
        before = text[position : match.start()]
        if trim_next:
            before = before.lstrip()
        if match.group(1):
            before = before.rstrip()
        pieces.append(("text", before))
        body = match.group(2).strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            pieces.append(("action", body))
        position, trim_next = match.end(), bool(match.group(3))
    rest = text[position:]
    pieces.append(("text", rest.lstrip() if trim_next else rest))
    return pieces


def _parse(text: str) -> list:
    """A tree: strings, ("out", pipeline), ("if", pipeline, then, else) and ("define", name, body)."""
    pieces = _lex(text)
    nodes, stop = _block(pieces, 0, ())
    if stop is not None:
        raise TemplateError(f"unexpected {{{{ {pieces[stop][1]} }}}}")
    return nodes


def _block(pieces: list[tuple[str, str]], index: int, ends: tuple[str, ...]) -> tuple[list, int | None]:
    nodes: list = []
    while index < len(pieces):
        kind, body = pieces[index]
        word = body.split(maxsplit=1)[0] if kind == "action" else ""
        if kind == "text":
            nodes.append(body)
        elif word in ends:
            return nodes, index
        elif word == "if":
            then, stop = _block(pieces, index + 1, ("else", "end"))
            otherwise: list = []
            if stop is not None and pieces[stop][1] == "else":
                otherwise, stop = _block(pieces, stop + 1, ("end",))
            if stop is None:
                raise TemplateError(f"{{{{ {body} }}}} has no end")
            nodes.append(("if", _tokens(body[2:]), then, otherwise))
            index = stop
        elif word == "define":
            inner, stop = _block(pieces, index + 1, ("end",))
            if stop is None:
                raise TemplateError(f"{{{{ {body} }}}} has no end")
            nodes.append(("define", json.loads(body.split(maxsplit=1)[1]), inner))
            index = stop
        elif word in ("else", "end", "range", "with", "template", "block"):
            if word in ("else", "end"):
                return nodes, index
            raise TemplateError(f"{word} is not supported here")
        else:
            nodes.append(("out", _tokens(body)))
        index += 1
    return nodes, None


def _tokens(body: str) -> list[str]:
    tokens = _TOKEN.findall(body)
    if "".join(tokens).replace(" ", "") != body.replace(" ", "").replace("\n", ""):
        raise TemplateError(f"cannot read {body!r}")
    return tokens


class _Renderer:
    def __init__(self, defines: dict[str, list]):
        self.defines = defines
        self.functions: dict[str, Callable[..., Any]] = {
            "include": lambda name, dot: self.render(self.defines[name], dot),
            "toYaml": _to_yaml,
            "nindent": lambda width, text: "\n" + _indent(width, text),
            "indent": _indent,
            "quote": lambda value: json.dumps(_text(value)),
            "default": lambda fallback, value=None: value if _truthy(value) else fallback,
            "required": _required,
            "sha256sum": lambda text: hashlib.sha256(text.encode()).hexdigest(),
            "contains": lambda part, text: part in text,
            "join": lambda separator, items: separator.join(_text(item) for item in items),
            "and": lambda *values: all(_truthy(value) for value in values),
            "or": lambda *values: any(_truthy(value) for value in values),
            "not": lambda value: not _truthy(value),
            "eq": lambda first, second: first == second,
        }

    def render(self, nodes: list, dot: Any) -> str:
        out = []
        for node in nodes:
            if isinstance(node, str):
                out.append(node)
            elif node[0] == "out":
                out.append(_text(self.pipeline(node[1], dot)))
            elif node[0] == "if":
                out.append(self.render(node[2] if _truthy(self.pipeline(node[1], dot)) else node[3], dot))
            else:
                self.defines[node[1]] = node[2]
        return "".join(out)

    def pipeline(self, tokens: list[str], dot: Any) -> Any:
        commands: list[list[str]] = [[]]
        depth = 0
        for token in tokens:
            depth += (token == "(") - (token == ")")
            if token == "|" and depth == 0:
                commands.append([])
            else:
                commands[-1].append(token)
        value, piped = None, False
        for command in commands:
            value, piped = self.command(command, dot, [value] if piped else []), True
        return value

    def command(self, tokens: list[str], dot: Any, piped: list) -> Any:
        arguments = self.arguments(tokens[1:] if tokens[0] in self.functions else tokens, dot)
        if tokens[0] in self.functions:
            return self.functions[tokens[0]](*arguments, *piped)
        if len(arguments) != 1 or piped:
            raise TemplateError(f"{tokens[0]!r} is not a function")
        return arguments[0]

    def arguments(self, tokens: list[str], dot: Any) -> list:
        values, index = [], 0
        while index < len(tokens):
            token = tokens[index]
            if token == "(":
                depth, end = 1, index
                while depth:
                    end += 1
                    depth += (tokens[end] == "(") - (tokens[end] == ")")
                values.append(self.pipeline(tokens[index + 1 : end], dot))
                index = end
            elif token.startswith('"'):
                values.append(json.loads(token))
            elif token == ".":
                values.append(dot)
            elif token.startswith("."):
                values.append(_field(dot, token))
            elif re.fullmatch(r"-?\d+", token):
                values.append(int(token))
            elif token in ("true", "false"):
                values.append(token == "true")
            else:
                raise TemplateError(f"cannot read {token!r}")
            index += 1
        return values


def _field(dot: Any, path: str) -> Any:
    value = dot
    for name in path.strip(".").split("."):
        if not isinstance(value, dict) or name not in value:
            raise TemplateError(f"no value at {path}")
        value = value[name]
    return value


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)) or value is None:
        raise TemplateError(f"{value!r} printed as text")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value != {} and value != []


def _to_yaml(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True, allow_unicode=True).rstrip("\n")


def _indent(width: int, text: str) -> str:
    return "\n".join(" " * width + line for line in text.split("\n"))


def _required(message: str, value: Any) -> Any:
    if not _truthy(value):
        raise TemplateError(message)
    return value

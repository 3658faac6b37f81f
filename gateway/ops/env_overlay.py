"""Environment variables as config: `PARSEGATE_<KEY>__<KEY>…=value` sets
the config key at that path, over what config.yaml says.

Path parts are separated by a double underscore and lower-cased; a list
item is its index (`PARSEGATE_MODELS__0__BACKEND__URL`), and the index
just past the end adds an item. Values are read as YAML, so `8080`,
`true` and `[a, b]` have their types; quote a value to keep it a string
(`'"8080"'`). Variables without `__` (`PARSEGATE_CONFIG`) are not config keys.

Values in the file may also name variables as `${VAR}`. An error in a
value that came from the environment names the variable, not the file
(docs/operations.md, "Environment variables and reload").
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import yaml

PREFIX = "PARSEGATE_"
SEPARATOR = "__"
CONFIG_FILE_VARIABLE = "PARSEGATE_CONFIG"  # the config file's path, for `parsegate serve` and its workers
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_variables(value: str) -> str:
    """Replace every `${VAR}` with the environment's value; unset is an error."""

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"environment variable {name} is not set")
        return os.environ[name]

    return _REFERENCE.sub(lookup, value)


def from_variables(value: str) -> str:
    """` (from environment variable X)` when `value` names `${X}`, else ``:
    the end of an error message about the expanded value."""
    names = _REFERENCE.findall(value)
    return f" (from environment variable {', '.join(names)})" if names else ""


def config_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment variables that set config keys, sorted by name."""
    return {
        name: value
        for name, value in sorted(environ.items())
        if name.startswith(PREFIX) and SEPARATOR in name[len(PREFIX) :]
    }


def variable_at(loc: tuple[str | int, ...], message: str, environ: Mapping[str, str]) -> str | None:
    """The `PARSEGATE_…__…` variable a config error at `loc` comes from:
    one that set that key, or a mapping or list holding it, or an unknown
    key the message names (`unknown key 'prot'` at `server`)."""
    where = [str(part).lower() for part in loc]
    for name in config_variables(environ):
        path = _path(name)
        if where[: len(path)] == path:
            return name
        if path[: len(where)] == where and f"unknown key {path[len(where)]!r}" in message:
            return name
    return None


def _path(name: str) -> list[str]:
    return [part.lower() for part in name[len(PREFIX) :].split(SEPARATOR)]


def apply_environment(data: dict, environ: Mapping[str, str]) -> dict:
    """`data` with every `PARSEGATE_…__…` variable applied; raises ValueError
    naming a variable whose path does not fit the config's shape."""
    for name, raw in config_variables(environ).items():
        try:
            _set(data, _path(name), _value(raw))
        except (TypeError, ValueError, IndexError) as error:
            raise ValueError(f"environment variable {name}: {error}") from None
    return data


def _value(raw: str) -> object:
    try:
        return yaml.safe_load(raw) if raw.strip() else raw
    except yaml.YAMLError:
        return raw


def _set(node: object, path: list[str], value: object) -> None:
    *parents, last = path
    for part, next_part in zip(parents, path[1:], strict=True):
        node = _child(node, part, {} if not next_part.isdigit() else [])
    _assign(node, last, value)


def _child(node: object, part: str, empty: object) -> object:
    if isinstance(node, list):
        index = _index(node, part)
        if index == len(node):
            node.append(empty)
        return node[index]
    if isinstance(node, dict):
        if not isinstance(node.get(part), (dict, list)):
            node[part] = empty
        return node[part]
    raise TypeError(f"{part!r} is inside a value that is neither a mapping nor a list")


def _assign(node: object, part: str, value: object) -> None:
    if isinstance(node, list):
        index = _index(node, part)
        if index == len(node):
            node.append(value)
        else:
            node[index] = value
    elif isinstance(node, dict):
        node[part] = value
    else:
        raise TypeError(f"{part!r} is inside a value that is neither a mapping nor a list")


def _index(items: list, part: str) -> int:
    if not part.isdigit() or int(part) > len(items):
        raise IndexError(f"{part!r} is not an index of a list of {len(items)} items (0 to {len(items)})")
    return int(part)

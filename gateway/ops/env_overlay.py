"""Environment variables as config: `PARSEGATE_<KEY>__<KEY>…=value` sets
the config key at that path, over what config.yaml says.

Path parts are separated by a double underscore and lower-cased; a list
item is its index (`PARSEGATE_MODELS__0__BACKEND__URL`), and the index
just past the end adds an item. Values are read as YAML, so `8080`,
`true` and `[a, b]` have their types; quote a value to keep it a string
(`'"8080"'`). Variables without `__` (`PARSEGATE_CONFIG`) are not config keys.
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml

PREFIX = "PARSEGATE_"
SEPARATOR = "__"


def config_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment variables that set config keys, sorted by name."""
    return {
        name: value
        for name, value in sorted(environ.items())
        if name.startswith(PREFIX) and SEPARATOR in name[len(PREFIX) :]
    }


def apply_environment(data: dict, environ: Mapping[str, str]) -> dict:
    """`data` with every `PARSEGATE_…__…` variable applied; raises ValueError
    naming a variable whose path does not fit the config's shape."""
    for name, raw in config_variables(environ).items():
        path = [part.lower() for part in name[len(PREFIX) :].split(SEPARATOR)]
        try:
            _set(data, path, _value(raw))
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

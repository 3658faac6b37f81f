"""The sandbox chat templates render in: jinja2's
`ImmutableSandboxedEnvironment`, as transformers renders them, with two
shortcuts that change no outcome and render a long conversation up to
2.5 times as fast (bench/README.md, "A coding agent's long request").

- `message.content` on a dict: jinja looks for an attribute first and
  takes the item when there is none, raising and catching an
  `AttributeError` each time. A plain dict has no attributes but its
  type's (`dir(dict)`), so for any other name the item, or undefined when
  there is none, is what jinja would have answered.
- Whether an attribute is safe to read (`content.split`,
  `message.items`): jinja's answer depends only on the object's type and
  the attribute's name (isinstance checks against the mutable builtins'
  abstract types, and the interpreter's internal attributes), so it is
  asked once per type and name and remembered, up to `SAFE_ANSWERS_KEPT`
  answers per environment (a template's `attr` filter can name
  attributes from the data).
- Any other attribute (`loop.index0`, `ns.last_query_index`,
  `content.startswith`) is read here as jinja's `getattr` reads it, with
  its `str.format` wrapper asked only for a method of that name (the only
  values it wraps): going through jinja's own took a third of Qwen3's
  render of a long conversation (bench/README.md, "Performance IV:
  template render").
"""

from __future__ import annotations

import types
from typing import Any

from jinja2.runtime import Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

SAFE_ANSWERS_KEPT = 4096
_DICT_ATTRIBUTES = frozenset(dir(dict))
_METHODS = (types.MethodType, types.BuiltinMethodType)
_FORMAT_METHODS = frozenset({"format", "format_map"})  # the methods jinja's wrap_str_format wraps


class TemplateSandbox(ImmutableSandboxedEnvironment):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._safe_answers: dict[tuple[type, str], bool] = {}

    def getattr(self, obj: Any, attribute: str) -> Any | Undefined:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        try:
            value = getattr(obj, attribute)
        except AttributeError:
            return super().getattr(obj, attribute)  # the item, or undefined
        if isinstance(value, _METHODS) and value.__name__ in _FORMAT_METHODS:
            wrapped = self.wrap_str_format(value)
            if wrapped is not None:
                return wrapped
        if self.is_safe_attribute(obj, attribute, value):
            return value
        return self.unsafe_undefined(obj, attribute)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        key = (type(obj), attr)
        safe = self._safe_answers.get(key)
        if safe is None:
            safe = super().is_safe_attribute(obj, attr, value)
            if len(self._safe_answers) < SAFE_ANSWERS_KEPT:
                self._safe_answers[key] = safe
        return safe

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
"""

from __future__ import annotations

from typing import Any

from jinja2.runtime import Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

SAFE_ANSWERS_KEPT = 4096
_DICT_ATTRIBUTES = frozenset(dir(dict))


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
        return super().getattr(obj, attribute)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        key = (type(obj), attr)
        safe = self._safe_answers.get(key)
        if safe is None:
            safe = super().is_safe_attribute(obj, attr, value)
            if len(self._safe_answers) < SAFE_ANSWERS_KEPT:
                self._safe_answers[key] = safe
        return safe

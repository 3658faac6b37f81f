"""The template sandbox's shortcuts change no outcome: every expression
renders (or fails) in `TemplateSandbox` exactly as in jinja2's own
`ImmutableSandboxedEnvironment`, which transformers renders chat templates
in, on the first render and on later ones (its answers remembered)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from gateway.templates.sandbox import TemplateSandbox


class _WithAttribute(dict):
    content = "the attribute"


def _variables() -> dict:
    return {
        "d": {"content": "hi", "items": "an item named like a method", "_private": 1, "inner": {"deep": [1, 2]}},
        "sub": _WithAttribute(content="the item"),
        "s": "a,b",
        "xs": [1, 2],
        "name": "content",
        "o": SimpleNamespace(
            update="an attribute named like a dict's method", pop="another", fmt="{0.__class__}".format
        ),
    }


EXPRESSIONS = [
    "{{ d.content }}|{{ d['content'] }}|{{ d.inner.deep[1] }}",
    "{{ d.missing is defined }}|{{ d.missing | default('none') }}|{{ d.inner.missing is defined }}",
    "{{ d.missing.deeper }}",
    "{{ d.items is callable }}|{{ d['items'] }}|{{ d.keys() | list | length }}|{{ d.get('content') }}",
    "{{ d._private }}|{{ d.__class__ }}",
    "{{ d.pop is defined }}",
    "{{ o.update }}|{{ d.update is defined }}|{{ d.pop is defined }}|{{ o.pop }}",
    "{{ sub.content }}|{{ sub['content'] }}",
    "{{ s.split(',') | join('+') }}|{{ s.upper() }}|{{ s.__class__ }}",
    "{{ s.format(1) }}",
    "{{ xs.index(2) }}|{{ xs.append is defined }}",
    "{{ d | attr('items') is callable }}|{{ d | attr(name) is defined }}|{{ s | attr('upper') is callable }}",
    "{{ xs | attr('__class__') }}|{{ d.__init__ is defined }}|{{ (s.upper).__self__ }}",
    "{% for x in xs %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.nope }}{% endfor %}",
    "{% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{{ ns.a }}|{{ ns.missing is defined }}",
    "{{ o.fmt(s) }}",
    "{{ '{0.__class__}'.format(s) }}",
    "{{ s.format_map is defined }}|{{ s.startswith('a') }}|{{ o.nope is defined }}|{{ xs.nope is defined }}",
]
REFUSED = [
    "{{ d.pop('content') }}",
    "{{ d.update({'x': 1}) }}",
    "{{ xs.append(3) }}",
    "{{ d.__class__.__base__.__subclasses__() }}",
]


def _outcome(environment: ImmutableSandboxedEnvironment, source: str) -> str:
    try:
        return environment.from_string(source).render(_variables())
    except Exception as error:  # the same refusal is the same outcome
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize("source", EXPRESSIONS + REFUSED)
def test_the_sandbox_renders_as_jinjas_own(source: str) -> None:
    jinjas = _outcome(ImmutableSandboxedEnvironment(), source)
    ours = TemplateSandbox()
    assert _outcome(ours, source) == jinjas
    assert _outcome(ours, source) == jinjas  # its answers remembered now


@pytest.mark.parametrize("source", REFUSED)
def test_the_sandbox_still_refuses_what_jinja_refuses(source: str) -> None:
    assert _outcome(TemplateSandbox(), source).startswith("SecurityError: access to attribute")

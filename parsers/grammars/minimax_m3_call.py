"""Body grammar: MiniMax M3's namespaced XML calls (docs/parsers.md `minimax-m3`).

Every tag is prefixed with the namespace token `]<]minimax[>[` (blanks may
stand between the token and the `<`); a parameter is a tag named after it,
an object's fields are nested tags, an array's elements `<item>` tags::

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="search">
    ]<]minimax[>[<query>louvre]<]minimax[>[</query>
    ]<]minimax[>[<tags>
    ]<]minimax[>[<item>a]<]minimax[>[</item>
    ]<]minimax[>[</tags>
    ]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

The body starts after the first namespace token and reads the whole
`<tool_call>` block, each `<invoke>` in it being one call. A parameter the
schema types as a plain string streams as it is written; any other is
held as a small tree until its tag closes, then typed by the schema
(`parsers.core.coerce`) and written as JSON. An element is a leaf once it has
text (later tags in it are text, trailing blanks are dropped), else it
holds child elements; a close tag also closes the elements left open
inside it. Text in a call outside any value is content, and a new
`<tool_call>` inside a call ends that call cut short. Tags are found by
searching for the namespace token from the current position only, so the
cost is linear in the text.
"""

from __future__ import annotations

import re

import orjson

from parsers.core import coerce
from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, StateSteps
from parsers.core.json_writer import json_string_body
from parsers.core.markers import marker_set

NAMESPACE = "]<]minimax[>["
_TOKEN_HEAD = NAMESPACE[: NAMESPACE.index(">")]  # a token's text before its own `>`
_BLANKS = always_matching(r"\s*")
_INVOKE = re.compile(r"invoke\s+name\s*=\s*\"?(?P<name>[^\">]+?)\"?", re.DOTALL)
_OPEN, _CLOSE, _NOT_A_TAG = "open", "close", "text"


class Node:
    """A parameter value being read: its text, or its child elements."""

    __slots__ = ("tag", "schema", "text", "has_text", "children")

    def __init__(self, tag: str, schema):
        self.tag = tag
        self.schema = schema
        self.text: list[str] = []
        self.has_text = False  # non-blank text: a leaf, whose tags are text
        self.children: list[tuple[str, str]] = []  # (tag, JSON text)

    def to_json(self) -> str:
        types = coerce.schema_types(self.schema)
        if not self.children:
            text = "".join(self.text).rstrip()
            if not text and types & {"object", "array"}:
                return "[]" if "array" in types and "object" not in types else "{}"
            if not text and "null" in types:
                return "null"
            return coerce.to_json(text, types) if types else orjson.dumps(text).decode()
        is_array = "array" in types if types & {"object", "array"} else all(tag == "item" for tag, _ in self.children)
        if is_array:
            return "[" + ", ".join(value for _, value in self.children) + "]"
        fields: dict[str, list[str]] = {}
        for tag, value in self.children:
            fields.setdefault(tag, []).append(value)
        return (
            "{"
            + ", ".join(
                orjson.dumps(tag).decode() + ": " + (values[0] if len(values) == 1 else "[" + ", ".join(values) + "]")
                for tag, values in fields.items()
            )
            + "}"
        )


def child_schema(schema, tag: str):
    """The schema of child element `tag` of a value with `schema`."""
    if not isinstance(schema, dict):
        return None
    if tag == "item" and "array" in coerce.schema_types(schema) and isinstance(schema.get("items"), dict):
        return schema["items"]
    properties = _properties(schema)
    if isinstance(properties.get(tag), dict):
        return properties[tag]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _properties(schema) -> dict:
    merged = dict(schema.get("properties") or {}) if isinstance(schema, dict) else {}
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in (schema.get(key) if isinstance(schema, dict) else None) or ():
            merged.update(_properties(branch))
    return merged


def read_tag(buf: str, pos: int):
    """What follows a namespace token ending at `pos`: `(kind, name, end)`
    for an open or close tag, `(_NOT_A_TAG, "", pos)` when no tag does, or
    None while more text could still make one."""
    start = _BLANKS.match(buf, pos).end()
    if start == len(buf) or (buf[start] == "<" and ">" not in buf[start : start + MAX_TOKEN_CHARS]):
        return None if len(buf) - pos <= MAX_TOKEN_CHARS else (_NOT_A_TAG, "", pos)
    if buf[start] != "<":
        return _NOT_A_TAG, "", pos
    end = buf.index(">", start)
    if _TOKEN_HEAD in buf[start:end]:  # that `>` is the next token's: `<` and the text up to it are no tag
        return _NOT_A_TAG, "", pos
    inner = buf[start + 1 : end]
    if inner.startswith("/"):
        return _CLOSE, inner[1:].strip(), end + 1
    return _OPEN, inner.strip(), end + 1


class MinimaxM3Calls(StateSteps):
    """Incremental reader of one `<tool_call>` block (see the module docstring)."""

    def __init__(self, sink):
        self.status = RUNNING
        self._sink = sink
        self._state = "opening"
        self._namespace = marker_set(NAMESPACE)
        self._calls = 0
        self._wrote_key = False
        self._schema = None
        self._stray: list[str] = []
        self._stack: list[Node] = []
        self._open_tags: dict[str, int] = {}  # tag -> how many elements of the stack have it
        self._tag = ""
        self._pending = ""
        self.held_chars = 0

    def finish(self) -> None:
        if self.status != RUNNING:
            return
        if self._state in ("params", "string", "tree"):
            self._end_call()
        if self._calls:
            self._flush_stray()
        self.status = DONE if self._calls else FAILED

    def leftover(self, unread: str) -> str:
        """What of the text left unread when the output ended is content:
        an open tag cut short (its name is text the model wrote), without
        its namespace token; a close tag cut short is a marker, dropped."""
        tag = unread.removeprefix(NAMESPACE).lstrip() if unread.startswith(NAMESPACE) else ""
        return tag if len(tag) > 1 and not tag.startswith("</") else ""

    def _step_opening(self, buf: str, pos: int) -> int | None:
        tag = read_tag(buf, pos)
        if tag is None:
            return None
        if tag[:2] != (_OPEN, "tool_call"):
            self.status = FAILED
            return pos
        self._state = "block"
        return tag[2]

    def _step_tags(self, buf: str, pos: int) -> int | None:
        """Text up to the next tag, then the tag, each read as the state says."""
        hit = self._namespace.search(buf, pos)
        text_end = hit.start if hit else self._namespace.safe_end(buf, pos)
        if text_end > pos:
            self._read_text(buf[pos:text_end])
        tag = None if hit is None else read_tag(buf, hit.end)
        if hit is None or tag is None:
            return text_end if text_end > pos else None
        kind, name, end = tag
        if kind == _NOT_A_TAG:
            self._read_text(NAMESPACE)
            return hit.end
        if (kind, name) == (_OPEN, "tool_call"):
            self._cut_short()
            return hit.start
        getattr(self, "_on_tag_" + self._state)(kind, name, buf[hit.start : end])
        return end

    _step_block = _step_params = _step_string = _step_tree = _step_tags

    def _read_text(self, text: str) -> None:
        if self._state == "string":
            self._take_string(text)
        elif self._state == "tree":
            self._take_text(text)
        else:
            self._stray.append(text)

    def _cut_short(self) -> None:
        """A new block opens: the call being read ends where it is, and so
        does this block; the new one is read from its own start."""
        if self._state != "block":
            self._end_call()
        elif self._calls:
            self._flush_stray()
        self.status = DONE if self._calls else FAILED

    def _on_tag_block(self, kind: str, name: str, raw: str) -> None:
        invoke = _INVOKE.fullmatch(name) if kind == _OPEN else None
        if invoke:
            self._flush_stray()
            self._start_call(invoke.group("name"))
        elif (kind, name) == (_CLOSE, "tool_call"):
            if self._calls:
                self._flush_stray()
            self.status = DONE
        else:
            self._stray.append(raw)

    def _on_tag_params(self, kind: str, name: str, raw: str) -> None:
        if kind == _CLOSE and name in ("invoke", "tool_call"):
            self._end_call(block_closed=name == "tool_call")
        elif kind == _OPEN:
            self._flush_stray()
            self._open_parameter(name)
        else:
            self._stray.append(raw)

    def _on_tag_string(self, kind: str, name: str, raw: str) -> None:
        if kind == _CLOSE and name == self._tag:
            self._end_string()
            self._state = "params"
        elif kind == _CLOSE and name in ("invoke", "tool_call"):
            self._end_call(block_closed=name == "tool_call")
        else:
            self._take_string(raw)

    def _on_tag_tree(self, kind: str, name: str, raw: str) -> None:
        top = self._stack[-1]
        if kind == _OPEN and not top.has_text:
            self._push(Node(name, child_schema(top.schema, name)))
        elif kind == _CLOSE and self._open_tags.get(name):
            while self._state == "tree" and self._close_node() != name:
                pass
        elif kind == _CLOSE and name in ("invoke", "tool_call"):
            self._end_call(block_closed=name == "tool_call")
        else:
            self._take_text(raw)

    def _start_call(self, name: str) -> None:
        self._sink.start(name)
        self._schema = self._sink.function_schema(name)
        self._wrote_key = False
        self._state = "params"

    def _open_parameter(self, name: str) -> None:
        schema = child_schema(self._schema, name)
        separator = ", " if self._wrote_key else "{"
        self._wrote_key = True
        self._sink.args(separator + orjson.dumps(name).decode() + ": ")
        self._tag = name
        if coerce.is_plain_string(coerce.schema_types(schema)):
            self._sink.args('"')
            self._pending = ""
            self._state = "string"
        else:
            self._stack, self._open_tags = [], {}
            self._push(Node(name, schema))
            self.held_chars = 0
            self._state = "tree"

    def _take_string(self, text: str) -> None:
        body = text.rstrip()
        if not body:
            self._pending += text
            self.held_chars = len(self._pending)
            return
        released, self._pending = self._pending + body, text[len(body) :]
        self.held_chars = len(self._pending)
        self._sink.args(json_string_body(released))

    def _end_string(self) -> None:
        self._sink.args('"')
        self._pending = ""
        self.held_chars = 0

    def _take_text(self, text: str) -> None:
        """Text in an element: its value if it has no child elements, else
        text between them, which is content."""
        top = self._stack[-1]
        if top.children:
            self._stray.append(text)
            return
        top.text.append(text)
        top.has_text = top.has_text or bool(text.strip())
        self.held_chars += len(text)

    def _push(self, node: Node) -> None:
        self._stack.append(node)
        self._open_tags[node.tag] = self._open_tags.get(node.tag, 0) + 1

    def _close_node(self) -> str:
        """Close the innermost open element; its tag."""
        node = self._stack.pop()
        self._open_tags[node.tag] -= 1
        value = node.to_json()
        if self._stack:
            self._stack[-1].children.append((node.tag, value))
        else:
            self._sink.args(value)
            self.held_chars = 0
            self._state = "params"
        return node.tag

    def _end_call(self, block_closed: bool = False) -> None:
        if self._state == "string":
            self._end_string()
        while self._state == "tree":
            self._close_node()
        self._flush_stray()
        self._sink.args("}" if self._wrote_key else "{}")
        self._sink.end()
        self._calls += 1
        self._state = "block"
        if block_closed:
            self.status = DONE

    def _flush_stray(self) -> None:
        """Text in a call that belongs to no parameter is content, as written."""
        stray = "".join(self._stray)
        self._stray.clear()
        if stray.strip():
            self._sink.stray(stray)

"""Close JSON text that was cut off, keeping what was written so far.

A call whose JSON arguments the output cut (a stream that broke, the
token limit) ends with half a value: `{"path": "a.py", "text": "def f(`.
`JsonCloser` reads the arguments as they stream and passes on only text
up to the last point from which closing brackets (and a closing quote)
make valid JSON; what follows that point (a key whose value has not begun,
a comma, half a number, `tru`, half an escape) is held until the next
fragment settles it. At the end, a value that is complete (or was never
JSON to begin with) gets its held text as written; a cut one gets what
closes it instead, so the fragments passed on plus the closing are the
arguments read so far as valid JSON: `{"path": "a.py", "text": "def f("}`.
A key whose value never began is no argument, as with cut pythonic calls
(grammars/pythonic.py, which write their JSON with `JsonWriter`).

Linear: string bodies are skipped with one regex match per run, every
other character is looked at once.
"""

from __future__ import annotations

import re

_STRING_RUN = re.compile(r'[^"\\]+')
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_LITERALS = ("true", "false", "null")
_BLANKS = frozenset(" \t\r\n")
_MAX_TOKEN = 64  # characters of a number or literal; a longer one is no JSON a model writes

# states
_VALUE, _FIRST_KEY, _KEY, _COLON, _AFTER, _STRING, _KEY_STRING = range(7)
_NUMBER_TOKEN, _LITERAL, _FIRST_ITEM, _DONE, _ERROR = range(7, 12)
_CLEAN = frozenset((_FIRST_KEY, _AFTER, _FIRST_ITEM, _DONE))  # a bracket closes from here


class JsonCloser:
    """One JSON value, fed in fragments: `feed` returns what may be passed
    on now, `close` what ends it (see the module docstring)."""

    __slots__ = ("_state", "_stack", "_held", "_token", "_escape", "_surrogate", "_closing")

    def __init__(self) -> None:
        self._state = _VALUE
        self._stack = ""  # the closers of the open containers, innermost last
        self._held: list[str] = []
        self._token = ""  # the number or literal being read, or the hex digits of a \u escape
        self._escape = 0  # characters of an escape still to come (-1: the one after the backslash)
        self._surrogate = False  # a \u escape of a high surrogate waits for its low half
        self._closing = "{}"  # what closes the text passed on so far

    def feed(self, text: str) -> str:
        if self._state == _ERROR:
            return text
        clean_at = -1
        pos, end = 0, len(text)
        while pos < end:
            state = self._state
            if state in (_STRING, _KEY_STRING):
                pos = self._string(text, pos)
            else:
                pos = self._structure(text, pos)
            if self._state == _ERROR:
                return self._release(text)
            if self._is_clean():
                clean_at = pos
                self._closing = ('"' if self._state == _STRING else "") + self._stack[::-1]
        if clean_at < 0:
            self._held.append(text)
            return ""
        passed = "".join(self._held) + text[:clean_at]
        self._held = [text[clean_at:]] if clean_at < end else []
        return passed

    def close(self) -> str:
        """The held text when the value is complete or is not JSON; else
        the closing of what was passed on."""
        if self._state in (_ERROR, _DONE):
            return self._release("")
        self._held = []
        return self._closing

    def _release(self, text: str) -> str:
        passed = "".join(self._held) + text
        self._held = []
        return passed

    def _is_clean(self) -> bool:
        state = self._state
        if state == _STRING:
            return self._escape == 0 and not self._surrogate
        if state == _NUMBER_TOKEN:
            return _NUMBER.fullmatch(self._token) is not None
        if state == _LITERAL:
            return self._token in _LITERALS
        return state in _CLEAN

    def _string(self, text: str, pos: int) -> int:
        if self._escape:
            return self._escaped(text, pos)
        run = _STRING_RUN.match(text, pos)
        if run is not None:
            self._surrogate = False  # a high surrogate with no low half: the model's text, as written
            return run.end()
        if text[pos] == "\\":
            self._escape = -1
            return pos + 1
        self._surrogate = False
        if self._state == _KEY_STRING:
            self._state = _COLON
        else:
            self._after_value()
        return pos + 1

    def _escaped(self, text: str, pos: int) -> int:
        char = text[pos]
        if self._escape == -1:
            self._escape, self._token = (4, "") if char == "u" else (0, "")
            if char != "u":
                self._surrogate = False
            return pos + 1
        self._token += char
        self._escape -= 1
        if not self._escape:
            self._surrogate = self._token[:2].lower() in ("d8", "d9", "da", "db")
        return pos + 1

    def _structure(self, text: str, pos: int) -> int:
        """One character outside a string; a number or literal ends at the
        first character that is not its own, which is then read again."""
        char, state = text[pos], self._state
        if state in (_NUMBER_TOKEN, _LITERAL):
            own = char in _NUMBER_CHARS if state == _NUMBER_TOKEN else char.isalpha()
            if own and len(self._token) < _MAX_TOKEN:
                self._token += char
                if state == _LITERAL and not any(word.startswith(self._token) for word in _LITERALS):
                    self._state = _ERROR
                return pos + 1
            if not self._is_clean():
                self._state = _ERROR
                return pos
            self._after_value()
            return pos
        if char in _BLANKS:
            return pos + 1
        if state in (_VALUE, _FIRST_ITEM):
            if state == _FIRST_ITEM and char == "]":
                self._close_container(char)
            else:
                self._begin_value(char)
        elif state in (_FIRST_KEY, _KEY):
            if char == '"':
                self._state = _KEY_STRING
            elif state == _FIRST_KEY and char == "}":
                self._close_container(char)
            else:
                self._state = _ERROR
        elif state == _COLON:
            self._state = _VALUE if char == ":" else _ERROR
        elif state == _AFTER and char == "," and self._stack:
            self._state = _KEY if self._stack[-1] == "}" else _VALUE
        elif state == _AFTER and char in "}]":
            self._close_container(char)
        else:
            self._state = _ERROR
        return pos + 1

    def _begin_value(self, char: str) -> None:
        if char == "{":
            self._stack += "}"
            self._state = _FIRST_KEY
        elif char == "[":
            self._stack += "]"
            self._state = _FIRST_ITEM
        elif char == '"':
            self._state = _STRING
        elif char == "-" or char.isdigit():
            self._state, self._token = _NUMBER_TOKEN, char
        elif char in "tfn":
            self._state, self._token = _LITERAL, char
        else:
            self._state = _ERROR

    def _close_container(self, char: str) -> None:
        if not self._stack or self._stack[-1] != char:
            self._state = _ERROR
            return
        self._stack = self._stack[:-1]
        self._after_value()

    def _after_value(self) -> None:
        self._state = _AFTER if self._stack else _DONE


def closed_json(text: str) -> str:
    """`text` closed as `JsonCloser` closes a value cut there."""
    closer = JsonCloser()
    return closer.feed(text) + closer.close()

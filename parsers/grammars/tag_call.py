"""Body grammar: a call written as key/value tags, converted to JSON text.

    <function=get_weather><parameter=city>Paris</parameter></function>      (Qwen3-Coder)
    get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>          (GLM)
    <invoke name="get_weather"><parameter name="city">Paris</parameter>     (MiniMax M2)

A `TagSyntax` (`parsers.core.tag_syntax`) says, as data, which markers end the
header naming the function, open and close a key, open and close a value,
and close the call. The arguments JSON is written as the tags arrive: `{` and the key
when a key closes; a value the schema types as a plain string streams as
JSON string fragments while it is written; any other value is typed when
it closes (`parsers.core.coerce`). Values written HTML-escaped (MiMo) are
decoded as they stream, holding back only a character reference that is
still being written. Every marker is searched from the current position
only, so the cost is linear in the text.
"""

from __future__ import annotations

import html
import re

import orjson

from parsers.core import coerce, xml_text
from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, StateSteps
from parsers.core.json_scan import JsonValueScanner, scan_to_end_marker
from parsers.core.json_writer import json_string_body
from parsers.core.markers import closes_then_start, marker_set, only_closes_may_follow
from parsers.core.tag_syntax import TagSyntax

_WHITESPACE = always_matching(r"\s*")
_BLANKS = " \t\r\n"
# What `html.unescape` could still read differently once more text arrives:
# a trailing `&` and the start of a character reference after it.


class TagCall(StateSteps):
    """Incremental reader of one tag-style call (see the module docstring)."""

    def __init__(self, sink, syntax: TagSyntax):
        self.status = RUNNING
        self._sink = sink
        self._syntax = syntax
        self._state = "header"
        self._types: dict = {}
        self._wrote_key = False
        self._key_types: frozenset[str] = coerce.Types()
        self._declared_json = False
        self._streaming = False
        self._value: list[str] = []
        self._null_probe: str | None = None  # a string value that may still be `null_word`
        self.held_chars = 0  # text of a typed value held until the value ends
        self._pending = ""
        self._leading_done = False
        self._padded = False  # the value began with the newline `paired_newline` drops
        self._name_ends = marker_set(*syntax.name_ends)
        self._between = marker_set(syntax.key_open, *syntax.call_closes, *syntax.call_also_ends_at)
        self._key_close = marker_set(syntax.key_close)
        self._key_boundaries = marker_set(syntax.key_open, *syntax.call_closes, *syntax.call_also_ends_at)
        cdata_open = (xml_text.CDATA_OPEN,) if syntax.cdata else ()
        self._value_ends = marker_set(
            syntax.value_close,
            *syntax.value_also_ends_at,
            *syntax.call_also_ends_at,
            *syntax.closes_after_value,
            *cdata_open,
        )
        self._cdata_end = marker_set(xml_text.CDATA_CLOSE)
        self._gap = always_matching(syntax.gap_pattern)
        self._json: JsonValueScanner | None = None
        self._unopened_key: tuple[str, str | None] | None = None  # a key read, its value not yet opened
        self._stray: list[str] = []
        self._saw_prose = False  # text in the body that is no argument: no JSON body after it

    @property
    def in_value(self) -> bool:
        """Whether the text read last was inside a value (one not yet closed)."""
        return self._state in ("value", "cdata")

    def finish(self) -> None:
        if self.status != RUNNING:
            return
        if self._state == "header":
            self.status = FAILED
            return
        if self._state in ("value", "cdata"):
            self._end_value()
        # state "value_open": a key whose value never came is not an argument
        if self._state == "key":  # the output ended inside a parameter's tag
            self._add_stray(self._syntax.key_open)
        self._flush_stray()
        self._close()

    def leftover(self, unread: str) -> str:
        """What of the text left unread when the output ended is content:
        a parameter tag's inside, waiting for its close, is; a marker cut
        short is not."""
        return unread if self._state == "key" else ""

    def _step_header(self, buf: str, pos: int) -> int | None:
        hit = self._name_ends.search(buf, pos)
        if hit is None:
            prefix = self._syntax.header_prefix
            if prefix is not None and re.fullmatch(prefix, buf[pos:], re.DOTALL) is None:
                self.status = FAILED
                return pos
            return self._need_more(buf, pos)
        match = re.fullmatch(self._syntax.name_pattern, buf[pos : hit.start], re.DOTALL)
        if match is None:
            self.status = FAILED
            return pos
        name = self._attribute(match.group("name"))
        if (self._syntax.known_names_only or self._sink.body_unmarked) and not self._sink.offers(name):
            self.status = FAILED
            return pos
        self._sink.start(name)
        self._types = self._sink.parameter_types(name)
        self._state = "between"
        if match.groupdict().get("empty"):
            self._close()
        keep_marker = hit.marker in (self._syntax.key_open, *self._syntax.call_closes)
        return hit.start if keep_marker else hit.end

    def _step_between(self, buf: str, pos: int) -> int | None:
        if self._syntax.json_body and not self._wrote_key and self._json is None:
            blank_end = _WHITESPACE.match(buf, pos).end()
            if blank_end > pos:  # consumed here, so never read twice
                self._add_stray(buf[pos:blank_end])
                return blank_end
            if buf[pos] == "{" and not self._saw_prose:
                self._stray.clear()
                self._json = JsonValueScanner()
                self._state = "json"
                return pos
        hit = self._between.search(buf, pos)
        if hit is None:
            end = self._between.safe_end(buf, pos)
            self._add_stray(buf[pos:end])
            return end if end > pos else None
        self._add_stray(buf[pos : hit.start])
        self._flush_stray()
        if hit.marker == self._syntax.key_open:
            self._state = "key"
        else:
            self._close()
        return hit.start if hit.marker in self._syntax.call_also_ends_at else hit.end

    def _add_stray(self, text: str) -> None:
        self._stray.append(text)
        if not self._saw_prose and text.strip():
            self._saw_prose = True

    def _flush_stray(self) -> None:
        """Text between tags that is not whitespace is not part of the call;
        it goes to content as written rather than being lost."""
        stray = "".join(self._stray)
        self._stray.clear()
        if stray.strip():
            self._sink.stray(stray)

    def _step_json(self, buf: str, pos: int) -> int | None:
        """A JSON object for arguments, bounded by the call's close outside its strings."""
        scanner = self._json
        assert scanner is not None, "the json state has a scanner"
        end, hit = scan_to_end_marker(scanner, self._between, buf, pos)
        if end > pos:
            self._sink.args(buf[pos:end])
        if scanner.done or hit is not None:
            self._state = "between"
            return end
        return end if end > pos else None

    def _step_key(self, buf: str, pos: int) -> int | None:
        hit = self._key_close.search(buf, pos)
        boundary = self._key_boundaries.search(buf, pos) if self._syntax.call_also_ends_at else None
        if boundary is not None and (hit is None or boundary.start < hit.start):
            self._add_stray(self._syntax.key_open + buf[pos : boundary.start])  # no key: content
            self._state = "between"
            return boundary.start
        if hit is None:
            return self._need_more(buf, pos)
        match = re.fullmatch(self._syntax.key_pattern, buf[pos : hit.start], re.DOTALL)
        if match is None:
            self._add_stray(self._syntax.key_open + buf[pos : hit.end])  # not a key: content
            self._state = "between"
            return hit.end
        key = (self._attribute(match.group("key")), _string_attribute(match))
        if self._syntax.value_open:
            self._unopened_key = key
            self._state = "value_open"
        else:
            self._open_value(*key)
            self._state = "value"
        return hit.end

    def _step_value_open(self, buf: str, pos: int) -> int | None:
        """After a key's close: the value's open tag (or, leniently, the
        value itself). The key is written only once its value opens: a key
        followed by another key, the call's close or the end of output has
        no value and is not an argument."""
        pos = self._gap.match(buf, pos).end()
        opener = self._syntax.value_open
        if buf.startswith(opener, pos):
            self._open_pending_value()
            return pos + len(opener)
        rest = buf[pos : pos + len(opener)]
        if len(rest) < len(opener) and (opener.startswith(rest) or "\\n".startswith(rest)):
            return None
        for marker in (self._syntax.key_open, *self._syntax.call_closes, *self._syntax.call_also_ends_at):
            ahead = buf[pos : pos + len(marker)]
            if ahead == marker:
                self._unopened_key = None
                self._state = "between"
                return pos
            if marker.startswith(ahead) and len(ahead) < len(marker):
                return None
        self._open_pending_value()
        return pos

    def _open_pending_value(self) -> None:
        assert self._unopened_key is not None, "a key was read before its value"
        self._open_value(*self._unopened_key)
        self._unopened_key = None
        self._state = "value"

    def _step_value(self, buf: str, pos: int) -> int | None:
        hit = self._value_ends.search(buf, pos)
        end = hit.start if hit else self._value_ends.safe_end(buf, pos)
        self._take_value(buf[pos:end])
        if hit is None:
            return end if end > pos else None
        if hit.marker == xml_text.CDATA_OPEN:
            self._state = "cdata"
            return hit.end
        if hit.marker in self._syntax.closes_after_value:
            if hit.start > pos:
                return hit.start
            closes, starts = self._syntax.closes_after_value, self._syntax.call_also_ends_at
            if starts and closes_then_start(buf, pos, closes, starts):  # the call's close, then the next call
                self._end_value()
                self._state = "between"
                return hit.start
            if only_closes_may_follow(buf, pos, closes, starts):
                return None  # held: text of the value, or its call's close at the end of the output or before the next call
            self._take_value(hit.marker)
            return hit.end
        self._end_value()
        self._state = "between"
        return hit.end if hit.marker == self._syntax.value_close else hit.start

    def _step_cdata(self, buf: str, pos: int) -> int | None:
        """Inside a CDATA section of a value: text, up to `]]>`."""
        hit = self._cdata_end.search(buf, pos)
        end = hit.start if hit else self._cdata_end.safe_end(buf, pos)
        text = buf[pos:end]
        self._take_value(xml_text.literal(text) if self._syntax.unescape_xml else text)
        if hit is None:
            return end if end > pos else None
        self._state = "value"
        return hit.end

    def _attribute(self, value: str) -> str:
        if self._syntax.attribute_entities:
            return value.replace("&quot;", '"').replace("&amp;", "&")
        return value

    def _need_more(self, buf: str, pos: int) -> int | None:
        """Wait for more of a header or key, unless it is too long to be one."""
        if len(buf) - pos <= MAX_TOKEN_CHARS:
            return None
        if self._state == "header":
            self.status = FAILED
        else:
            self._add_stray(self._syntax.key_open)
        self._state = "between"
        return pos

    def _open_value(self, key: str, string_attribute: str | None) -> None:
        if string_attribute == "true" or self._syntax.all_strings:
            self._key_types = coerce.Types({"string"})
        else:
            self._key_types = self._types.get(key, coerce.Types())
        untyped_json = self._syntax.untyped_json and not self._key_types
        self._declared_json = string_attribute == "false" or untyped_json
        self._streaming = coerce.is_plain_string(self._key_types)
        separator = ", " if self._wrote_key else "{"
        self._wrote_key = True
        self._null_probe = "" if self._streaming and self._syntax.null_word else None
        opens_string = self._streaming and self._null_probe is None
        self._sink.args(separator + orjson.dumps(key).decode() + ": " + ('"' if opens_string else ""))
        self._value.clear()
        self.held_chars = 0
        self._pending = ""
        self._leading_done = False
        self._padded = False

    def _take_value(self, text: str) -> None:
        if not text:
            return
        if not self._leading_done:
            text = self._trim_leading(text)
            if not text:
                return
        if not self._streaming:
            self._value.append(text)
            self.held_chars += len(text)
            return
        if self._null_probe is not None:
            text = self._past_null_word(text)
            if not text:
                return
        body = text.rstrip(_BLANKS)
        if not body:
            self._pending += text
            return
        released, self._pending = self._pending + body, text[len(body) :]
        if self._syntax.unescape_html or self._syntax.unescape_xml:
            held = xml_text.unfinished_reference_start(released)
            released, self._pending = released[:held], released[held:] + self._pending
        if released:
            self._sink.args(json_string_body(self._decoded(released)))

    def _past_null_word(self, text: str) -> str:
        """Hold a string value while it can still be `null_word`; once it
        cannot, open the JSON string and give back all the text held."""
        assert self._null_probe is not None, "called while the value may be null_word"
        probe = self._null_probe + text
        if self._syntax.null_word.startswith(probe.rstrip(_BLANKS).lower()):
            self._null_probe = probe
            self.held_chars = len(probe)
            return ""
        self._null_probe = None
        self.held_chars = 0
        self._sink.args('"')
        return probe

    def _trim_leading(self, text: str) -> str:
        trim = self._syntax.trim
        if trim == "strip":
            text = text.lstrip(_BLANKS)
            self._leading_done = bool(text)
            return text
        self._leading_done = True
        self._padded = trim in ("newline", "paired_newline") and text.startswith("\n")
        return text[1:] if self._padded else text

    def _end_value(self) -> None:
        if self._null_probe is not None:
            probe = self._trim_trailing(self._null_probe)
            self._sink.args("null" if self._is_null_word(probe) else orjson.dumps(self._decoded(probe)).decode())
            return
        if self._streaming:
            self._sink.args(json_string_body(self._decoded(self._trim_trailing(self._pending))) + '"')
            return
        raw = self._decoded(self._trim_trailing("".join(self._value)))
        if self._is_null_word(raw):
            self._sink.args("null")
        elif self._is_digit_boolean(raw):
            self._sink.args("true" if raw.strip() == "1" else "false")
        elif self._declared_json:
            self._sink.args(_json_or_text(raw))
        elif self._key_types:
            self._sink.args(coerce.to_json(raw, self._key_types))
        else:
            self._sink.args(orjson.dumps(raw).decode())

    def _is_null_word(self, text: str) -> bool:
        return bool(self._syntax.null_word) and text.lower() == self._syntax.null_word

    def _is_digit_boolean(self, text: str) -> bool:
        types = self._key_types
        return (
            self._syntax.digit_booleans
            and "boolean" in types
            and not types & {"integer", "number", "string"}
            and text.strip() in ("0", "1")
        )

    def _decoded(self, text: str) -> str:
        if self._syntax.unescape_xml:
            return xml_text.unescape(text)
        return html.unescape(text) if self._syntax.unescape_html else text

    def _trim_trailing(self, text: str) -> str:
        trim = self._syntax.trim
        if trim == "strip":
            return text.rstrip(_BLANKS)
        if (trim == "newline" or (trim == "paired_newline" and self._padded)) and text.endswith("\n"):
            return text[:-1]
        return text

    def _close(self) -> None:
        if self._json is None:
            self._sink.args("}" if self._wrote_key else "{}")
        self._sink.end()
        self.status = DONE


def _string_attribute(key_match: re.Match) -> str | None:
    """`true`/`false` when the key's tag declares whether its value is a
    string (a `string` or a `type` group), else None (the schema decides)."""
    groups = key_match.groupdict()
    declared_type = groups.get("type")
    if declared_type is not None:
        return "true" if declared_type == "string" else "false"
    return groups.get("string")


def _json_or_text(raw: str) -> str:
    """A value declared JSON (`string="false"`): its JSON, else its text."""
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return orjson.dumps(raw.strip()).decode()
    return raw.strip()

"""Body grammar: a header naming the function, then JSON arguments.

    NAME<｜tool▁sep｜>{"city": "Paris"}                    (DeepSeek V3.1)
    function<｜tool▁sep｜>NAME\\n```json\\n{"city": …}       (DeepSeek V3)
    functions.NAME:0<|tool_call_argument_begin|>{…}       (Kimi K2)
    NAME[ARGS]{…}                                         (Mistral, compact)
    NAME{…}                                               (Mistral, compact, `[ARGS]` not written)

The header runs up to `args_start`; `name_pattern` must match all of it
(its group `name` is the function name), else the body is not a call and
the tool-call stage returns it as content. With `bare_object_args`, the
header may also end where a JSON object opens, with no `args_start`
(the `{` belongs to the arguments); the header must then be a bare
identifier, nothing around it, so prose with a brace stays content.
With `skip_unnamed`, such a call, or one whose header runs into
`args_end` with no `args_start`, is instead read up to `args_end` (or
the end of the output) and dropped, neither call nor content (Kimi K2's
ids that are not `functions.NAME:N`). A header matching the pattern's
`counter` group instead of `name` (Kimi K2's bare counter, `0`) names the
request's only function; with several, the arguments are held to their
end and name the one function whose parameters hold them all
(`parsers.core.function_by_arguments`); with none that fits, the call is
dropped as an unnamed one. A header that runs into one of
`header_stops_at` (another call's or section's start) is no call: the
body fails there, its text is content, and the marker opens what it opens
(no call that follows is swallowed by a malformed one). The arguments then stream as
verbatim slices of the model's text until `JsonValueScanner` finds their
end, or until the optional `args_end` marker outside a JSON string
(`scan_to_end_marker`: inside a string it is text): malformed arguments
pass through as written.
"""

from __future__ import annotations

import re

from parsers.core.always_matching import always_matching
from parsers.core.call_body import DONE, FAILED, MAX_TOKEN_CHARS, RUNNING, CallBody, CallSink
from parsers.core.function_by_arguments import function_for, only_function
from parsers.core.json_scan import JsonValueScanner, scan_to_end_marker
from parsers.core.markers import marker_set
from parsers.grammars.recipient_call import ReplySink

_WHITESPACE = always_matching(r"\s*")
_BARE_NAME = re.compile(r"(?P<name>[A-Za-z_][\w.\-]*)")


class NamedJsonCall:
    def __init__(
        self,
        sink: ReplySink,
        *,
        args_start: str,
        name_pattern: str,
        args_end: str | None = None,
        skip_unnamed: bool = False,
        bare_object_args: bool = False,
        header_stops_at: tuple[str, ...] = (),
    ):
        self.status = RUNNING
        self._sink = sink
        self._args_start = marker_set(args_start)
        self._args_end = marker_set(args_end) if args_end else None
        self._name_pattern = re.compile(name_pattern, re.DOTALL)
        self._header: list[str] = []
        self._header_chars = 0
        self._args: JsonValueScanner | None = None
        self._skip_unnamed = skip_unnamed and args_end is not None
        self._skipping = False
        self._held: list[str] | None = None  # a counter call's arguments, held until they name it
        # With `skip_unnamed`, a header may also end at `args_end` (a call with no arguments marker).
        header_ends = [args_start]
        if self._skip_unnamed and args_end:
            header_ends.append(args_end)
        if bare_object_args:
            header_ends.append("{")
        self._header_stops = frozenset(header_stops_at)
        self._header_end = marker_set(*header_ends, *header_stops_at)

    def step(self, buf: str, pos: int) -> int:
        if self._skipping:
            return self._step_skipped(buf, pos)
        if self._args is None:
            pos = self._step_header(buf, pos)
            if self._args is None:
                return pos
        if not self._args.started:
            pos = _WHITESPACE.match(buf, pos).end()
        if self._args_end is None:
            end, hit = self._args.scan(buf, pos), None
        else:
            end, hit = scan_to_end_marker(self._args, self._args_end, buf, pos)
        if end > pos:
            self._take_args(buf[pos:end])
        if self._args.done or hit is not None:
            self._end_call()
        return end

    def finish(self) -> None:
        if self._held is not None:
            self._end_call()
        elif self._args is not None or self._skipping:
            self.status = DONE
        else:
            self.status = FAILED

    def _take_args(self, text: str) -> None:
        if self._held is not None:
            self._held.append(text)
        else:
            self._sink.args(text)

    def _end_call(self) -> None:
        self.status = DONE
        if self._held is None:
            self._sink.end()
            return
        arguments = "".join(self._held)
        name = function_for(getattr(self._sink, "tools", None), arguments)
        if name is None:
            self._sink.reply("")  # no one function fits: dropped, as an unnamed call
            return
        self._sink.start(name)
        self._sink.args(arguments)
        self._sink.end()

    def _step_header(self, buf: str, pos: int) -> int:
        hit = self._header_end.search(buf, pos)
        if hit is None:
            end = self._header_end.safe_end(buf, pos)
            self._add_header(buf[pos:end])
            return end
        self._add_header(buf[pos : hit.start])
        if hit.marker in self._header_stops:
            self.status = FAILED
            return hit.start
        opens_object = hit.marker == "{"
        if hit.marker not in self._args_start.markers and not opens_object:
            self._sink.reply("")  # a call with no arguments marker: skipped
            self.status = DONE
            return hit.start
        match = (_BARE_NAME if opens_object else self._name_pattern).fullmatch("".join(self._header))
        if match is None and self._skip_unnamed:
            self._sink.reply("")  # drops what was read: the call is skipped
            self._skipping = True
            return self._step_skipped(buf, hit.end)
        if match is None:
            self.status = FAILED
            return hit.start
        self._args = JsonValueScanner()
        name = match.group("name")
        if name is None:  # a bare counter: the request's tools name the function
            name = only_function(getattr(self._sink, "tools", None))
            if name is None:
                self._held = []
                return hit.end
        self._sink.start(name)
        return hit.start if opens_object else hit.end

    def _step_skipped(self, buf: str, pos: int) -> int:
        """Inside a skipped call: everything up to `args_end` is dropped;
        the marker itself is left to the driver, which closes the call."""
        assert self._args_end is not None, "only a body with an end marker skips"
        hit = self._args_end.search(buf, pos)
        if hit is None:
            return self._args_end.safe_end(buf, pos)
        self.status = DONE
        return hit.start

    def _add_header(self, text: str) -> None:
        self._header.append(text)
        self._header_chars += len(text)
        if self._header_chars > MAX_TOKEN_CHARS:
            self.status = FAILED


class ByFirstChar:
    """Chooses the body grammar by the first non-blank character:
    `[`/`{` for JSON call objects, anything else for a named call."""

    def __init__(self, sink: CallSink, *, json_body, named_body):
        self.status = RUNNING
        self._sink = sink
        self._choices = (json_body, named_body)
        self._body: CallBody | None = None

    def step(self, buf: str, pos: int) -> int:
        if self._body is None:
            pos = _WHITESPACE.match(buf, pos).end()
            if pos == len(buf):
                return pos
            json_body, named_body = self._choices
            self._body = (json_body if buf[pos] in "[{" else named_body)(self._sink)
        pos = self._body.step(buf, pos)
        self.status = self._body.status
        return pos

    def finish(self) -> None:
        if self._body is None:
            self.status = FAILED
            return
        self._body.finish()
        self.status = self._body.status

"""Text between calls, read alike by the tool-call stage
(`parsers.stages.tool_calls`) and by a channel message's body
(`parsers.grammars.channel_call`).

The text is scanned for markers: outside a section for the markers and
the section starts, inside one for the markers and the section ends. A
marker that begins no call opens or closes a section, or is dropped; what
follows it starts at a boundary. A whitespace-only run between a boundary
and the next marker is formatting, not text: it is held as the gap, and
goes out only ahead of text that is not whitespace (or as its reader
decides, at a call or at the end).
"""

from __future__ import annotations

from parsers.core.markers import Hit, marker_set

_WHITESPACE = " \t\r\n"


class BetweenCalls:
    """The text state of a reader of calls: `_step_text` reads text up to
    the next marker, handing each marker to `_at_marker` (by default one
    that begins no call, `_passed`) and each piece of content, boundaries'
    whitespace held, to `_content`. `_drops_text` set, no text is content."""

    _held_back: str

    def _init_between(
        self, markers: tuple[str, ...], section_starts: tuple[str, ...], section_ends: tuple[str, ...]
    ) -> None:
        self._in_section = False
        self._gap = ""
        self._at_boundary = True
        self._drops_text = False
        self._section_starts = section_starts
        self._section_ends = section_ends
        self._text_markers = marker_set(*markers, *section_starts)
        self._section_markers = marker_set(*markers, *section_ends)
        self._markers = self._text_markers  # those looked for now

    def _content(self, text: str) -> None:
        raise NotImplementedError

    def _at_marker(self, hit: Hit) -> int | None:
        """A marker found in text: where reading goes on."""
        self._passed(hit.marker)
        return hit.end

    def _step_text(self, buf: str, pos: int) -> int | None:
        markers = self._markers
        if not markers.may_start_in(buf, pos):  # no marker, nor the start of one: all text (most pieces)
            self._emit_text(buf[pos:])
            self._held_back = ""
            return None
        hit = markers.search(buf, pos)
        if hit is None:
            end = markers.safe_end(buf, pos)
            self._emit_text(buf[pos:end])
            self._held_back = buf[end:]
            return None
        self._emit_text(buf[pos : hit.start])
        return self._at_marker(hit)

    def _passed(self, marker: str) -> None:
        """A marker that begins no call: a section's start or end, or one
        that is dropped."""
        if self._in_section:
            if marker in self._section_ends:
                self._in_section = False
                self._markers = self._text_markers
                self._gap = ""
        elif marker in self._section_starts:
            self._in_section = True
            self._markers = self._section_markers
        self._at_boundary = True

    def _emit_text(self, text: str) -> None:
        """Content, except a whitespace-only run between a boundary and a
        marker (the gap)."""
        if not text or self._drops_text:
            return
        if self._at_boundary:
            if not text.strip(_WHITESPACE):
                self._gap += text
                return
            text, self._gap, self._at_boundary = self._gap + text, "", False
        self._content(text)

"""How a chat template writes call ids, read from its renders
(docs/derived-parsers.md), so a derived format makes ids the next turn
renders (`ToolFormat.call_id_template`).

- ids written as given, of any shape: the surface's own ids serve;
- ids written as given, but only letters and digits of one length
  (Mistral's templates refuse any other, as vLLM's Mistral tool parser
  makes them): `{random:N}`;
- ids the template writes itself from the name and the call's index
  (`functions.NAME:N`, as Kimi K2 writes them): that pattern, `{name}`
  and `{n}`;
- anything else: the surface's ids are kept, and `--derive` says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable

GIVEN = "call00000"  # the first sample call's id (`analysis.CALL_ID`): 9 letters and digits
_FREE = "free-shape_id.0"  # not letters and digits only, nor 9 long
_OTHER = "Zq8Xw2Ab7"  # letters and digits, GIVEN's length

NOT_WRITTEN = "not written"
ANY_SHAPE = "written as given, of any shape: the surface's ids are used"
UNREAD = "written in a shape the renders do not reveal: the surface's ids are kept, and may not render"


def call_id_pattern(
    one: str, two: str | None, render: Callable[[str], str | None], first: str, second: str
) -> tuple[str | None, str]:
    """(the call_id_template, what `--derive` says) for a template whose
    one-call sample `one` (and two-call sample `two`) name `first` (and
    `second`), and whose one-call turn with another id is `render(id)`
    (None where the template refuses it)."""
    if GIVEN in one:
        if _writes(render(_FREE), _FREE):
            return None, ANY_SHAPE
        if _writes(render(_OTHER), _OTHER):
            return f"{{random:{len(GIVEN)}}}", f"written as given, only {len(GIVEN)} letters and digits"
        return None, UNREAD
    own = re.search(r"([\w.:-]*?)" + re.escape(first) + r"([.:_-]?)0(?![\w])", one)
    if own is None:
        return None, NOT_WRITTEN
    prefix, separator = own.groups()
    if two is not None and f"{prefix}{second}{separator}1" not in two:
        return None, UNREAD
    template = f"{prefix}{{name}}{separator}{{n}}"
    return template, "written by the template from the name and index"


def _writes(render: str | None, call_id: str) -> bool:
    return render is not None and call_id in render

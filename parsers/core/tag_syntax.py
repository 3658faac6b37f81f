"""The syntax of a tag-format call, as data: what `TagCall` reads
(`parsers.grammars.tag_call`) and each tag format fills in (`parsers/formats`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TagSyntax:
    """`name_pattern` and `key_pattern` must match the whole header / key
    text (groups `name`, `key`; an optional `string` group, `true` or
    `false`, types the value instead of the schema, as does an optional
    `type` group: `string` keeps the text, any other type is JSON; an
    optional `empty` group in the header means a call with no arguments).
    `trim` is what a value loses at its ends: one `newline`, all blanks
    (`strip`), `none`, or `paired_newline`: one newline at each end only
    when the value begins with one (padding written on both sides; a value
    written flush keeps its own last newline, Seed-OSS).
    `gap_pattern` is what may stand between a key's close and its value's
    open (GLM models sometimes write a literal backslash-n there).
    `header_prefix`, if set, must match the whole header read so far
    while its end has not come: prose that only began like a call gives
    up at once (Beam). `untyped_json`: a value the schema does not type is
    JSON when it parses as JSON, else text (Muse).
    `json_body`: the arguments may instead be one JSON object, streamed
    verbatim up to the call's close (DeepSeek DSML). `unescape_html`: values
    are HTML-escaped text (`a &amp; b` is `a & b`) and are decoded before
    they are typed (MiMo). `attribute_entities`: the name and keys are
    attribute values written with `&quot;` and `&amp;` (Kimi K3 XTML).
    `null_word`, if set, is the value (any case) that means null whatever
    the schema says, string parameters included (Spark 2.5 writes `null`);
    a string value is held back only while it can still become that word.
    `digit_booleans`: `1` and `0` are true and false for a parameter that
    can be a boolean but no number or string (Spark 2.5).
    `unescape_xml`: values are XML character data (`a &amp; b` is `a & b`,
    `&para` stays as written); `cdata`: a value may hold
    `<![CDATA[…]]>` sections, taken literally (MiniCPM).
    `known_names_only`: a name the request's tools do not offer makes no
    call, and the text stays content (a format written in plain text,
    without special markers, MiniCPM); without tools every name is read.
    `all_strings`: every value is a JSON string, whatever the schema says,
    streamed as it is written (a declarative format types the arguments
    afterwards, `parsers.stages.typed_arguments`).
    `closes_after_value`: the call's close markers, in the order written
    (`</function>`, `</tool_call>`). Inside a value they are text (a file
    about tool calls holds them), unless nothing but they and blanks
    follow up to the end of the output: then the value's close tag was
    left out, and they end the value and the call.
    `call_also_ends_at`: markers that end the call (and a value or a key
    still open in it) without belonging to it: the next call's start, when
    the model left out this call's close (Solar Open 2); they are left for
    the next call. A key that runs into the call's close, the next key's
    open or one of these is no argument: its text is content."""

    name_ends: tuple[str, ...]
    name_pattern: str
    key_open: str
    key_close: str
    value_close: str
    call_closes: tuple[str, ...]
    key_pattern: str = r"\s*(?P<key>.+?)\s*"
    value_open: str = ""
    value_also_ends_at: tuple[str, ...] = ()
    trim: str = "newline"
    header_prefix: str | None = None
    untyped_json: bool = False
    gap_pattern: str = r"\s*"
    json_body: bool = False
    unescape_html: bool = False
    attribute_entities: bool = False
    null_word: str = ""
    digit_booleans: bool = False
    unescape_xml: bool = False
    cdata: bool = False
    known_names_only: bool = False
    all_strings: bool = False
    closes_after_value: tuple[str, ...] = ()
    call_also_ends_at: tuple[str, ...] = ()

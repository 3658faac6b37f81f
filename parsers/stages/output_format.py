"""What a model's output format says of the pipeline around its two stages:
`OutputFormat`, built by the formats layer (`parsers.pipeline.output_format`,
a response template's `TemplateFormats.output`) and read by `make_pipeline`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """The parts of a pipeline that the model's output format decides,
    whatever the request reads of it.

    `end_of_turn`: tokens removed from the whole output (`EndOfTurnFilter`);
    a model's, even when the request does not read its reasoning or calls.
    `framing`: the reasoning format whose stage reads the messages the
    model's calls are written in (Harmony's channels), run as the reasoning
    stage, keeping the reasoning in the content, when no reasoning parser
    is set (`ToolFormat.framing`). `strip_reasoning` / `strip_content`: the
    reasoning and the content are trimmed at both ends (`EdgeWhitespace`);
    `cast_arguments`: string arguments are cast to the types the request's
    tools declare (`TypedArguments`), as a response template has it.
    """

    end_of_turn: tuple[str, ...] = ()
    framing: str | None = None
    strip_reasoning: bool = False
    strip_content: bool = False
    cast_arguments: bool = False

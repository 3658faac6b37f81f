"""How far the parsers a family's real chat template implies parse that
family's real outputs as its named parsers do: for each template in
tests/fixtures/chat_templates (`tests.template_families`), the cases of
its named parsers (tests/cases and the corpus) parsed one-shot with the
template's parsers (`parsers_from:`) and with the named ones; the share
that agrees, per family and overall, for the template and for its
fine-tuned twin (`fine_tuned`).

    PYTHONPATH=. python -m tests.derivation_report
"""

from __future__ import annotations

import sys

from gateway.templates.analysis import derive
from gateway.templates.chat_template import ChatTemplate, ChatTemplateError
from tests.parsers.test_conformance import parse_with
from tests.template_families import FAMILY_TEMPLATES, SPECIAL_TOKENS, TEMPLATES, cases_for, fine_tuned, stages


def agreement(
    source: str, where: str, tokens: tuple[str, ...], tool: str | None, reasoning: str | None
) -> tuple[int, int, str]:
    """(cases agreeing, cases, what the template was served as)."""
    cases = cases_for(tool, reasoning)
    try:
        found = derive(ChatTemplate(source, where=where, special_tokens=tokens))
    except ChatTemplateError as error:
        return 0, len(cases), f"refused: {error}"
    agree = 0
    for case in cases:
        named = parse_with(case, [case["text"]], case["reasoning_parser"] and reasoning, case["tool_parser"] and tool)
        agree += parse_with(case, [case["text"]], *stages(found, case)) == named
    return agree, len(cases), found.origin if not found.found_nothing else "plain content"


def main() -> int:
    totals = {"template": [0, 0], "twin": [0, 0]}
    shares: dict[str, list[float]] = {"template": [], "twin": []}
    print(f"{'family':30} {'cases':>5} {'template':>9} {'twin':>9}  served as")
    for name, (family, tool, reasoning) in FAMILY_TEMPLATES.items():
        source = (TEMPLATES / name).read_text(encoding="utf-8")
        row = {}
        for kind, text in (("template", source), ("twin", fine_tuned(source))):
            agree, count, origin = agreement(text, f"{kind}:{name}", SPECIAL_TOKENS.get(name, ()), tool, reasoning)
            row[kind] = (agree, count, origin)
            totals[kind][0] += agree
            totals[kind][1] += count
            shares[kind].append(agree / count if count else 1.0)
        (agree, count, origin), (twin_agree, _, _) = row["template"], row["twin"]
        print(f"{family:30} {count:5} {_percent(agree, count):>9} {_percent(twin_agree, count):>9}  {origin}")
    for kind in ("template", "twin"):
        agree, count = totals[kind]
        mean = 100 * sum(shares[kind]) / len(shares[kind])
        print(f"overall, {kind}: {_percent(agree, count)} of {count} cases; mean of the families {mean:.1f} %")
    return 0


def _percent(agree: int, count: int) -> str:
    return f"{100 * agree / count:.1f} %" if count else "-"


if __name__ == "__main__":
    sys.exit(main())

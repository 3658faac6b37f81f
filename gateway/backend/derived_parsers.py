"""Config entries served by the parsers their chat template implies
(docs/derived-parsers.md): `parsers_from: SOURCE`, or in template mode a
`chat_template` with no parser named. Each template is read and analysed
once, at start-up and at each reload (`template_analysis.derive`).
"""

from __future__ import annotations

import logging

from gateway.backend.chat_template import ChatTemplateError
from gateway.backend.template_analysis import Derivation, derive
from gateway.backend.template_sources import load_chat_template
from gateway.ops.config import CHAT_TEMPLATE_FROM_BACKEND, Config, ConfigError, ModelConfig

logger = logging.getLogger("parsegate.startup")


def with_template_parsers(config: Config) -> Config:
    """`config` with each entry that takes its parsers from a template served by them."""
    models = [_derived(model) for model in config.models]
    return config if models == config.models else config.model_copy(update={"models": models})


def derivation_of(source: str, model: ModelConfig | None = None) -> Derivation:
    """What the template at `source` implies; ConfigError if it cannot be read."""
    try:
        tokens = {"bos_token": model.bos_token, "eos_token": model.eos_token} if model else {}
        template = load_chat_template(source, **tokens)
    except ChatTemplateError as error:
        where = f"models[{model.name!r}].parsers_from" if model else "template"
        raise ConfigError(f"{where}: {error}") from None
    return derive(template)


def _derived(model: ModelConfig) -> ModelConfig:
    source = model.template_for_parsers
    if source is None:
        return model
    if source == CHAT_TEMPLATE_FROM_BACKEND:
        logger.warning(
            "model %s: parsers are not derived from the server's template (GET /props is read at the first "
            "request, after the parsers are chosen); name them, or give the template file as parsers_from",
            model.name,
        )
        return model.with_template_parsers(None, None, "config")
    found = derivation_of(source, model)
    if found.found_nothing:
        logger.warning(
            "model %s: the chat template %s writes no reasoning and no tool-call markers parsegate can read (%s); "
            "served as plain content",
            model.name,
            source,
            "; ".join(found.refusals),
        )
        return model.with_template_parsers(None, None, "template: derived")
    return model.with_template_parsers(found.reasoning_stage(), found.tool_stage(), found.origin)

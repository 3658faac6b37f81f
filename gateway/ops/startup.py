"""What `parsegate serve` says at start-up (docs/operations.md#start-up-lines):
one line per model (its backend URLs with credentials masked, the server
kind, the mode and the parsers), and a warning for each setting that is
probably a mistake: one parser named and the other left unset (naming
either turns the pick from the model name off, so the other stage is
silently off), and a non-loopback listen address with no API keys.
"""

from __future__ import annotations

import ipaddress
import logging
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from gateway.ops.config import CATCH_ALL, Config, ModelConfig
from gateway.ops.model_families import family_of
from gateway.ops.secrets import MASK, Secrets

logger = logging.getLogger("parsegate.startup")

_STAGES = (("reasoning_parser", "reasoning is"), ("tool_call_parser", "tool calls are"))
SERVER_UNSET = "auto"  # a model whose backend.server is not set


def masked_url(url: str, secrets: Secrets) -> str:
    """`url` with its password and query values masked, then every
    configured secret."""
    parts = urlsplit(url)
    userinfo, at, address = parts.netloc.rpartition("@")
    if at:  # `user:password@` keeps the user; a lone `token@` is all secret
        userinfo = f"{parts.username}:{MASK}" if parts.password is not None else MASK
    netloc = f"{userinfo}{at}{address}"
    query = urlencode([(key, MASK) for key, _ in parse_qsl(parts.query, keep_blank_values=True)], safe="*")
    return secrets.redact(urlunsplit(parts._replace(netloc=netloc, query=query)))


def model_line(model: ModelConfig, secrets: Secrets) -> str:
    """One model's summary: `model NAME: urls=… server=… mode=… parsers`."""
    backend = model.backend
    if backend.demo:
        urls = server = "demo"
    else:
        urls = ",".join(masked_url(url, secrets) for url in backend.base_urls)
        server = backend.server or SERVER_UNSET
    mode = f"template chat_template={model.chat_template}" if model.chat_template else "chat"
    if model.response_template is not None:
        parsers = f"response_template={model.response_template}"
    elif model.parsers_from_name and model.name == CATCH_ALL and backend.model is None:
        parsers = "parsers picked per request from the requested model name"
    else:
        stages = {"reasoning_parser": model.reasoning_stage, "tool_call_parser": model.tool_stage}
        parsers = " ".join(
            f"{key}={stage if isinstance(stage, str) else stage.name if stage else 'none'}"
            for key, stage in stages.items()
        )
        if model.parsers_from_name:
            parsers += " (picked from the model name)"
        elif model.parsers_origin.startswith("template"):
            parsers += f" ({model.parsers_origin})"
    return f"model {model.name}: urls={urls} server={server} mode={mode} {parsers}"


def _named_keys(model: ModelConfig) -> set[str]:
    """The parser keys the entry itself sets (`none` included); an entry
    naming neither has both filled in from the model name."""
    return set() if model.parsers_from_name else {key for key, _ in _STAGES if key in model.model_fields_set}


def half_named_parsers(model: ModelConfig) -> str | None:
    """A warning when the entry names one parser and leaves the other unset,
    so that stage is off; None when the name table agrees it has no parser
    for that stage."""
    named = _named_keys(model)
    if model.response_template is not None or len(named) != 1:
        return None
    [(unset, stage)] = [(key, stage) for key, stage in _STAGES if key not in named]
    match = family_of(model.upstream_model)
    suggestion = getattr(match[1], unset) if match else None
    if match and suggestion is None:
        return None
    [set_key] = named
    pick = f"; the model name's pick is {suggestion}" if suggestion else ""
    return (
        f"model {model.name}: {unset} is not set, so {stage} not parsed (naming only {set_key} turns the pick "
        f"from the model name off{pick}): set {unset}, or {unset}: none if that is meant"
    )


def unguarded_address(host: str, config: Config) -> str | None:
    """A warning when the gateway listens beyond this machine with no API keys."""
    if config.server.api_keys or _is_loopback(host):
        return None
    return (
        f"listening on {host} with no server.api_keys: anyone who reaches this address can use every model; "
        "set server.api_keys (or server.api_keys_file), or listen on 127.0.0.1"
    )


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def log_startup(config: Config, host: str) -> None:
    """The start-up lines for `config` served on `host`."""
    secrets = Secrets.of(config)
    for model in config.models:
        logger.info("%s", model_line(model, secrets))
        warning = half_named_parsers(model)
        if warning:
            logger.warning("%s", warning)
    warning = unguarded_address(host, config)
    if warning:
        logger.warning("%s", warning)

"""The configured models' backends, opened together and closed together."""

from __future__ import annotations

from gateway.ops.config import Config, ModelConfig
from gateway.ops.secrets import Secrets
from gateway.upstream.backend import Backend
from gateway.upstream.load_gauges import LoadScraper
from gateway.upstream.template_backend import TemplateBackend


def open_backend(model: ModelConfig, secrets: Secrets) -> Backend:
    """A model's backend: template mode for an entry with a `chat_template`,
    chat mode otherwise. It redacts `secrets` from what it relays; with
    `backend.load_gauges` and several URLs, it scrapes their engines' load."""
    backend = TemplateBackend(model, secrets) if model.chat_template else Backend(model, secrets)
    gauges = model.backend.load_gauges
    if gauges is not None and backend.balancer.several:
        backend.load_scraper = LoadScraper(backend, gauges)
    return backend


def open_backends(config: Config) -> dict[str, Backend]:
    """A backend per served model name; each redacts every configured secret."""
    secrets = Secrets.of(config)
    return {model.name: open_backend(model, secrets) for model in config.models}


async def close_backends(backends: dict[str, Backend]) -> None:
    for backend in backends.values():
        await backend.close()

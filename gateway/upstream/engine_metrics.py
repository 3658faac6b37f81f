"""The engine's own Prometheus metrics, fetched through the backend's
transport for `server.sidecar.engine_metrics` (docs/llm-d.md): llm-d's
endpoint picker scrapes `pod:targetPort/metrics` for the engine's gauges
(`vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`...), and with
parsegate as the pod's target port they must come through it.

vLLM, SGLang and llama.cpp serve `/metrics` at the server's root, beside
`/v1` (https://docs.vllm.ai/en/latest/design/metrics.html), in the
Prometheus text format when not asked for OpenMetrics. A scrape is bounded
in time and size; a failed one is no text, never an error of the scrape it
joins, and `parsegate_engine_scrape_up` says which it was.
"""

from __future__ import annotations

import logging

from gateway.ops.errors import ApiError
from gateway.ops.sidecar_config import SidecarConfig
from gateway.upstream.backend import Backend
from gateway.upstream.transport import TransportFailure, within_deadline

log = logging.getLogger("parsegate.engine_metrics")

TEXT_FORMAT = "text/plain; version=0.0.4"
UP_FAMILY = "parsegate_engine_scrape_up"


def engine_backend(backends: dict[str, Backend], model: str | None) -> Backend | None:
    """The backend whose engine is scraped: `model`'s, else the first with a URL."""
    if model is not None:
        return backends.get(model)
    return next((backend for backend in backends.values() if backend.config.backend.base_urls), None)


class MetricsUnavailable(Exception):
    """An engine's `/metrics` did not come through; says why."""


async def scrape_engine(backend: Backend, config: SidecarConfig) -> bytes | None:
    """The engine's `/metrics` text from the backend's first URL, or None
    when it did not answer 200 within `engine_metrics_timeout` seconds and
    `engine_metrics_max_bytes` bytes."""
    urls = backend.config.backend.base_urls
    if not urls:
        return None
    try:
        return await fetch_metrics(backend, urls[0], config.engine_metrics_timeout, config.engine_metrics_max_bytes)
    except MetricsUnavailable as failure:
        log.warning("the engine of model %r %s", backend.name, failure)
        return None


async def fetch_metrics(backend: Backend, base_url: str, timeout: float, limit: int) -> bytes:
    """The `/metrics` text of the engine at `base_url` (a URL of `backend`'s),
    within `timeout` seconds and `limit` bytes; MetricsUnavailable if not."""
    url = base_url.removesuffix("/v1") + "/metrics"
    headers = {"accept": TEXT_FORMAT}
    if "authorization" in backend.headers:
        headers["authorization"] = backend.headers["authorization"]
    try:
        async with within_deadline(timeout, "sent no metrics"):
            response = await backend.client.send("GET", url, None, headers)
            try:
                if response.status != 200:
                    raise MetricsUnavailable(f"answered its /metrics with {response.status}")
                text = await backend.client.read(response, backend.errors_for(), limit + 1)
            finally:
                response.close()
    except (TransportFailure, ApiError) as failure:
        raise MetricsUnavailable(f"sent no metrics: {backend.redact(str(failure))}") from None
    if len(text) > limit:
        raise MetricsUnavailable(f"sent metrics over {limit} bytes")
    return text


def scrape_up(up: bool) -> bytes:
    """The gauge that says whether the engine's scrape came through."""
    return (
        f"# HELP {UP_FAMILY} Whether the engine's own /metrics came through on this scrape.\n"
        f"# TYPE {UP_FAMILY} gauge\n{UP_FAMILY} {1.0 if up else 0.0}\n"
    ).encode()


def merged(own: bytes, engine: bytes) -> bytes:
    """`own` exposition followed by the engine's, without the engine's
    families whose names `own` already uses (a family or series twice in
    one scrape fails Prometheus' parser)."""
    taken = {_name(line) for line in own.splitlines() if line.strip()}
    kept: list[bytes] = []
    dropping = False
    for line in engine.splitlines():
        if line.startswith((b"# HELP ", b"# TYPE ")):
            name = _name(line)
            dropping = name in taken or name.removesuffix(b"_total") in taken
        if not dropping:
            kept.append(line)
    tail = b"\n".join(kept)
    return own.rstrip(b"\n") + b"\n" + tail + (b"\n" if tail else b"")


def _name(line: bytes) -> bytes:
    """The family a `# HELP`/`# TYPE` line names, or a sample line's series name."""
    if line.startswith(b"#"):
        words = line.split()
        return words[2] if len(words) > 2 else b""
    return line.split(b"{", 1)[0].split(b" ", 1)[0]

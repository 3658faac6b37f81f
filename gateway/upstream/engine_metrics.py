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


async def scrape_engine(backend: Backend, config: SidecarConfig) -> bytes | None:
    """The engine's `/metrics` text from the backend's first URL, or None
    when it did not answer 200 within `engine_metrics_timeout` seconds and
    `engine_metrics_max_bytes` bytes."""
    urls = backend.config.backend.base_urls
    if not urls:
        return None
    url = urls[0].removesuffix("/v1") + "/metrics"
    headers = {"accept": TEXT_FORMAT}
    if "authorization" in backend.headers:
        headers["authorization"] = backend.headers["authorization"]
    limit = config.engine_metrics_max_bytes
    try:
        async with within_deadline(config.engine_metrics_timeout, "sent no metrics"):
            response = await backend.client.send("GET", url, None, headers)
            try:
                if response.status != 200:
                    log.warning("the engine of model %r answered its /metrics with %d", backend.name, response.status)
                    return None
                text = await backend.client.read(response, backend.errors_for(), limit + 1)
            finally:
                response.close()
    except (TransportFailure, ApiError) as failure:
        log.warning("the engine of model %r sent no metrics: %s", backend.name, backend.redact(str(failure)))
        return None
    if len(text) > limit:
        log.warning("the engine of model %r sent metrics over %d bytes", backend.name, limit)
        return None
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

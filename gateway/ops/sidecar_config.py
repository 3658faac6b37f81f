"""config.yaml's `server.sidecar:` section: what parsegate does as the
per-pod sidecar of an llm-d / Gateway API Inference Extension pool, in
front of one engine on localhost (docs/llm-d.md, docs/configuration.md).

The default headers are those llm-d's endpoint picker sets for the pod's
sidecar and engine (prefill/decode disaggregation, encoder hosts, data
parallel rank or its host:port in newer releases, KV-cache source), as
llm-d's inference scheduler names them
(https://github.com/llm-d/llm-d-inference-scheduler, pkg/common/routing/common.go);
`x-session-token` is the token llm-d's session-affinity scorer hands the
client and reads back on its next request.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from gateway.ops.config_section import Section

LLMD_HEADERS = (
    "x-prefiller-host-port",
    "x-encoder-hosts-ports",
    "x-data-parallel-rank",
    "x-data-parallel-host-port",
    "x-kv-cache-source-host-port",
)
SESSION_TOKEN = "x-session-token"
ENGINE_METRICS_BYTES = 8 << 20  # a vLLM scrape is tens of KB; a bound on what a scrape makes the gateway hold
# Headers the gateway itself sets upstream (or the connection's own): a
# client's copy must never replace them.
_GATEWAY_OWNED = (
    "authorization",
    "content-type",
    "content-length",
    "accept",
    "accept-encoding",
    "host",
    "connection",
    "transfer-encoding",
    "x-request-id",
)


class SidecarConfig(Section):
    """Headers passed to the engine and echoed to the client, and the
    engine's own `/metrics` served on parsegate's port."""

    forward_headers: list[str] = Field(default=list(LLMD_HEADERS))
    echo_headers: list[str] = Field(default=[SESSION_TOKEN])
    engine_metrics: Literal["off", "merge", "path"] = "off"
    engine_metrics_path: str = Field(default="/engine/metrics", pattern=r"^/[A-Za-z0-9._~/-]*$")
    engine_metrics_model: str | None = None  # None: the first model with a backend URL
    engine_metrics_timeout: float = Field(default=2.0, gt=0)
    engine_metrics_max_bytes: int = Field(default=ENGINE_METRICS_BYTES, ge=1)

    @field_validator("engine_metrics", mode="before")
    @classmethod
    def _off_in_yaml(cls, mode: object) -> object:
        return "off" if mode is False else mode  # YAML 1.1 reads a bare `off` as false

    @field_validator("forward_headers", "echo_headers", mode="before")
    @classmethod
    def _split_names(cls, names: object) -> object:
        return [name.strip() for name in names.split(",") if name.strip()] if isinstance(names, str) else names

    @field_validator("forward_headers", "echo_headers")
    @classmethod
    def _header_names(cls, names: list[str]) -> list[str]:
        lowered = [name.lower() for name in names]
        owned = [name for name in lowered if name in _GATEWAY_OWNED]
        if owned:
            raise ValueError(f"{owned[0]!r} is set by the gateway itself and cannot be passed through")
        return lowered

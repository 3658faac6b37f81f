"""OpenTelemetry's semantic conventions for generative AI, with
`server.opentelemetry: true`: four metrics through the OpenTelemetry metrics
API, and the `gen_ai.*` attributes on the request's server span.

Conventions: https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-metrics/
and .../gen-ai/gen-ai-spans/ (status "Development"; names, units and bucket
boundaries as there, semantic-conventions v1.41.0). Per request, at its end
(ops/observe.py), for the generating routes only (`OPERATIONS`):

- `gen_ai.server.request.duration` (s): arrival to the response's end;
  `error.type` (the upstream error kind, or the HTTP status) when it failed;
- `gen_ai.server.time_to_first_token` (s): arrival to the backend's first
  chunk of text, for streams that succeeded;
- `gen_ai.server.time_per_output_token` (s): from the first chunk of text
  to the last, over the output tokens after the first (the backend's
  `usage`), for streams that succeeded with two tokens or more;
- `gen_ai.client.token.usage` ({token}): the backend's `usage`, one
  record per `gen_ai.token.type` (`input`, `output`).

Attributes: `gen_ai.operation.name` (`chat` for chat completions,
Responses and Messages; `text_completion` for completions),
`gen_ai.provider.name` `parsegate` (a custom value, as the conventions
allow: the backend is any OpenAI-compatible server), `gen_ai.request.model`
and `gen_ai.response.model` (the configured model's name, which the answer
carries). The span also gets `gen_ai.usage.input_tokens`,
`gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons` (the chat
completions' reasons, one per choice) and, for older dashboards, the
deprecated `gen_ai.system` with the provider's value.
The meter and the span come from the process's providers, set up as usual
(`opentelemetry-instrument` and the `OTEL_*` variables).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the metrics module's types come with the `otel` extra
    from gateway.ops.observe import RequestRecord

PROVIDER = "parsegate"
OPERATIONS = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "chat",
    "/v1/messages": "chat",
    "/v1/completions": "text_completion",
}
# The conventions' ExplicitBucketBoundaries for each metric.
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
FIRST_TOKEN_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]
PER_TOKEN_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5]


class GenAiTelemetry:
    """The GenAI instruments, made once per app from the global meter provider."""

    def __init__(self) -> None:
        from opentelemetry import metrics

        meter = metrics.get_meter("parsegate")
        self._duration = meter.create_histogram(
            "gen_ai.server.request.duration",
            unit="s",
            description="Generative AI server request duration such as time-to-last byte or last output token.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self._first_token = meter.create_histogram(
            "gen_ai.server.time_to_first_token",
            unit="s",
            description="Time to generate first token for successful responses.",
            explicit_bucket_boundaries_advisory=FIRST_TOKEN_BUCKETS,
        )
        self._per_token = meter.create_histogram(
            "gen_ai.server.time_per_output_token",
            unit="s",
            description="Time per output token generated after the first token for successful responses.",
            explicit_bucket_boundaries_advisory=PER_TOKEN_BUCKETS,
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )

    def request_ended(self, path: str, record: RequestRecord, ended: float) -> None:
        """Record what a request to `path` did, ended at `ended` (perf_counter)."""
        operation = OPERATIONS.get(path)
        if operation is None or record.model is None:
            return
        attributes: dict[str, str] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": record.model,
            "gen_ai.response.model": record.model,
        }
        failed = record.upstream_error or (str(record.status) if (record.status or 500) >= 400 else None)
        self._tokens_used(attributes, record)
        self._set_span(attributes, record, failed)
        if failed is None:
            self._timed(attributes, record)
            self._duration.record(ended - record.started, attributes)
        else:
            self._duration.record(ended - record.started, {**attributes, "error.type": failed})

    def _tokens_used(self, attributes: dict[str, str], record: RequestRecord) -> None:
        for kind, tokens in (("input", record.prompt_tokens), ("output", record.completion_tokens)):
            if tokens is not None:
                self._tokens.record(tokens, {**attributes, "gen_ai.token.type": kind})

    def _timed(self, attributes: dict[str, str], record: RequestRecord) -> None:
        """The stream's time to first token and time per output token."""
        if record.first_text_at is None:
            return
        self._first_token.record(record.first_text_at - record.started, attributes)
        tokens = record.completion_tokens
        if tokens is not None and tokens > 1:
            self._per_token.record((record.last_text_at - record.first_text_at) / (tokens - 1), attributes)

    def _set_span(self, attributes: dict[str, str], record: RequestRecord, failed: str | None) -> None:
        from opentelemetry import trace

        span = trace.get_current_span()
        if not span.is_recording():
            return
        span.set_attributes(attributes)
        span.set_attribute("gen_ai.system", PROVIDER)
        if record.prompt_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", record.prompt_tokens)
        if record.completion_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", record.completion_tokens)
        if record.finish_reasons:
            span.set_attribute("gen_ai.response.finish_reasons", record.finish_reasons)
        if failed is not None:
            span.set_attribute("error.type", failed)

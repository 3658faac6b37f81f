"""Log output for `parsegate serve`: `text` lines for people, or `json`,
one object per line, for log pipelines.

Every request gives one `parsegate.access` line (gateway/observe.py) with
its fields: request_id, method, path, status, model, stream, duration_ms,
ttft_ms, prompt_tokens, completion_tokens, upstream_error, client. In
JSON they are keys of the object; in text, `key=value` pairs after the
message. uvicorn's own access log is replaced by this one.
"""

from __future__ import annotations

import logging

from pythonjsonlogger.core import RESERVED_ATTRS
from uvicorn.logging import DefaultFormatter

ACCESS_FIELDS = (
    "request_id",
    "model",
    "stream",
    "duration_ms",
    "ttft_ms",
    "prompt_tokens",
    "completion_tokens",
    "upstream_error",
    "client",
)


class TextFormatter(DefaultFormatter):
    """uvicorn's `INFO:     message`, then the record's request fields as `key=value`."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        pairs = [f"{key}={getattr(record, key)}" for key in ACCESS_FIELDS if getattr(record, key, None) is not None]
        return " ".join([line, *pairs])


def logging_config(log_format: str) -> dict:
    """A `logging.config.dictConfig` for uvicorn's `log_config`: the gateway's
    and uvicorn's loggers, all in `log_format`, to stderr."""
    formatter: dict[str, object]
    if log_format == "json":
        formatter = {
            "()": "pythonjsonlogger.orjson.OrjsonFormatter",
            "fmt": "%(levelname)s %(name)s %(message)s",
            "rename_fields": {"levelname": "level", "name": "logger"},
            "timestamp": "time",  # ISO 8601, UTC
            "reserved_attrs": [*RESERVED_ATTRS, "color_message"],  # uvicorn's ANSI copy of the message
        }
    else:
        formatter = {"()": TextFormatter, "fmt": "%(levelprefix)s %(message)s"}
    handler = {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"}
    logger = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {"default": handler},
        "loggers": {"uvicorn": logger, "uvicorn.error": {"level": "INFO"}, "parsegate": logger},
    }

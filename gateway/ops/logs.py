"""Log output for `parsegate serve`: `text` lines for people, or `json`,
one object per line, for log pipelines.

Every request gives one `parsegate.access` line (gateway/observe.py) with
its fields: request_id, method, path, status, model, stream, duration_ms,
ttft_ms, prompt_tokens, completion_tokens, upstream_error, cut, client. In
JSON they are keys of the object; in text, `key=value` pairs after the
message. uvicorn's own access log is replaced by this one.

Every configured secret (backend and client keys) is masked in every line,
tracebacks included: `create_app` and a reload call `redact_in_logs`.
"""

from __future__ import annotations

import logging
import traceback
from contextvars import ContextVar

from pythonjsonlogger.core import RESERVED_ATTRS
from uvicorn.logging import DefaultFormatter

from gateway.ops.secrets import Secrets

ACCESS_FIELDS = (
    "request_id",
    "model",
    "stream",
    "duration_ms",
    "ttft_ms",
    "prompt_tokens",
    "completion_tokens",
    "upstream_error",
    "cut",
    "client",
)


_logged_secrets = [Secrets()]  # every secret of the configs loaded in this process


def redact_in_logs(secrets: Secrets) -> None:
    """From now on, `secrets` are masked in the log lines (with those before)."""
    _logged_secrets[0] = _logged_secrets[0] | secrets


class SecretFilter(logging.Filter):
    """Masks the configured secrets in a record: its message, its string
    fields and its traceback, before any formatter sees it. Without
    `secrets`, those given to `redact_in_logs`."""

    def __init__(self, secrets: Secrets | None = None) -> None:
        super().__init__()
        self._secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self._secrets if self._secrets is not None else _logged_secrets[0]
        if not secrets:
            return True
        record.msg, record.args = secrets.redact(record.getMessage()), None
        for key, value in list(vars(record).items()):
            if isinstance(value, str) and key not in ("msg", "name", "levelname", "pathname", "filename"):
                setattr(record, key, secrets.redact(value))
        if record.exc_info:
            record.exc_text = secrets.redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
            record.exc_info = None
        return True


UNFINISHED = "ASGI callable returned without completing response."  # uvicorn's error line
# Set in a request's context when the gateway leaves its response
# unfinished on purpose (a client that reads nothing has its stream cut,
# api/sse.py, and logs why): the server then closes the connection, and
# its error line for it is dropped.
left_unfinished: ContextVar[bool] = ContextVar("left_unfinished", default=False)


class UnfinishedOnPurpose(logging.Filter):
    """Drops uvicorn's error line for a response left unfinished on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == UNFINISHED and left_unfinished.get())


def quiet_unfinished_on_purpose() -> None:
    """Install `UnfinishedOnPurpose` on uvicorn's error logger (once)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(installed, UnfinishedOnPurpose) for installed in logger.filters):
        logger.addFilter(UnfinishedOnPurpose())


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
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "default",
        "filters": ["secrets"],
        "stream": "ext://sys.stderr",
    }
    logger = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "filters": {"secrets": {"()": SecretFilter}},
        "handlers": {"default": handler},
        "loggers": {"uvicorn": logger, "uvicorn.error": {"level": "INFO"}, "parsegate": logger},
    }

"""The configured secrets (backend keys and client keys), and their
redaction from anything the gateway writes: error bodies, relayed or its
own, streamed or not, and log lines.

Redaction runs on whole texts, before any truncation, so a key cut in two
by a length limit can never leave a prefix behind.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from gateway.ops.backend_config import BackendConfig
from gateway.ops.config import Config

MASK = "***"


class Secrets:
    """A set of secret strings; `redact` masks every occurrence of each."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so that a key containing another is masked whole.
        self._secrets = sorted({secret for secret in secrets if secret}, key=len, reverse=True)

    @classmethod
    def of(cls, config: Config) -> Secrets:
        """Every client key in `config`, the seal key, and every backend's secrets."""
        server = config.server
        backends = (secret for model in config.models for secret in backend_secrets(model.backend))
        seal_keys = [*([server.seal_key] if server.seal_key else []), *server.previous_seal_keys]
        return cls([*server.api_keys, *seal_keys, *backends])

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __or__(self, other: Secrets) -> Secrets:
        return Secrets([*self._secrets, *other._secrets])

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def redact_all(self, value: object) -> object:
        """`value` (a JSON value) with every string in it redacted, keys included."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(str(key)): self.redact_all(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.redact_all(item) for item in value]
        return value


def backend_secrets(backend: BackendConfig) -> list[str]:
    """A backend's key and the credentials in its URLs
    (`http://user:password@host`): the password as written and decoded,
    and the `Authorization: Basic` value the client makes of them, which a
    backend's error may quote with its request's headers."""
    secrets = [backend.api_key]
    for url in backend.base_urls:
        parts = urlsplit(url)
        if parts.username is None:
            continue
        password = parts.password or ""
        secrets += [password, unquote(password), *_basic_credentials(unquote(parts.username), unquote(password))]
    return [secret for secret in secrets if secret]


def _basic_credentials(user: str, password: str) -> list[str]:
    """`user:password` in base64 (RFC 7617), as aiohttp encodes it (Latin-1)
    and as UTF-8, the charset RFC 7617 lets a server ask for."""
    pair = f"{user}:{password}"
    encodings = ("latin-1", "utf-8")
    return [base64.b64encode(pair.encode(encoding)).decode() for encoding in encodings if _encodes(pair, encoding)]


def _encodes(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True

"""A compaction item's `encrypted_content` (docs/agents.md#compaction),
and a reasoning item's (`include: ["reasoning.encrypted_content"]`,
docs/agents.md#reasoning-a-client-keeps): the text sealed with the
server's key (`server.seal_key`, an HMAC-SHA256 over it and its kind), so
a client can read it and cannot forge or change it, nor pass one kind off
as the other. A `compaction` item in a later request's input is expanded
back into the summary, as a user message, a `reasoning` item into the
assistant's reasoning; one this key did not seal is a 400.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

import orjson

from gateway.ops.errors import ApiError

SEAL_PREFIX = "pgc1."  # parsegate compaction, version 1
EXPANDED_HEADING = "A summary of the conversation before this point (it was compacted):"


class Seal:
    """Signs summaries with the server's key, and checks them."""

    def __init__(self, key: str | None) -> None:
        self._key = (key or secrets.token_hex(32)).encode()

    def seal(self, text: str, kind: str = "summary") -> str:
        """`text` sealed as a `kind` ("summary": a compaction's; "reasoning")."""
        body = base64.urlsafe_b64encode(orjson.dumps({kind: text})).decode()
        return f"{SEAL_PREFIX}{body}.{self._mac(body)}"

    def unseal(self, sealed: object, where: str, kind: str = "summary") -> str:
        """The `kind` of text `sealed` holds; a 400 naming `where` unless this key sealed it as that kind."""
        if isinstance(sealed, str) and sealed.startswith(SEAL_PREFIX) and sealed.count(".") == 2:
            body, mac = sealed[len(SEAL_PREFIX) :].split(".")
            if hmac.compare_digest(mac, self._mac(body)):
                try:
                    text = orjson.loads(base64.urlsafe_b64decode(body))[kind]
                except (binascii.Error, orjson.JSONDecodeError, KeyError, TypeError):
                    text = None
                if isinstance(text, str):
                    return text
        item = "a compaction item" if kind == "summary" else "a reasoning item's encrypted_content"
        message = (
            f"{where}.encrypted_content was not sealed by this gateway (or its server.seal_key has changed since): "
            f"{item} is expanded only by the gateway that made it"
        )
        raise ApiError(400, message, param=f"{where}.encrypted_content")

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()


def expanded(seal: Seal, item: dict, where: str) -> dict:
    """A `compaction` input item as the user message the model reads."""
    return {"role": "user", "content": f"{EXPANDED_HEADING}\n\n{seal.unseal(item.get('encrypted_content'), where)}"}

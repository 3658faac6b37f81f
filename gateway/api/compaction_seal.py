"""A compaction item's `encrypted_content` (docs/agents.md#compaction),
and a reasoning item's (`include: ["reasoning.encrypted_content"]`,
docs/agents.md#reasoning-a-client-keeps): the text sealed with the
server's key (`server.seal_key`, an HMAC-SHA256 over it and its kind), so
a client can read it and cannot forge or change it, nor pass one kind off
as the other. A `compaction` item in a later request's input is expanded
back into the summary, as a user message, a `reasoning` item into the
assistant's reasoning; one that neither this key nor one of
`server.previous_seal_keys` sealed is a 400. Items read back from the
store were checked when they were stored (or made here), and are expanded
without checking again: a changed key never breaks a stored session.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Sequence

import orjson

from gateway.ops.errors import ApiError

SEAL_PREFIX = "pgc1."  # parsegate compaction, version 1
COMPACTION_TRIGGER = "compaction_trigger"  # Codex's request for a compaction (compaction.py)
EXPANDED_HEADING = "A summary of the conversation before this point (it was compacted):"


class Seal:
    """Signs summaries with the server's key, and checks them."""

    def __init__(self, key: str | None, previous: Sequence[str] = ()) -> None:
        self._key = (key or secrets.token_hex(32)).encode()
        self._keys = [self._key, *(key.encode() for key in previous)]  # what unseals: the key, then the ones before

    def seal(self, text: str, kind: str = "summary") -> str:
        """`text` sealed as a `kind` ("summary": a compaction's; "reasoning")."""
        body = base64.urlsafe_b64encode(orjson.dumps({kind: text})).decode()
        return f"{SEAL_PREFIX}{body}.{_mac(self._key, body)}"

    def unseal(self, sealed: object, where: str, kind: str = "summary", checked: bool = True) -> str:
        """The `kind` of text `sealed` holds; a 400 naming `where` unless the
        key or a previous one sealed it as that kind (`checked=False`: one
        read back from the store, checked when it was stored)."""
        if isinstance(sealed, str) and sealed.startswith(SEAL_PREFIX) and sealed.count(".") == 2:
            body, mac = sealed[len(SEAL_PREFIX) :].split(".")
            if not checked or any(hmac.compare_digest(mac, _mac(key, body)) for key in self._keys):
                try:
                    text = orjson.loads(base64.urlsafe_b64decode(body))[kind]
                except (binascii.Error, orjson.JSONDecodeError, KeyError, TypeError):
                    text = None
                if isinstance(text, str):
                    return text
        item = "a compaction item" if kind == "summary" else "a reasoning item's encrypted_content"
        message = (
            f"{where}.encrypted_content was not sealed by this gateway (or by a key it no longer has: "
            f"server.seal_key, server.previous_seal_keys): {item} is expanded only by the gateway that made it"
        )
        raise ApiError(400, message, param=f"{where}.encrypted_content")


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def expanded(seal: Seal, item: dict, where: str, stored: bool = False) -> dict:
    """A `compaction` item as the user message the model reads (`stored`: read back from the store)."""
    summary = seal.unseal(item.get("encrypted_content"), where, checked=not stored)
    return {"role": "user", "content": f"{EXPANDED_HEADING}\n\n{summary}"}


def compacted_from(history: list[dict]) -> int:
    """Where the stored history the model reads starts: at its last
    `compaction` item, which stands for the items before it
    (docs/agents.md#compaction); at its start when it holds none."""
    return max((index for index, item in enumerate(history) if item.get("type") == "compaction"), default=0)

"""Wire record of GET /v0/keys/self."""

from __future__ import annotations

import msgspec


class KeyInfo(msgspec.Struct, kw_only=True):
    """The calling key: never its secret."""

    key_id: str
    org_id: str
    scopes: list[str]

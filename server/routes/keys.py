"""GET /v0/keys/self: what the calling key is (org and scopes), so a client such as the inspector can
offer only what the key may do. Any valid key may ask; the secret is never returned."""

from __future__ import annotations

from typing import Any

from litestar import Request, get

from server.auth import principal_of, require_key
from server.http import error_responses
from server.schemas.keys import KeyInfo


@get(
    "/v0/keys/self",
    operation_id="getOwnKey",
    tags=["keys"],
    sync_to_thread=False,
    summary="The calling API key: its id, org and scopes",
    guards=[require_key],
    responses=error_responses(401, 429, 500),
)
def own_key(request: Request[Any, Any, Any]) -> KeyInfo:
    who = principal_of(request)
    return KeyInfo(key_id=who.key_id, org_id=who.org_id, scopes=list(who.scopes))


ROUTES = [own_key]

"""Tags the adapters file their memories under: exact filters that `GET /v0/memories` and prune answer."""

from __future__ import annotations

import hashlib

MAX_TAG_LENGTH = 64  # the API's limits: characters in a tag, tags on a memory
MAX_TAGS = 64


def scope_tag(prefix: str, text: str) -> str:
    """`prefix + text` when it fits in a tag, else `prefix + "#" + a digest of text` (a readable tag never
    starts with "#", so the two forms cannot collide)."""
    tag = prefix + text
    if len(tag) <= MAX_TAG_LENGTH and not text.startswith("#"):
        return tag
    return prefix + "#" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]

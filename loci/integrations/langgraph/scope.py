"""Where a LangGraph item lives in Loci, and back (docs/integrations.md, "LangGraph store").

- org: the API key's; Loci namespace: the store's (`LociStore(namespace=...)`, default "default");
- entity_id: the LangGraph namespace's labels joined by "." (LangGraph forbids "." in a label, so the entity
  splits back into the tuple): ("memories", "alice") is entity "memories.alice";
- one `note` memory per item: its text is the item's indexed fields (what Loci ranks), its metadata
  ["langgraph"] holds the namespace, key, value and creation time (what the store returns);
- an item put with `index=False`, or with no indexed field or only blank ones (the API refuses a blank
  text), is as live a memory as any other (its text is the value as JSON) with
  metadata["langgraph"]["indexed"] false: the store's query leaves it out. It is never archived: Loci's
  archive means retired, and a prune of archived memories deletes them. Earlier versions stored such items
  archived; those are still read, listed and updated (the update is stored live);
- tags, exact filters of GET /v0/memories: "langgraph" on every item, the key's, one "lg-in:" per prefix of
  the namespace (the item is in it or below) and one "lg-below:" per proper prefix (strictly below it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec
from langgraph.store.base import InvalidNamespaceError, Item, SearchItem, get_text_at_path

from loci.client import Memory, MemoryCreate
from loci.integrations.tags import MAX_TAGS, scope_tag
from loci.integrations.texts import fit
from loci.wire.models import MAX_TEXT_LENGTH, is_blank

ITEM_TAG = "langgraph"
METADATA_KEY = "langgraph"
MAX_ENTITY_LENGTH = 256  # the API's limit on an entity_id
MAX_DEPTH = (MAX_TAGS - 1) // 2  # an item has 2 * depth + 1 tags (see tags_of)


class Stored(msgspec.Struct, kw_only=True, omit_defaults=True):
    """metadata["langgraph"] of an item's memory."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    indexed: bool = True  # False: the store's query leaves the item out (written only when False)


def entity_of(namespace: Sequence[str]) -> str:
    return ".".join(namespace)


def namespace_of(entity_id: str) -> tuple[str, ...]:
    return tuple(entity_id.split("."))


def key_tag(key: str) -> str:
    return scope_tag("lg-key:", key)


def within_tag(prefix: Sequence[str]) -> str:
    """The tag of every item whose namespace starts with `prefix` (the whole store when it is empty)."""
    return scope_tag("lg-in:", entity_of(prefix)) if prefix else ITEM_TAG


def below_tag(prefix: Sequence[str]) -> str:
    """The tag of every item whose namespace is strictly longer than `prefix` and starts with it."""
    return scope_tag("lg-below:", entity_of(prefix))


def tags_of(namespace: Sequence[str], key: str) -> list[str]:
    depth = len(namespace)
    within = [within_tag(namespace[:k]) for k in range(1, depth + 1)]
    below = [below_tag(namespace[:k]) for k in range(1, depth)]
    return [ITEM_TAG, key_tag(key), *within, *below]


def _entity_problem(namespace: Sequence[str]) -> str | None:
    """Why the entity `namespace` joins to cannot be stored under, or None."""
    entity = entity_of(namespace)
    if len(entity) > MAX_ENTITY_LENGTH:
        return f"LociStore namespaces join to at most {MAX_ENTITY_LENGTH} characters: {namespace}"
    if is_blank(entity):
        return f"LociStore namespaces cannot join to a blank entity_id: {namespace}"
    return None


def check_namespace(namespace: Sequence[str]) -> None:
    """The limits Loci adds to LangGraph's own namespace rules."""
    if len(namespace) > MAX_DEPTH:
        raise InvalidNamespaceError(f"LociStore namespaces have at most {MAX_DEPTH} labels: {namespace}")
    problem = _entity_problem(namespace)
    if problem is not None:
        raise InvalidNamespaceError(problem)


def addressable(namespace: Sequence[str]) -> bool:
    """Whether items can be in `namespace` (check_namespace's limits on its entity): else reads of it by
    entity find nothing without asking the API, which would refuse the entity."""
    return _entity_problem(namespace) is None


def indexed_text(value: Mapping[str, Any], fields: Sequence[str]) -> str:
    """The text Loci ranks: the value's indexed fields (LangGraph's paths; "$" is the whole value as JSON)."""
    texts = [text for field in fields for text in get_text_at_path(value, field)]
    return fit("\n".join(texts), MAX_TEXT_LENGTH)


def draft_of(
    namespace: Sequence[str],
    key: str,
    value: Mapping[str, Any],
    *,
    loci_namespace: str,
    fields: Sequence[str] | None,
    created_at: datetime,
    now: datetime,
) -> MemoryCreate:
    """The memory of one version of an item; `fields=None` (LangGraph's `index=False`) or no indexed field
    in the value, or only blank ones, stores it unindexed: live, kept and listed, left out of the store's
    query. Dates, times and UUIDs are stored as strings, as LangGraph's PostgreSQL store keeps them."""
    plain: dict[str, Any] = msgspec.to_builtins(dict(value))
    text = indexed_text(plain, fields or ())
    stored = Stored(
        namespace=list(namespace), key=key, value=plain, created_at=created_at, indexed=not is_blank(text)
    )
    if not stored.indexed:  # nothing to rank (the API refuses a blank text): keep the value readable instead
        text = fit(json.dumps(plain, sort_keys=True, ensure_ascii=False), MAX_TEXT_LENGTH)
    return MemoryCreate(
        namespace=loci_namespace,
        entity_id=entity_of(namespace),
        type="note",
        text=text,
        metadata={METADATA_KEY: msgspec.to_builtins(stored)},
        tags=tags_of(namespace, key),
        timestamp=now,
    )


def stored_of(metadata: Mapping[str, Any]) -> Stored | None:
    """The item a memory's metadata holds; None for a memory the store did not write."""
    raw = metadata.get(METADATA_KEY)
    if raw is None:
        return None
    try:
        return msgspec.convert(raw, Stored, strict=False)
    except msgspec.ValidationError:
        return None


def item_of(memory: Memory) -> Item | None:
    stored = stored_of(memory.metadata)
    if stored is None:
        return None
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=tuple(stored.namespace),
        created_at=stored.created_at,
        updated_at=memory.timestamp,
    )


def search_item_of(item: Item, score: float | None = None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )

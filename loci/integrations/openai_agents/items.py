"""The text of a conversation item as Loci ranks and shows it ("User: ...", "Assistant: ...", "Tool call
name(arguments)", "Tool result: ..."); the item itself is kept whole in the memory's metadata."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from loci.integrations.texts import fit
from loci.wire.models import MAX_TEXT_LENGTH


def text_of(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if "role" in item and kind in (None, "message"):
        text = f"{str(item['role']).capitalize()}: {content_text(item.get('content'))}"
    elif kind == "function_call":
        text = f"Tool call {item.get('name')}({item.get('arguments', '')})"
    elif kind == "function_call_output":
        text = f"Tool result: {content_text(item.get('output'))}"
    elif kind == "reasoning":
        text = f"Reasoning: {content_text(item.get('summary'))}"
    else:
        text = json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)
    return fit(text, MAX_TEXT_LENGTH)


def content_text(content: Any) -> str:
    """A message's content as text: a string, or its parts' texts (other parts by their type)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_part_text(part) for part in content)
    return json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)


def _part_text(part: Any) -> str:
    if isinstance(part, Mapping):
        if isinstance(part.get("text"), str):
            return str(part["text"])
        if isinstance(part.get("refusal"), str):
            return str(part["refusal"])
        return f"[{part.get('type', 'part')}]"
    return str(part)

"""`Where`: a WHERE clause built one condition at a time, each with its named parameters, for the
queries whose filters are optional (list_query, list_events, the retrieval scope)."""

from __future__ import annotations

from typing import Any


class Where:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: dict[str, Any] = {}

    def add(self, condition: str, **params: Any) -> Where:
        """AND `condition` (placeholders `%(name)s` for `params`)."""
        self.parts.append(condition)
        self.params.update(params)
        return self

    @property
    def sql(self) -> str:
        return " AND ".join(self.parts)

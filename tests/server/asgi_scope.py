"""The ASGI scope of a plain GET, for tests that drive the app's ASGI callable by hand (an event stream
they hold open, disconnect or stop)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def get_scope(path: str, headers: Mapping[str, str], query: str = "") -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }

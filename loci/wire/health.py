"""Wire record of GET /v0/health."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec


class Health(msgspec.Struct, kw_only=True):
    status: Literal["ok"]
    now: datetime

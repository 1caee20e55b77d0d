"""schemathesis hooks for tests/server/test_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

`positive_data_accepted_or_ruled`: schemathesis' `positive_data_acceptance`, except that a 422 is
accepted when its `details.rule` is one the operation lists in `x-rules` (a rule the OpenAPI document
describes but JSON Schema cannot express, see server.schema_rules). Any other refusal of a
schema-valid request still fails.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance


def _ruled(response: Any, case: Any) -> bool:
    if response.status_code != 422:
        return False
    rules = {r.get("rule") for r in case.operation.definition.raw.get("x-rules", [])}
    try:
        rule = response.json().get("details", {}).get("rule")
    except ValueError:
        return False
    return rule in rules


@schemathesis.check
def positive_data_accepted_or_ruled(ctx: Any, response: Any, case: Any) -> bool | None:
    if _ruled(response, case):
        return None
    return positive_data_acceptance(ctx, response, case)

"""schemathesis hooks for tests/server/test_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

`positive_data_accepted_or_ruled`: schemathesis' `positive_data_acceptance`, except that a 422 is
accepted when its `details.rule` is one the operation lists in `x-rules` (a rule the OpenAPI document
describes but JSON Schema cannot express, see server.schema_rules), or when a path parameter breaks
its own schema: the stateful phase fills path parameters from earlier responses by name (an extracted
entity's `type` "quantity" as mem0's `entity_type`, whose enum is user/agent/app/run), so such a
request is no schema-valid one. Any other refusal of a schema-valid request still fails.
"""

from __future__ import annotations

from typing import Any

import jsonschema
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


def _path_breaks_its_schema(case: Any) -> bool:
    values = case.path_parameters or {}
    for parameter in case.operation.path_parameters:
        schema = parameter.definition.get("schema", {})
        checked = parameter.name in values and "$ref" not in str(schema)
        if checked and not jsonschema.Draft202012Validator(schema).is_valid(values[parameter.name]):
            return True
    return False


@schemathesis.check
def positive_data_accepted_or_ruled(ctx: Any, response: Any, case: Any) -> bool | None:
    if _ruled(response, case) or (response.status_code == 422 and _path_breaks_its_schema(case)):
        return None
    return positive_data_acceptance(ctx, response, case)

"""The request's redaction policy and the report a response carries.

`RedactionPolicy` mirrors the API's `policy` object (`pii_redaction`, `egress_rehydration`).
`RedactionReport` is the API's Redaction (`applied`, `rules`) plus `placeholders` (placeholder ->
original value), present only when `egress_rehydration="allowed"`; encoded with `omit_defaults`, so
the key is absent otherwise and original values never leave under `none`.
"""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.redact import (  # isort: skip
    EgressRehydration as EgressRehydration,
    PiiRedaction as PiiRedaction,
    RedactionPolicy as RedactionPolicy,
    RedactionReport as RedactionReport,
)

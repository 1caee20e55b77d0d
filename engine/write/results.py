"""What a write reports, per item and per turn (the assemble response's `extracted`)."""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.results import (  # isort: skip
    Extracted as Extracted,
    Upsert as Upsert,
)

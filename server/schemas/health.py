"""Wire record of GET /v0/health."""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.health import (  # isort: skip
    Health as Health,
)

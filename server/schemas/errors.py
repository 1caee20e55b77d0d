"""The error envelope every error response carries (and the mem0 adapter's variant of it)."""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.errors import (  # isort: skip
    ErrorBody as ErrorBody,
    Mem0ErrorBody as Mem0ErrorBody,
    as_mem0 as as_mem0,
)

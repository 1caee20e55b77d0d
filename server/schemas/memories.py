"""Wire records of the /v0/memories routes."""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.memories import (  # isort: skip
    Deleted as Deleted,
    ErrorBody as ErrorBody,
    Memory as Memory,
    MemoryBatch as MemoryBatch,
    MemoryCreate as MemoryCreate,
    MemoryItems as MemoryItems,
    MemoryList as MemoryList,
    MemoryPatch as MemoryPatch,
)

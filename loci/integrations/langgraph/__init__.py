"""A LangGraph store on Loci: `from loci.integrations.langgraph import LociStore` (extra `langgraph`).

    store = LociStore()  # $LOCI_URL, $LOCI_API_KEY
    graph = builder.compile(store=store)

Mapping, what works and what does not: docs/integrations.md, "LangGraph store".
"""

from loci.integrations.extras import missing_extra

try:
    import langgraph.store.base  # noqa: F401
except ImportError as exc:
    raise missing_extra("loci.integrations.langgraph", "langgraph", exc) from exc

from loci.integrations.langgraph.store import LociStore  # noqa: E402

__all__ = ["LociStore"]

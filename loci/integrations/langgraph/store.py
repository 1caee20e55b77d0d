"""`LociStore`: a LangGraph `BaseStore` whose items are Loci memories (the mapping: `scope`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import TracebackType

from langgraph.store.base import BaseStore, Op, Result

from loci.client import AsyncLociClient, LociClient
from loci.integrations import plans
from loci.integrations.langgraph import operations


class LociStore(BaseStore):
    """A LangGraph store on a running Loci: `LociStore(base_url, api_key)`, from $LOCI_URL and
    $LOCI_API_KEY when omitted. The key needs the read and write scopes.

    - `namespace`: the Loci namespace that holds every item (default "default");
    - `index_fields`: the value's paths Loci ranks a query against (LangGraph's path syntax; "$", the
      default, is the whole value as JSON); `put(..., index=[...])` overrides them for one item and
      `index=False` keeps an item out of query results (stored live, marked unindexed; never archived);
    - `client` / `async_client`: clients of your own (retry policy, timeouts, transport).

    Use one store from one event loop at a time (its async client's connections belong to that loop).
    TTLs are not supported.
    """

    supports_ttl = False

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        namespace: str = "default",
        index_fields: Sequence[str] = ("$",),
        client: LociClient | None = None,
        async_client: AsyncLociClient | None = None,
    ) -> None:
        self.config = operations.Config(namespace=namespace, fields=tuple(index_fields))
        self.client = client or LociClient(base_url, api_key)
        self.async_client = async_client or AsyncLociClient(base_url, api_key)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return plans.run(operations.batch(ops, self.config), self.client)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await plans.arun(operations.batch(ops, self.config), self.async_client)

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        self.client.close()
        await self.async_client.aclose()

    def __enter__(self) -> LociStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> LociStore:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

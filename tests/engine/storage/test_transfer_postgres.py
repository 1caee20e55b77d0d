"""Export/import between SQLite and PostgreSQL, both ways, exactly (a real server: `integration`)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from engine.errors import Conflict, InvalidInput
from engine.storage import open_store
from engine.storage.base import Store
from engine.storage.transfer import export_org, import_org
from tests.engine.storage.transfer_data import MODEL, ORG, OTHER, T0, fill, org_memories, snapshot
from tests.pg_fixture import pg_database, pg_server

pytestmark = pytest.mark.integration
__all__ = ["pg_database", "pg_server"]  # fixtures used by name below


def dump(store: Store, org: str = ORG) -> bytes:
    out = io.BytesIO()
    export_org(store, org, out, models=[MODEL], with_keys=True, now=T0)
    return out.getvalue()


def test_sqlite_to_postgres_to_sqlite_is_exact(tmp_path: Path, pg_database: str) -> None:
    a = open_store(f"sqlite://{tmp_path / 'a.db'}")
    pg = open_store(pg_database)
    b = open_store(f"sqlite://{tmp_path / 'b.db'}")
    try:
        fill(a)
        first = dump(a)
        import_org(pg, io.BytesIO(first), batch_size=4)
        assert dump(pg) == first  # byte for byte: every field, int/float/bool, microseconds, order
        assert snapshot(pg) == snapshot(a) and pg.count_memories(OTHER) == 0
        got = {m.memory_id: m for m in pg.get_memories(ORG, [m.memory_id for m in org_memories()])}
        for want in org_memories():
            assert got[want.memory_id] == want and type(got[want.memory_id].object) is type(want.object)
        # idempotent on PostgreSQL too
        import_org(pg, io.BytesIO(first))
        assert dump(pg) == first and pg.count_memories(ORG) == 10
        # and back
        import_org(b, io.BytesIO(dump(pg)), batch_size=0)
        assert dump(b) == first and snapshot(b) == snapshot(a)
    finally:
        for s in (a, pg, b):
            s.close()


def test_a_cut_file_and_a_key_conflict_change_nothing_on_postgres(tmp_path: Path, pg_database: str) -> None:
    """In batches of 2, the memories ahead of the cut (or of the conflicting key) were committed."""
    a = open_store(f"sqlite://{tmp_path / 'a.db'}")
    pg = open_store(pg_database)
    try:
        fill(a)
        lines = dump(a).splitlines(keepends=True)
        first_event = next(i for i, line in enumerate(lines) if b'"kind":"event"' in line)
        with pytest.raises(InvalidInput, match="header says"):
            import_org(pg, io.BytesIO(b"".join(lines[:first_event])), batch_size=2)
        assert pg.org_ids() == [] and pg.embedding_models() == []
        import_org(pg, io.BytesIO(b"".join(lines)), batch_size=2)
        before = snapshot(pg)
        with pytest.raises(Conflict, match="of org 'acme'"):
            import_org(pg, io.BytesIO(b"".join(lines)), org_id="copy", batch_size=2)
        assert "copy" not in pg.org_ids() and snapshot(pg) == before
    finally:
        a.close()
        pg.close()

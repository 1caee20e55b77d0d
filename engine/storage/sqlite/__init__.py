"""The embedded SQLite store, the default backend (stdlib sqlite3, WAL, no set-up).

Modules: `store` (SQLiteStore, the class), `schema` (migrations by PRAGMA user_version), `codec`
(Memory records <-> rows). `store.search` is the local search of `engine.storage.local_index`.
"""

from engine.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]

"""The cluster store: PostgreSQL through psycopg 3 (``pip install 'cronwheel[postgres]'``)."""

from cronwheel.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]

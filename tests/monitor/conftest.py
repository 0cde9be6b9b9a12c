"""Stores to test on: an SQLite file, and a PostgreSQL schema when a server is given.

``BAYEVAL_TEST_POSTGRES_URL`` names a PostgreSQL database (``.ci/run`` starts a throwaway
server and sets it); each test gets a schema of its own there, dropped afterwards. Without it
the PostgreSQL cases are skipped, unless ``BAYEVAL_REQUIRE_POSTGRES=1`` (set by ``.ci/run``),
which makes them fail instead.
"""

import os
import uuid

import pytest

BACKENDS = ["sqlite", "postgres"]


def _postgres_base() -> str:
    url = os.environ.get("BAYEVAL_TEST_POSTGRES_URL")
    required = os.environ.get("BAYEVAL_REQUIRE_POSTGRES") == "1"
    problem = None
    if not url:
        problem = "BAYEVAL_TEST_POSTGRES_URL is not set (no PostgreSQL server to test on)"
    else:
        try:
            import psycopg  # noqa: F401
            import sqlalchemy  # noqa: F401
        except ImportError as err:
            problem = f"bayeval[postgres] is not installed ({err})"
    if problem:
        if required:
            pytest.fail(f"BAYEVAL_REQUIRE_POSTGRES=1 but {problem}")
        pytest.skip(problem)
    return url


@pytest.fixture(params=BACKENDS)
def location(request, tmp_path):
    """Where a fresh, empty store lives: an SQLite file or a PostgreSQL schema's URL."""
    if request.param == "sqlite":
        yield str(tmp_path / "run.db")
        return
    text = _postgres_base()
    import sqlalchemy as sa

    base = sa.engine.make_url(text)
    schema = f"test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = base.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


@pytest.fixture
def raw_sql():
    """Run one statement on a store's database directly (to set up a state to test)."""
    return _raw_sql


def _raw_sql(location: str, sql: str) -> list:
    if "://" not in location:
        import sqlite3

        conn = sqlite3.connect(location, isolation_level=None)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    import sqlalchemy as sa

    engine = sa.create_engine(location)
    try:
        with engine.begin() as conn:
            result = conn.exec_driver_sql(sql)
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engine.dispose()

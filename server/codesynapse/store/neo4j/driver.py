"""The Neo4j connection pieces both Neo4j stores (graph and memory) use: URI check, schema
creation, the driver's error types and their translation into the store's errors."""

from __future__ import annotations

import re
from collections.abc import Sequence

from codesynapse.errors import StoreError, StoreUnavailable


def translate_error(e: Exception, what: str) -> StoreError:
    from neo4j import exceptions as nx

    msg = f"neo4j {what} failed: {e.__class__.__name__}: {e}"
    code = getattr(e, "code", "") or ""
    if isinstance(e, (nx.ServiceUnavailable, nx.SessionExpired, nx.ConnectionAcquisitionTimeoutError,
                      nx.TransientError, nx.DatabaseUnavailable)):
        return StoreUnavailable(msg)
    if "TransactionTimedOut" in code or "Timeout" in code:
        return StoreUnavailable(msg)
    if isinstance(e, nx.AuthError):
        return StoreError(f"neo4j {what}: authentication failed (check CODESYNAPSE_NEO4J_USER/_PASSWORD): {e}")
    return StoreError(msg)


BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def check_uri(uri: str) -> None:
    """Only Bolt URIs with a host: ``bolt://`` (one server) or ``neo4j://`` (routing)."""
    from urllib.parse import urlsplit

    if not uri:
        raise StoreError("the neo4j backend needs a URI (CODESYNAPSE_NEO4J_URI, e.g. bolt://host:7687)")
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError as e:
        raise StoreError(f"invalid neo4j URI {uri!r}: {e}") from e
    if parts.scheme not in BOLT_SCHEMES or not host:
        raise StoreError(f"invalid neo4j URI {uri!r}: expected {' or '.join(BOLT_SCHEMES[::3])}://host[:port] "
                         f"(schemes: {', '.join(BOLT_SCHEMES)})")


def ensure_schema(driver, database: str | None, statements: Sequence[str]) -> int:
    """Create the named constraints and indexes that do not exist yet (one ``SHOW`` round
    trip when all do); wait for new indexes to come online. Returns how many were created."""
    from neo4j.exceptions import ClientError

    existing = {rec["name"] for q in ("SHOW CONSTRAINTS YIELD name", "SHOW INDEXES YIELD name")
                for rec in driver.execute_query(q, database_=database).records}
    created = 0
    for stmt in statements:
        m = re.match(r"CREATE (?:FULLTEXT )?(?:CONSTRAINT|INDEX) (\w+) IF NOT EXISTS", stmt)
        if m is None or m.group(1) in existing:
            continue
        try:
            driver.execute_query(stmt, database_=database)
            created += 1
        except ClientError as e:  # another process created the same rule meanwhile
            if "EquivalentSchemaRuleAlreadyExists" not in (e.code or "") and "already exists" not in str(e):
                raise
    if created:
        driver.execute_query("CALL db.awaitIndexes(300)", database_=database)
    return created


def driver_errors() -> tuple[type[BaseException], ...]:
    from neo4j import exceptions as nx

    return (nx.Neo4jError, nx.DriverError)



"""The store contract (tests/store/contract.py) on both backends: SQLiteStore and a real PostgreSQL."""

from tests.store.contract import StoreContract


class TestStoreContract(StoreContract):
    """Runs once per backend of the ``store_factory`` fixture (tests/conftest.py): sqlite, postgres."""

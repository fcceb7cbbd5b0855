"""The store contract by role: each module holds one ABC, ``store.base.Store`` their union."""

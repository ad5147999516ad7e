//! The enforcement part of the SQLite backend.

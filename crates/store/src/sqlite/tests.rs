//! Unit tests of the SQLite backend.

//! The conditions part of the SQLite backend.

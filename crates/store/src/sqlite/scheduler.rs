//! The scheduler part of the SQLite backend.

//! The channels part of the SQLite backend.

//! Opening the store from the environment, and the clock, for the command hook (and the
//! binary's operator subcommands).

/// Opens the store the environment selects (`store::open_from_env`). Without `create`, a
/// missing store is [`store::StoreError::Missing`] (the hook treats that as "nothing to
/// deliver").
pub fn store_from_env(
    create: bool,
) -> Result<(store::StoreHandle, store::Opened), store::StoreError> {
    store::open_from_env(create)
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

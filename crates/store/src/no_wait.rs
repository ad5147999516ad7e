//! Store calls that must not wait: a server running a read-only tool call on its async thread
//! asks the store to answer only what it can answer at once.
//!
//! Inside [`try_without_waiting`], a backend that would have to wait (for a lock, a
//! connection, the network) refuses the call with [`StoreError::WouldWait`] instead, and the
//! whole closure's result is discarded: the caller runs it again where waiting is fine (a
//! blocking thread). Only closures without side effects outside the store belong here, since
//! they may run twice. The SQLite backend answers reads on a connection of their own; writes,
//! and every PostgreSQL call, always refuse.

use std::cell::Cell;

use crate::StoreError;

thread_local! {
    /// Inside `try_without_waiting` on this thread.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// A store call refused during the current `try_without_waiting`.
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every store call on this thread answering at once or refusing. Returns `None`
/// when some call refused (run `f` again where it may wait); `f`'s result otherwise.
pub fn try_without_waiting<T>(f: impl FnOnce() -> T) -> Option<T> {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
        }
    }
    let outer = ACTIVE.with(|a| a.replace(true));
    let _reset = Reset(outer);
    REFUSED.with(|r| r.set(false));
    let value = f();
    (!REFUSED.with(Cell::take)).then_some(value)
}

/// Whether store calls on this thread must not wait.
pub(crate) fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// Records that a call refused, and the error it returns.
pub(crate) fn refuse() -> StoreError {
    REFUSED.with(|r| r.set(true));
    StoreError::WouldWait
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_discards_the_result_and_the_mode_ends_with_the_closure() {
        assert!(!active());
        assert_eq!(try_without_waiting(active), Some(true));
        let refused = try_without_waiting(|| {
            let _ = refuse();
            7
        });
        assert_eq!(refused, None);
        assert!(!active(), "the mode ends with the closure");
        assert_eq!(
            try_without_waiting(|| 8),
            Some(8),
            "a refusal does not stick"
        );
    }
}

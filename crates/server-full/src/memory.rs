//! Handing back what a burst of work freed, once a stdio session goes quiet.
//!
//! glibc's allocator keeps the memory a process freed (the start-up's peak: the registry being
//! built, the store's first reads, a large answer) as dirty pages of its heap, so an idle
//! session would hold its peak for its whole life. `malloc_trim(0)` gives every whole free page
//! back. The stdio server asks for it once per burst of traffic, when no message went in or out
//! for [`QUIET`] (glibc locks each arena while it walks it, so a call still running is only
//! delayed a little).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// How long a session must be quiet before its freed memory is handed back.
pub(crate) const QUIET: Duration = Duration::from_millis(300);

/// Counts traffic; a task of its own trims once the count stays still for [`QUIET`].
#[derive(Debug)]
pub(crate) struct QuietTrim {
    traffic: Arc<AtomicU64>,
    wake: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl QuietTrim {
    /// Starts the trimming task on the current runtime.
    pub(crate) fn start() -> QuietTrim {
        let traffic = Arc::new(AtomicU64::new(0));
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn(run(traffic.clone(), wake.clone()));
        QuietTrim {
            traffic,
            wake,
            task,
        }
    }

    /// Records traffic (a message read or written): the quiet period starts again.
    pub(crate) fn touch(&self) {
        self.traffic.fetch_add(1, Ordering::Relaxed);
        self.wake.notify_one();
    }
}

impl Drop for QuietTrim {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(traffic: Arc<AtomicU64>, wake: Arc<Notify>) {
    loop {
        wake.notified().await;
        loop {
            let seen = traffic.load(Ordering::Relaxed);
            tokio::time::sleep(QUIET).await;
            if traffic.load(Ordering::Relaxed) == seen {
                release();
                break;
            }
        }
    }
}

/// Keeps every thread's allocations in the main arena. A stdio session allocates on two or
/// three threads, a few kilobytes each: an arena per thread (glibc's default) would keep a
/// partly touched heap of its own for each.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn one_arena() {
    // SAFETY: `mallopt` takes no pointers; it is called before the session starts any thread.
    let _ = unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
}

/// Other allocators: nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn one_arena() {}

/// Asks the allocator to return its whole free pages to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn release() {
    // SAFETY: `malloc_trim` takes no pointers and reads no memory of the caller's; glibc locks
    // each arena while it walks it, so it is safe beside any other allocation.
    let released = unsafe { libc::malloc_trim(0) } == 1;
    tracing::trace!(released, "handed freed memory back to the system");
}

/// Other allocators return free memory themselves: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release() {}

//! Readings of a process from Linux's `/proc`: private dirty memory (`smaps_rollup`), this
//! process's peak resident size (`VmHWM`), threads, open file descriptors and their kinds, CPU
//! time, and a full sample of one process.

use std::collections::BTreeMap;

use anyhow::Context;

/// Clock ticks per second of `/proc/PID/stat`'s times (USER_HZ, 100 on Linux).
pub(crate) const TICKS_PER_SECOND: f64 = 100.0;

/// Private dirty memory of `pid` (`Private_Dirty` of `/proc/PID/smaps_rollup`), in KiB.
pub(crate) fn private_dirty_kib(pid: u32) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .with_context(|| format!("reading /proc/{pid}/smaps_rollup (Linux only)"))?;
    field(&text, "Private_Dirty:")
}

/// Threads of `pid` (`Threads` of `/proc/PID/status`).
pub(crate) fn threads(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    field(&status, "Threads:")
}

/// Context switches of every thread of `pid` so far (voluntary and not): each is a wake-up
/// or a preemption, so their growth over an idle time counts its wake-ups.
pub(crate) fn context_switches(pid: u32) -> anyhow::Result<u64> {
    let dir = format!("/proc/{pid}/task");
    let mut total = 0;
    for task in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
        let path = task?.path().join("status");
        // A thread that ended meanwhile has no status: it no longer wakes.
        let Ok(status) = std::fs::read_to_string(&path) else {
            continue;
        };
        total += field(&status, "voluntary_ctxt_switches:")?;
        total += field(&status, "nonvoluntary_ctxt_switches:")?;
    }
    Ok(total)
}

/// Open file descriptors of `pid` (entries of `/proc/PID/fd`).
pub(crate) fn fds(pid: u32) -> anyhow::Result<u64> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))
        .with_context(|| format!("listing /proc/{pid}/fd"))?
        .count() as u64)
}

/// Writes the page cache back to disk (`sync`): until then a freshly linked binary's pages,
/// mapped into a process, count as its private dirty memory. Figures only: smoke runs skip it.
pub(crate) fn write_back_page_cache() {
    let _ = std::process::Command::new("sync").status();
}

/// This process's own peak resident set (`VmHWM`), in KiB; -1 when unknown.
pub(crate) fn own_peak_rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(-1)
}

/// Whether process `pid` still exists.
pub(crate) fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// What `pid`'s open fds are, by kind (`socket: 3, pipe: 2, /dev/null: 1`...).
pub(crate) fn fd_kinds(pid: u32) -> String {
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for entry in entries.flatten() {
            let target = std::fs::read_link(entry.path())
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            let kind = match target.split_once(':') {
                Some((k, _)) if k == "socket" || k == "pipe" => k.to_owned(),
                _ => target,
            };
            *kinds.entry(kind).or_default() += 1;
        }
    }
    kinds
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// User + system CPU time of every thread of `pid` so far, in clock ticks.
pub(crate) fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat (Linux only)"))?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = text
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("malformed /proc/PID/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> anyhow::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|v| v.parse().ok())
            .context("malformed /proc/PID/stat")
    };
    Ok(field(14)? + field(15)?)
}

/// One reading of `/proc/PID/{smaps_rollup,status,fd}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcSample {
    /// Resident set, KiB.
    pub(crate) rss_kib: u64,
    /// Proportional set (shared pages divided among the processes mapping them), KiB.
    pub(crate) pss_kib: u64,
    /// Private clean pages, KiB.
    pub(crate) private_clean_kib: u64,
    /// Private dirty pages, KiB.
    pub(crate) private_dirty_kib: u64,
    /// Threads.
    pub(crate) threads: u64,
    /// Open file descriptors.
    pub(crate) fds: u64,
}

impl ProcSample {
    /// Reads `pid` now.
    pub(crate) fn take(pid: u32) -> anyhow::Result<ProcSample> {
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .with_context(|| format!("reading /proc/{pid}/smaps_rollup (Linux only)"))?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        ProcSample::parse(&smaps, &status, fds(pid)?)
    }

    /// Reads the fields out of `smaps_rollup` and `status` text.
    pub(crate) fn parse(smaps_rollup: &str, status: &str, fds: u64) -> anyhow::Result<Self> {
        Ok(ProcSample {
            rss_kib: field(smaps_rollup, "Rss:")?,
            pss_kib: field(smaps_rollup, "Pss:")?,
            private_clean_kib: field(smaps_rollup, "Private_Clean:")?,
            private_dirty_kib: field(smaps_rollup, "Private_Dirty:")?,
            threads: field(status, "Threads:")?,
            fds,
        })
    }

    /// Private (clean + dirty) resident memory, MiB.
    pub(crate) fn private_mib(&self) -> f64 {
        (self.private_clean_kib + self.private_dirty_kib) as f64 / 1024.0
    }

    /// Private dirty resident memory, MiB.
    pub(crate) fn private_dirty_mib(&self) -> f64 {
        self.private_dirty_kib as f64 / 1024.0
    }

    /// Resident set, MiB.
    pub(crate) fn rss_mib(&self) -> f64 {
        self.rss_kib as f64 / 1024.0
    }

    /// Proportional set, MiB.
    pub(crate) fn pss_mib(&self) -> f64 {
        self.pss_kib as f64 / 1024.0
    }
}

/// The number after `name` on its line (`Rss:   1234 kB`).
fn field(text: &str, name: &str) -> anyhow::Result<u64> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .with_context(|| format!("no `{name}` line in /proc output"))?;
    let number = line.split_whitespace().next().unwrap_or("");
    number
        .parse()
        .with_context(|| format!("`{name}` is not a number: {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::ProcSample;

    #[test]
    fn proc_sample_reads_smaps_rollup_and_status() {
        let smaps = "55d0-7ffd ---p 00000000 00:00 0 [rollup]\nRss:                1024 kB\n\
                     Pss:                 300 kB\nShared_Clean:        900 kB\n\
                     Private_Clean:        60 kB\nPrivate_Dirty:       104 kB\n";
        let status = "Name:\thooks-mcp\nThreads:\t1\nVmRSS:\t1024 kB\n";
        let s = ProcSample::parse(smaps, status, 4).unwrap();
        assert_eq!(
            (
                s.rss_kib,
                s.private_clean_kib,
                s.private_dirty_kib,
                s.threads,
                s.fds
            ),
            (1024, 60, 104, 1, 4)
        );
        assert_eq!(s.private_mib(), 164.0 / 1024.0);
        let missing = ProcSample::parse("Rss: 1 kB\nPss: 1 kB\n", status, 0).unwrap_err();
        assert!(missing.to_string().contains("Private_Clean"), "{missing}");
    }
}

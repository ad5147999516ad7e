//! Fuzz target `http_sessions`: the check and its invariants are `fuzz_checks::target("http_sessions")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("http_sessions").expect("a known target").check)(data));

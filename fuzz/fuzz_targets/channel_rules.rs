//! Fuzz target `channel_rules`: the check and its invariants are `fuzz_checks::target("channel_rules")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("channel_rules").expect("a known target").check)(data));

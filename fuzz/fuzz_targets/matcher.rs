//! Fuzz target `matcher`: the check and its invariants are `fuzz_checks::target("matcher")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("matcher").expect("a known target").check)(data));

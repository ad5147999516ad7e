//! Fuzz target `light_session`: the check and its invariants are `fuzz_checks::target("light_session")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("light_session").expect("a known target").check)(data));

//! Fuzz target `hook_payload`: the check and its invariants are `fuzz_checks::target("hook_payload")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("hook_payload").expect("a known target").check)(data));

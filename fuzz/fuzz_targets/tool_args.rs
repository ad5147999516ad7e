//! Fuzz target `tool_args`: the check and its invariants are `fuzz_checks::target("tool_args")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("tool_args").expect("a known target").check)(data));

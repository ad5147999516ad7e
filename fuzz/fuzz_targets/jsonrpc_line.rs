//! Fuzz target `jsonrpc_line`: the check and its invariants are `fuzz_checks::target("jsonrpc_line")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("jsonrpc_line").expect("a known target").check)(data));

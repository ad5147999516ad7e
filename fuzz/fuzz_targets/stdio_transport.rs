//! Fuzz target `stdio_transport`: the check and its invariants are `fuzz_checks::target("stdio_transport")`'s (crates/fuzz-checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| (fuzz_checks::target("stdio_transport").expect("a known target").check)(data));

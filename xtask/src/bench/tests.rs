//! Tests of the benchmark helpers (statistics, tool fixtures). Nothing here
//! measures or asserts a timing.

use super::fixtures::ToolBench;
use super::now_ms;
use super::stats::{Summary, nearest_rank, ratio};

#[test]
fn summary_takes_the_middle_and_nearest_ranks() {
    let odd = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
    assert_eq!((odd.n, odd.median, odd.max), (3, 3.0, 5.0));
    let even = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!(even.median, 2.5);
    let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
    let s = Summary::of(&hundred).unwrap();
    assert_eq!((s.p90, s.p99), (90.0, 99.0));
    assert_eq!(nearest_rank(&[7.0], 99.0), 7.0);
    assert!(Summary::of(&[]).is_none());
    assert!(Summary::of(&[1.0, f64::NAN]).is_none());
}

#[test]
fn ratio_of_medians_and_undefined_ratios() {
    let a = Summary::of(&[3.0]);
    let b = Summary::of(&[2.0]);
    assert_eq!(ratio(a, b), "1.50×");
    assert_eq!(ratio(a, Summary::of(&[0.0])), "-");
    assert_eq!(ratio(None, b), "-");
}

#[test]
fn every_registered_tool_has_benchmark_arguments_that_succeed() {
    let bench = ToolBench::new(now_ms()).unwrap();
    let registrations = catalogue::registrations();
    assert!(!registrations.is_empty());
    for registration in registrations {
        let name = registration.name;
        for i in 0..2 {
            let now = now_ms();
            let args = bench.args(name, i, now).unwrap();
            let result = catalogue::call(name, &bench.context(now), args);
            assert!(result.is_ok(), "{name} (iteration {i}): {result:?}");
        }
    }
    let unknown = bench.args("no_such_tool", 0, now_ms()).unwrap_err();
    assert!(unknown.to_string().contains("no_such_tool"), "{unknown}");
}

//! How the binaries are linked (crates/hooks-mcp/build.rs): the short-lived ones (the hook, the
//! stdio front end, its catalogue child) carry GCC's static unwinder instead of loading
//! `libgcc_s.so.1` at every start; the long-lived server loads the shared one as usual. All of
//! them still link the C library dynamically.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::process::Command;

/// What the dynamic loader would load for `bin` (`ldd`, glibc's own tool).
fn loaded_libraries(bin: &str) -> String {
    let out = Command::new("ldd").arg(bin).output().expect("running ldd");
    assert!(out.status.success(), "ldd {bin} failed: {out:?}");
    String::from_utf8(out.stdout).expect("ldd prints text")
}

#[test]
fn short_lived_binaries_carry_the_unwinder_and_the_server_loads_it() {
    // What the build script found: `static` when the C compiler has `libgcc_eh.a`.
    let unwinder = env!("HOOKS_MCP_UNWINDER");
    if std::env::var_os("CI").is_some() {
        assert_eq!(
            unwinder, "static",
            "CI's C compiler has libgcc_eh.a, so the build script must have linked it"
        );
    }
    let binaries = [
        (env!("CARGO_BIN_EXE_hooks-mcp-hook"), true),
        (env!("CARGO_BIN_EXE_hooks-mcp"), true),
        (env!("CARGO_BIN_EXE_hooks-mcp-catalogue"), true),
        (env!("CARGO_BIN_EXE_hooks-mcp-stdio"), true),
        (env!("CARGO_BIN_EXE_hooks-mcp-full"), false),
    ];
    for (bin, short_lived) in binaries {
        let libraries = loaded_libraries(bin);
        assert!(
            libraries.contains("libc.so.6"),
            "{bin} links the C library dynamically: {libraries}"
        );
        let loads_unwinder = libraries.contains("libgcc_s.so");
        assert_eq!(
            loads_unwinder,
            !(short_lived && unwinder == "static"),
            "{bin} (short-lived: {short_lived}, unwinder: {unwinder}) loads: {libraries}"
        );
    }
}

//! Build script of the `hooks-mcp` binaries: links the unwinder into the short-lived ones.
//!
//! On Linux with glibc, Rust links every program against the shared unwinder `libgcc_s.so.1`.
//! Loading it costs each process a library to find, map and relocate, and its constructor asks
//! the processor for its features (`cpuid`, which traps to the hypervisor on a virtual
//! machine): about 0.12 ms per process on the benchmark machine (docs/benchmarks.md), and a
//! few pages of private memory. The hook command runs twice around every tool call, and the
//! stdio front end and its catalogue child start with every agent session, so for these three
//! binaries this script links GCC's static unwinder (`libgcc_eh.a`, what `-static-libgcc` and
//! static Rust builds use) in its place: a linker script named `libgcc_s.a`, in a directory
//! given to those binaries' links alone, stands in for the shared library (the linker searches
//! the directories a link names before the compiler's own). They still link the C library
//! dynamically. `hooks-mcp-full`, the long-lived server that may load the C library's
//! name-service modules, links the shared unwinder as usual.
//!
//! Nothing changes where the static unwinder is not found, when cross-compiling (the host's
//! compiler would name the host's archive), or off Linux with glibc; the variable
//! `HOOKS_MCP_UNWINDER` tells the package's tests which it was (`static` or `shared`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The binaries every session or hook starts, which get the static unwinder.
const BINARIES: &[&str] = &[
    "hooks-mcp-hook",
    "hooks-mcp",
    "hooks-mcp-catalogue",
    "hooks-mcp-stdio",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let unwinder = match static_unwinder() {
        Some(archive) => match stand_in(&archive) {
            Ok(dir) => {
                for bin in BINARIES {
                    println!("cargo:rustc-link-arg-bin={bin}=-L{}", dir.display());
                }
                "static"
            }
            Err(e) => {
                println!(
                    "cargo:warning=hooks-mcp: linking the shared unwinder (cannot write the \
                     stand-in linker script: {e})"
                );
                "shared"
            }
        },
        None => "shared",
    };
    println!("cargo:rustc-env=HOOKS_MCP_UNWINDER={unwinder}");
}

/// GCC's static unwinder, when this build links for the host, on Linux with glibc, with a C
/// compiler that has one.
fn static_unwinder() -> Option<PathBuf> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
    {
        return None;
    }
    // rustc links through `cc` unless the build names another linker.
    let linker = std::env::var_os("RUSTC_LINKER").unwrap_or_else(|| "cc".into());
    let out = Command::new(linker)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    // The compiler prints the bare name when it has no such file.
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (path.is_absolute() && path.is_file()).then_some(path)
}

/// Writes the linker script that stands in for `libgcc_s` and returns its directory.
fn stand_in(archive: &Path) -> std::io::Result<PathBuf> {
    let out_dir = std::env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .ok_or_else(|| std::io::Error::other("OUT_DIR is not set"))?;
    let dir = out_dir.join("static-unwinder");
    std::fs::create_dir_all(&dir)?;
    let script = format!(
        "/* Stands in for the shared unwinder: GCC's static one (see build.rs). */\n\
         INPUT(\"{}\")\n",
        archive.display()
    );
    std::fs::write(dir.join("libgcc_s.a"), script)?;
    Ok(dir)
}

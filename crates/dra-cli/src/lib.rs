//! `dra-cli`: the `dra` binary (also installed as `kubectl-dra`). The only crate of the
//! workspace that parses arguments or prints.
//!
//! `main` parses the command line ([`cli`]), loads input through `dra-api` ([`input`]), runs
//! one command from [`commands`] and maps the result to the documented exit codes:
//! 0 success, 1 findings (lint problems, pending pods, claims that do not fit), 2 usage or
//! input errors. A closed stdout is a success.

#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
mod commands;
mod hand_over;
mod helper;
mod input;
mod output;
mod pretty_json;
mod slices_ahead;
pub mod timings;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::output::Out;

/// The allocator of the `dra` and `kubectl-dra` processes (and of this crate's tests).
/// A run builds millions of small objects and frees few of them before exit; with glibc's
/// malloc a third of a simulation went to its bookkeeping and to first-touch page faults,
/// which are expensive in virtual machines. mimalloc takes memory from the system in large
/// segments (a few hundred page faults instead of tens of thousands); results are unchanged.
/// Its v2 line (the workspace's `Cargo.toml` says why not v3), asked the plain way for
/// word-aligned blocks ([`dra_malloc`]).
#[global_allocator]
static ALLOCATOR: dra_malloc::Mimalloc = dra_malloc::Mimalloc;

// Links `memcpy`, `memmove`, `memcmp` and `bcmp` of our own into musl builds, in place of
// musl's slow ones ([`dra_memfns`]); other builds get nothing from it.
use dra_memfns as _;

/// A bound for buffers that need not be larger (the JSON output's, the batches the reference
/// loop hands its writer). A block within it shares a mimalloc page with the blocks of its
/// size class (pages of 64 KiB for blocks up to 8 KiB, as `.cargo/config.toml` builds
/// mimalloc); a larger one takes a page of its own, and in a small run a new page is often a
/// fresh 2 MiB huge page to zero.
pub(crate) const SMALL_BLOCK_MAX: usize = 8 * 1024;

/// How a command ended when it did not simply succeed.
#[derive(Debug)]
pub enum Failure {
    /// Findings: the command worked and the answer is "no" (exit 1).
    Findings,
    /// Bad input or usage; the message was printed already or is printed by `main` (exit 2).
    Input(String),
    /// Stdout was closed by the reader.
    BrokenPipe,
    /// A bug or an environment problem (exit 2).
    Internal(String),
}

impl Failure {
    pub(crate) fn from_io(e: std::io::Error) -> Failure {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Internal(format!("cannot write output: {e}"))
        }
    }
}

/// Leaves `value` to the end of the process instead of dropping it. The process exits right
/// after a command, and the OS takes its memory back at once, while freeing a large cluster
/// object by object costs a noticeable part of the run (and nothing observable depends on it).
pub(crate) fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Above this many devices, a cluster's ResourceSlices are freed as soon as the simulation's
/// snapshot holds what it needs of them: at the scale of thousands of nodes they are most of
/// the memory (about 9 KB per device as wire objects), and freeing them keeps the peak down.
/// Below it, freeing them object by object costs more (a few percent of a run) than it saves.
const SLICE_DEVICES_FREED_EARLY: usize = 20_000;

/// A cluster's ResourceSlices, as objects or (loaded with `defer_slices`) as documents.
pub(crate) type Slices = (
    Vec<dra_api::Located<k8s_openapi::api::resource::v1::ResourceSlice>>,
    Vec<dra_api::Located<dra_api::SliceDoc>>,
);

/// Takes the cluster's ResourceSlices out for a simulation that no longer needs them (its
/// snapshot is built). Slices kept as JSON text are freed here, whatever their number: each
/// is a decoded metadata and a share of its input's text, so a few frees give the whole
/// input text back to the allocator, whose memory the simulation then fills instead of
/// fresh pages (each fresh 2 MiB huge page costs its zeroing; a small run touches about
/// eight). Of wire objects, large sets are freed here; small ones are returned, for the
/// caller to leave to the process exit or to free when nothing is being timed.
pub(crate) fn take_slices(cluster: &mut dra_api::Cluster) -> Slices {
    use dra_api::SliceDoc;
    let mut slices = (
        std::mem::take(&mut cluster.resource_slices),
        std::mem::take(&mut cluster.slice_docs),
    );
    let devices_of = |slice: &k8s_openapi::api::resource::v1::ResourceSlice| {
        slice.spec.devices.as_ref().map_or(0, Vec::len)
    };
    let devices = slices
        .0
        .iter()
        .map(|s| devices_of(&s.object))
        .sum::<usize>()
        + slices
            .1
            .iter()
            .map(|doc| match &*doc.object {
                SliceDoc::Object(slice) => devices_of(slice),
                SliceDoc::Json(json) => json.text().len() / SLICE_TEXT_BYTES_PER_DEVICE,
            })
            .sum::<usize>();
    slices
        .1
        .retain(|doc| !matches!(&*doc.object, SliceDoc::Json(_)));
    if devices > SLICE_DEVICES_FREED_EARLY {
        drop(slices);
        return Slices::default();
    }
    slices
}

/// About how many bytes of JSON text describe one device (the index estimates alike).
const SLICE_TEXT_BYTES_PER_DEVICE: usize = 512;

/// Exit code for findings.
pub const EXIT_FINDINGS: u8 = 1;
/// Exit code for usage and input errors.
pub const EXIT_INPUT: u8 = 2;

pub fn main() -> ExitCode {
    dra_malloc::keep_freed_memory();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` are not errors.
            let code = if e.use_stderr() { EXIT_INPUT } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if cli.timings {
        timings::enable();
    }
    let out = Out::new(cli.output, cli.color);
    let result = match cli.command {
        Command::Simulate(args) => commands::simulate::run(&out, &args),
        Command::Explain(args) => commands::explain::run(&out, &args),
        Command::Allocate(args) => commands::allocate::run(&out, &args),
        Command::Lint(args) => commands::lint::run(&out, &args),
        Command::Migrate(args) => commands::migrate::run(&out, &args),
        Command::Audit(args) => commands::audit::run(&out, &args),
        Command::Status(args) => commands::status::run(&out, &args),
        Command::Gen(args) => commands::gen_cmd::run(&out, &args),
        Command::Bench(args) => commands::bench::run(&out, &args),
    };
    if cli.timings {
        // Whatever the command did after its last phase (all of it for commands without
        // phases of their own).
        timings::mark("rest");
        eprint!("{}", timings::report());
    }
    match result {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Findings) => ExitCode::from(EXIT_FINDINGS),
        Err(Failure::Input(message)) => {
            if !message.is_empty() {
                out.diagnostic("error", &message);
            }
            ExitCode::from(EXIT_INPUT)
        }
        Err(Failure::Internal(message)) => {
            out.diagnostic("error", &message);
            ExitCode::from(EXIT_INPUT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dra_api::{LoadOptions, SliceDoc};

    /// A JSON stream with two ResourceSlices of `devices` devices each.
    fn slice_stream(devices: usize) -> String {
        let slice = |name: &str| {
            let devices: Vec<String> = (0..devices)
                .map(|i| format!(r#"{{"name":"gpu-{i}"}}"#))
                .collect();
            format!(
                r#"{{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{{"name":"{name}"}},"spec":{{"driver":"gpu.example.com","nodeName":"{name}","pool":{{"name":"{name}","generation":1,"resourceSliceCount":1}},"devices":[{}]}}}}"#,
                devices.join(",")
            )
        };
        format!("{}\n{}\n", slice("node-a"), slice("node-b"))
    }

    #[test]
    fn slices_kept_as_text_are_freed_at_once() {
        let deferred = LoadOptions {
            defer_slices: true,
            ..LoadOptions::default()
        };
        let mut loaded = dra_api::load_str_with("slices.json", &slice_stream(2), &deferred);
        assert_eq!(loaded.cluster.slice_docs.len(), 2);
        assert!(
            loaded
                .cluster
                .slice_docs
                .iter()
                .all(|doc| matches!(&*doc.object, SliceDoc::Json(_)))
        );
        let (objects, docs) = take_slices(&mut loaded.cluster);
        assert!(objects.is_empty() && docs.is_empty());
        assert!(loaded.cluster.slice_docs.is_empty());

        // Wire objects of a small set are handed back, for the caller to leave to the exit.
        let mut loaded = dra_api::load_str("slices.json", &slice_stream(2));
        let total = loaded.cluster.resource_slices.len() + loaded.cluster.slice_docs.len();
        assert_eq!(total, 2);
        let (objects, docs) = take_slices(&mut loaded.cluster);
        assert_eq!(objects.len() + docs.len(), 2);
    }
}

//! Loading the command's input: the given files, or the built-in example cluster.

use std::path::PathBuf;

use dra_alloc::IndexErrorKind;
use dra_api::{Diagnostic, LoadOptions, Loaded};
use dra_sim::{SimError, SimInput, Snapshot};

use crate::Failure;
use crate::output::Out;

/// The built-in example: a platform team halfway through moving GPU workloads from the device
/// plugin to DRA (also in `examples/gpu-migration/cluster.yaml`).
pub const BUILTIN_EXAMPLE: &str = include_str!("../../../examples/gpu-migration/cluster.yaml");
/// How the built-in example is named in diagnostics.
pub const BUILTIN_NAME: &str = "<builtin:gpu-migration>";

/// Loads `files` (or the built-in example when there are none) and prints load diagnostics on
/// stderr. Errors stop the command: a simulation of half-read input would mislead.
pub fn load(out: &Out, files: &[PathBuf]) -> Result<Loaded, Failure> {
    let loaded = if files.is_empty() {
        out.diagnostic(
            "note",
            "no input files: using the built-in example cluster (examples/gpu-migration/cluster.yaml)",
        );
        dra_api::load_str(BUILTIN_NAME, BUILTIN_EXAMPLE)
    } else {
        dra_api::load_paths(files, &LoadOptions::default())
            .map_err(|e| Failure::Input(e.to_string()))?
    };
    report(out, &loaded.diagnostics);
    if loaded.has_errors() {
        return Err(Failure::Input(format!(
            "{} error(s) in the input",
            loaded.diagnostics.iter().filter(|d| d.is_error()).count()
        )));
    }
    crate::timings::mark("load");
    Ok(loaded)
}

/// The simulation's snapshot of a cluster loaded by [`load`].
pub fn snapshot(loaded: &Loaded) -> Result<Snapshot, Failure> {
    let snapshot = Snapshot::new(&SimInput::from_cluster(&loaded.cluster))
        .map_err(|e| Failure::Input(e.to_string()))?;
    crate::timings::mark("index");
    Ok(snapshot)
}

/// Loads `files` like [`load`] and indexes the cluster for a simulation. Slices of JSON
/// streams go to the index as text (`LoadOptions::defer_slices`), which converts them
/// straight into its own form instead of decoding and holding them all as wire objects: the
/// bulk of a device-heavy cluster's load time and memory. Text the loader did not check may
/// not decode; then, and whenever
/// the input has errors, the files are loaded again the usual way, whose diagnostics name
/// file and line, so the outcome is the usual route's in every case. Standard input cannot
/// be read twice and always takes the usual route.
pub fn load_snapshot(out: &Out, files: &[PathBuf]) -> Result<(Loaded, Snapshot), Failure> {
    if !files.is_empty() && files.iter().all(|f| f.as_os_str() != "-") {
        let loaded = dra_api::load_paths(files, &snapshot_load_options())
            .map_err(|e| Failure::Input(e.to_string()))?;
        crate::timings::mark("load");
        if !loaded.has_errors() {
            match Snapshot::new(&SimInput::from_cluster(&loaded.cluster)) {
                Ok(snapshot) => {
                    crate::timings::mark("index");
                    report(out, &loaded.diagnostics);
                    return Ok((loaded, snapshot));
                }
                Err(SimError::Index(e)) if e.kind == IndexErrorKind::Decode => {}
                Err(e) => {
                    report(out, &loaded.diagnostics);
                    return Err(Failure::Input(e.to_string()));
                }
            }
        }
    }
    let loaded = load(out, files)?;
    let snapshot = snapshot(&loaded)?;
    Ok((loaded, snapshot))
}

/// How [`load_snapshot`] first reads files (and `dra bench` its generated input): slices kept
/// as JSON text for the index.
pub fn snapshot_load_options() -> LoadOptions {
    LoadOptions {
        defer_slices: true,
        ..LoadOptions::default()
    }
}

/// Prints diagnostics on stderr.
pub fn report(out: &Out, diagnostics: &[Diagnostic]) {
    for d in diagnostics {
        // The severity is part of the diagnostic's own text; colour only the prefix.
        let text = d.to_string();
        let level = if d.is_error() { "error" } else { "warning" };
        let marker = format!("{level}: ");
        match text.find(&marker) {
            Some(at) if out.color => {
                let code = if d.is_error() { "31" } else { "33" };
                eprintln!(
                    "{}\x1b[1;{code}m{level}\x1b[0m: {}",
                    &text[..at],
                    &text[at + marker.len()..]
                );
            }
            _ => eprintln!("{text}"),
        }
    }
}

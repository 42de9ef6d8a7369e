//! Loading the command's input: the given files, or the built-in example cluster.

use std::path::PathBuf;
use std::sync::Arc;

use dra_alloc::{IndexErrorKind, SliceRunAhead};
use dra_api::{Diagnostic, LoadOptions, Loaded};
use dra_sim::{SimError, SimInput, Snapshot};

use crate::Failure;
use crate::helper::Helper;
use crate::output::Out;
use crate::slices_ahead::{self, SlicesAhead};

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
///
/// Slices found are converted while the rest is read, on `helper` and this thread
/// ([`crate::slices_ahead`]); when those conversions are all the input's slices, the slices
/// are freed before the index is built (the answer's cluster has none then).
pub fn load_snapshot(
    out: &Out,
    files: &[PathBuf],
    helper: &Helper,
) -> Result<(Loaded, Snapshot), Failure> {
    if !files.is_empty() && files.iter().all(|f| f.as_os_str() != "-") {
        let (mut loaded, ahead) = load_converting_slices(files, helper)?;
        if !loaded.has_errors() {
            let built = match dra_sim::fit_slices_ahead(&loaded.cluster, ahead) {
                Ok(fitted) => {
                    // The runs hold all the index needs of the slices, whose text is most of
                    // the input (all of it shared by the slices, once the other objects are
                    // read): freed before the index takes the runs, its memory serves the
                    // index and the simulation instead of fresh pages.
                    crate::leave_to_exit(crate::take_slices(&mut loaded.cluster));
                    Snapshot::with_fitted_runs(&SimInput::from_cluster(&loaded.cluster), fitted)
                }
                Err(ahead) => {
                    Snapshot::with_slices_ahead(&SimInput::from_cluster(&loaded.cluster), ahead)
                }
            };
            match built {
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

/// Loads `files` for [`load_snapshot`], converting the slices found on `helper` and, once
/// loading is done, on this thread too ([`crate::slices_ahead`]); the runs are empty where
/// the loader told of no slice (YAML, large inputs read in parallel pieces) and are not
/// converted when the input has errors.
fn load_converting_slices(
    files: &[PathBuf],
    helper: &Helper,
) -> Result<(Loaded, Vec<SliceRunAhead>), Failure> {
    // Room for the devices of all the input's text: only the run converted first keeps its
    // list (as the index's), and it cannot know how many slices will come.
    let input_bytes: usize = files
        .iter()
        .filter_map(|file| std::fs::metadata(file).ok())
        .map(|metadata| usize::try_from(metadata.len()).unwrap_or(usize::MAX))
        .fold(0, usize::saturating_add);
    let ahead = Arc::new(SlicesAhead::default());
    let options = LoadOptions {
        slice_sink: Some(ahead.sink()),
        ..snapshot_load_options()
    };
    let front = {
        let ahead = Arc::clone(&ahead);
        helper.run(move || ahead.convert_front(input_bytes))
    };
    let loaded = dra_api::load_paths(files, &options);
    // Taint rules add to the devices they select as the index converts them, which runs
    // converted ahead cannot have done (`SliceRunAhead::fit`): no use converting more then.
    let slices = match &loaded {
        Ok(loaded) if !loaded.has_errors() && loaded.cluster.device_taint_rules.is_empty() => {
            Some(loaded.cluster.resource_slices.len() + loaded.cluster.slice_docs.len())
        }
        _ => None,
    };
    let back = ahead.finish(slices);
    crate::timings::mark("load");
    let back = slices_ahead::convert(&back);
    let front = front.join();
    let loaded = loaded.map_err(|e| Failure::Input(e.to_string()))?;
    Ok((loaded, vec![front, back]))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A JSON stream of `count` ResourceSlices of four devices each, a pod between them.
    fn slice_stream(count: usize) -> String {
        let mut text = String::new();
        for n in 0..count {
            let devices: Vec<String> = (0..4)
                .map(|i| format!(r#"{{"name":"gpu-{i}","attributes":{{"index":{{"int":{i}}}}}}}"#))
                .collect();
            text.push_str(&format!(
                r#"{{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{{"name":"node-{n}"}},"spec":{{"driver":"gpu.example.com","nodeName":"node-{n}","pool":{{"name":"node-{n}","generation":1,"resourceSliceCount":1}},"devices":[{}]}}}}"#,
                devices.join(",")
            ));
            text.push('\n');
            if n == count / 2 {
                text.push_str(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#);
                text.push('\n');
            }
        }
        text
    }

    /// Writes `text` to a file of this test's own.
    fn file_with(name: &str, text: &str) -> PathBuf {
        let file = std::env::temp_dir().join(format!("dra-ahead-{}-{name}", std::process::id()));
        std::fs::write(&file, text).expect("temporary file");
        file
    }

    /// Slices found while loading a JSON stream are converted on the helper and this thread,
    /// every one once, in runs the index takes; YAML tells of none, and loads as before.
    #[test]
    fn slices_are_converted_while_loading() {
        let file = file_with("stream.json", &slice_stream(40));
        let (loaded, runs) =
            load_converting_slices(std::slice::from_ref(&file), &Helper::start()).expect("loads");
        std::fs::remove_file(&file).ok();
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        assert_eq!(loaded.cluster.pods.len(), 1);
        let input = SimInput::from_cluster(&loaded.cluster);
        assert_eq!(input.slices.len(), 40);
        assert_eq!(runs.iter().map(SliceRunAhead::len).sum::<usize>(), 40);
        assert!(SliceRunAhead::fit(&runs, &input.slices, &[]));
        Snapshot::with_slices_ahead(&input, runs).expect("indexes");

        let yaml: String = slice_stream(3)
            .lines()
            .map(|line| format!("---\n{line}\n"))
            .collect();
        let file = file_with("stream.yaml", &yaml);
        let (loaded, runs) =
            load_converting_slices(std::slice::from_ref(&file), &Helper::start()).expect("loads");
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        let input = SimInput::from_cluster(&loaded.cluster);
        assert_eq!(input.slices.len(), 3);
        assert!(runs.iter().all(SliceRunAhead::is_empty));
        assert!(!SliceRunAhead::fit(&runs, &input.slices, &[]));

        // JSON and YAML together: the loader told of the JSON's slices only, which this
        // thread then does not convert.
        let other = slice_stream(40)
            .replace("node-", "other-")
            .replace(r#""name":"p""#, r#""name":"q""#);
        let json = file_with("mixed.json", &other);
        let (loaded, runs) =
            load_converting_slices(&[json.clone(), file.clone()], &Helper::start()).expect("loads");
        std::fs::remove_file(&file).ok();
        std::fs::remove_file(&json).ok();
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        let input = SimInput::from_cluster(&loaded.cluster);
        assert_eq!(input.slices.len(), 43);
        assert!(
            runs[1].is_empty(),
            "this thread converted {}",
            runs[1].len()
        );
        assert!(!SliceRunAhead::fit(&runs, &input.slices, &[]));
        Snapshot::with_slices_ahead(&input, runs).expect("indexes");

        // With a DeviceTaintRule the runs cannot fit either: this thread converts nothing.
        let rule = r#"{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"r"},"spec":{"deviceSelector":{"driver":"gpu.example.com"},"taint":{"key":"example.com/broken","effect":"NoSchedule"}}}"#;
        let tainted = file_with("tainted.json", &format!("{}{rule}\n", slice_stream(40)));
        let (loaded, runs) =
            load_converting_slices(std::slice::from_ref(&tainted), &Helper::start())
                .expect("loads");
        std::fs::remove_file(&tainted).ok();
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        assert_eq!(loaded.cluster.device_taint_rules.len(), 1);
        let input = SimInput::from_cluster(&loaded.cluster);
        assert!(
            runs[1].is_empty(),
            "this thread converted {}",
            runs[1].len()
        );
        assert!(!SliceRunAhead::fit(
            &runs,
            &input.slices,
            &input.taint_rules
        ));
        Snapshot::with_slices_ahead(&input, runs).expect("indexes");
    }

    /// Where the runs converted while loading are all the input's slices, `load_snapshot`
    /// frees the slices before the index is built; the answer is the one the usual route
    /// gives. Where they are not (a DeviceTaintRule), the slices stay.
    #[test]
    fn slices_converted_while_loading_are_freed_before_indexing() {
        let out = Out::new(
            crate::cli::OutputFormat::Json,
            crate::cli::ColorChoice::Never,
        );
        let spec = dra_gen::preset("gpu-nic", 4).expect("preset");
        let mut stream = Vec::new();
        dra_gen::generate_json_lines(&spec, &mut stream).expect("generates");
        let stream = String::from_utf8(stream).expect("UTF-8");
        let answer = |loaded: &Loaded, snapshot: &Snapshot| {
            let report =
                dra_sim::run_first_fit_snapshot(&SimInput::from_cluster(&loaded.cluster), snapshot)
                    .expect("simulates");
            serde_json::to_string(&report.results).expect("encodes")
        };
        let rule = r#"{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"r"},"spec":{"deviceSelector":{"driver":"nic.example.com","device":"nic-0"},"taint":{"key":"example.com/broken","effect":"NoSchedule"}}}"#;
        for (name, text, freed) in [
            ("gpu-nic.json", stream.clone(), true),
            ("tainted.json", format!("{stream}{rule}\n"), false),
        ] {
            let file = file_with(name, &text);
            let (loaded, ours) =
                load_snapshot(&out, std::slice::from_ref(&file), &Helper::start()).expect("loads");
            let usual = load(&out, std::slice::from_ref(&file)).expect("loads");
            std::fs::remove_file(&file).ok();
            assert_eq!(loaded.cluster.slice_docs.is_empty(), freed, "{name}");
            assert!(
                !usual.cluster.slice_docs.is_empty() || !usual.cluster.resource_slices.is_empty()
            );
            let usual_snapshot = snapshot(&usual).expect("indexes");
            let (ours, theirs) = (answer(&loaded, &ours), answer(&usual, &usual_snapshot));
            assert!(ours == theirs, "{name}: the answers differ");
            assert!(ours.contains("\"scheduled\""), "{name}: {ours:.300}");
        }
    }
}

//! Helpers shared by the simulation's integration tests.

use std::path::{Path, PathBuf};

/// Loads a preset through dra-api, as `dra gen -o json | dra simulate` would.
pub fn generated(preset: &str, size: u32, seed: u64) -> dra_api::Cluster {
    let mut spec = dra_gen::preset(preset, size).expect("known preset");
    spec.seed = seed;
    let mut text = Vec::new();
    dra_gen::generate_json_lines(&spec, &mut text).expect("generates");
    let text = String::from_utf8(text).expect("utf-8");
    let loaded = dra_api::load_str(&format!("{preset}-{size}-{seed}.json"), &text);
    assert!(!loaded.has_errors(), "{preset}: {:?}", loaded.diagnostics);
    loaded.cluster
}

/// The first line where two texts differ, for a failure message.
pub fn first_difference(a: &str, b: &str) -> String {
    a.lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map(|(i, (x, y))| format!("line {}: {x:?} vs {y:?}", i + 1))
        .unwrap_or_else(|| format!("lengths {} vs {}", a.len(), b.len()))
}

/// The `cluster.yaml` of every case directory under `dir`, in name order.
pub fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("directory exists")
        .map(|e| e.expect("readable").path().join("cluster.yaml"))
        .filter(|p| p.exists())
        .collect();
    files.sort();
    files
}

/// The inputs of the conformance corpus: upstream's cases, then ours.
pub fn corpus_inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = inputs(&root.join("../../conformance/cases"));
    files.extend(inputs(&root.join("../../conformance/own")));
    files
}

/// Loads one input file.
pub fn load_file(path: &Path) -> dra_api::Loaded {
    dra_api::load_paths(&[path.to_path_buf()], &dra_api::LoadOptions::default())
        .expect("readable input")
}

/// Fails with every difference found.
pub fn assert_none_differ(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} runs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

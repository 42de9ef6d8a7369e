//! Data-driven tests: every file (or directory) under `tests/fixtures/` is loaded and
//! validated; the objects found and all diagnostics are compared with
//! `tests/fixtures/<name>.out`. Run with `UPDATE_EXPECT=1` to rewrite the `.out`
//! files after an intended change, then review the diff.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn render(input: &Path) -> String {
    let loaded = dra_api::load_paths(&[input], &dra_api::LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    let mut out = String::from("# objects\n");
    for (object, source) in loaded.cluster.object_refs() {
        writeln!(out, "{source} {object}").unwrap();
    }
    out.push_str("# load diagnostics\n");
    for d in &loaded.diagnostics {
        writeln!(out, "{d}").unwrap();
    }
    out.push_str("# validation diagnostics\n");
    for d in dra_api::validate(&loaded.cluster) {
        writeln!(out, "{d}").unwrap();
    }
    out
}

fn is_input(path: &Path) -> bool {
    path.is_dir()
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

#[test]
fn fixtures() {
    let dir = Path::new("tests/fixtures");
    let mut inputs: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_input(p))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 10, "fixtures missing: {inputs:?}");
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for input in &inputs {
        let expected_path = input.with_extension("out");
        let actual = render(input);
        if update {
            fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = fs::read_to_string(&expected_path).unwrap_or_else(|_| {
            panic!(
                "{} is missing; run with UPDATE_EXPECT=1",
                expected_path.display()
            )
        });
        if expected != actual {
            failures.push(format!(
                "--- {}\n{}",
                expected_path.display(),
                diff(&expected, &actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "fixture output differs (UPDATE_EXPECT=1 rewrites):\n{}",
        failures.join("\n")
    );
}

/// Lines only in `expected` (-) or only in `actual` (+), in order.
fn diff(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let mut out = String::new();
    for line in &e {
        if !a.contains(line) {
            writeln!(out, "- {line}").unwrap();
        }
    }
    for line in &a {
        if !e.contains(line) {
            writeln!(out, "+ {line}").unwrap();
        }
    }
    if out.is_empty() {
        out.push_str("(same lines, different order or count)\n");
    }
    out
}

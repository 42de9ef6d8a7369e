//! Deciding per node class (the default) gives exactly the answer of looking at every node on
//! its own (`SimOptions::per_node`): the whole JSON document, the resulting claims and the
//! changes to pods, on generated clusters of every shape and on the conformance corpus and the
//! scenarios, in both scored modes.

use std::path::{Path, PathBuf};

use dra_sim::{NodePick, SimOptions, Simulation};

/// Loads a preset through dra-api, as `dra gen -o json | dra simulate` would.
fn generated(preset: &str, size: u32, seed: u64) -> dra_api::Cluster {
    let mut spec = dra_gen::preset(preset, size).expect("known preset");
    spec.seed = seed;
    let mut text = Vec::new();
    dra_gen::generate_json_lines(&spec, &mut text).expect("generates");
    let text = String::from_utf8(text).expect("utf-8");
    let loaded = dra_api::load_str(&format!("{preset}-{size}-{seed}.json"), &text);
    assert!(!loaded.has_errors(), "{preset}: {:?}", loaded.diagnostics);
    loaded.cluster
}

/// Everything a simulation answers, as text.
fn answer(sim: &Simulation) -> String {
    let document = serde_json::to_string_pretty(sim).expect("serialises");
    let claims = serde_json::to_string_pretty(&sim.claims).expect("serialises");
    format!("{document}\n{claims}\n{:#?}", sim.pod_changes)
}

fn first_difference(a: &str, b: &str) -> String {
    a.lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map(|(i, (x, y))| format!("line {}: {x:?} vs {y:?}", i + 1))
        .unwrap_or_else(|| format!("lengths {} vs {}", a.len(), b.len()))
}

/// Runs both ways in both scored modes; returns the class decisions and the scheduled pods of
/// the scored run.
fn compare(name: &str, cluster: &dra_api::Cluster, failures: &mut Vec<String>) -> (usize, usize) {
    let input = dra_sim::SimInput::from_cluster(cluster);
    let mut decisions = (0, 0);
    for pick in [NodePick::Scored, NodePick::MostAllocated] {
        let classes = SimOptions {
            node_pick: pick,
            ..SimOptions::default()
        };
        let per_node = SimOptions {
            per_node: true,
            ..classes
        };
        let fast = dra_sim::simulate(&input, &classes).expect("runs");
        let slow = dra_sim::simulate(&input, &per_node).expect("runs");
        assert_eq!(
            slow.class_decisions, 0,
            "{name}: per_node decides per class"
        );
        let (a, b) = (answer(&fast), answer(&slow));
        if a != b {
            failures.push(format!(
                "{name} ({}): {}",
                pick.name(),
                first_difference(&a, &b)
            ));
        }
        if pick == NodePick::Scored {
            decisions = (fast.class_decisions, fast.summary.scheduled);
        }
    }
    decisions
}

#[test]
fn generated_clusters_give_the_same_answer() {
    // (preset, size, seed, whether every scheduled pod is decided per class: no firstAvailable,
    // extended resources or preferred affinity, no pod pending before)
    let cases: &[(&str, u32, u64, bool)] = &[
        ("hgx", 16, 0, true),
        ("hgx", 9, 3, true),
        ("gpu-selector", 6, 0, true),
        ("gpu-nic", 6, 0, true),
        ("hgx-mixed", 24, 0, false),
        ("hgx-mixed", 24, 5, false),
        ("hgx-half", 12, 0, false),
        ("hgx-full", 12, 1, false),
        ("legacy-mixed", 20, 0, false),
        ("legacy-mixed", 20, 9, false),
        ("partitionable", 6, 0, true),
        ("consumable-capacity", 3, 0, true),
        ("scheduler-perf", 12, 0, true),
        ("steady-state-half", 20, 0, true),
        ("steady-state-full", 20, 0, false),
        ("extended-resource", 6, 0, true),
        ("mixed", 3, 0, false),
        ("mixed", 3, 11, false),
        ("adversarial-first-available", 2, 0, false),
    ];
    let mut failures = Vec::new();
    for &(preset, size, seed, all_by_class) in cases {
        let cluster = generated(preset, size, seed);
        let name = format!("{preset} size {size} seed {seed}");
        let (decisions, scheduled) = compare(&name, &cluster, &mut failures);
        if all_by_class {
            assert!(scheduled > 0, "{name}: nothing scheduled");
            assert_eq!(
                decisions, scheduled,
                "{name}: not every scheduled pod was decided per class"
            );
        }
        if preset.starts_with("hgx") || preset == "legacy-mixed" {
            assert!(decisions > 0, "{name}: no pod was decided per class");
        }
    }
    assert!(
        failures.is_empty(),
        "{} runs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("directory exists")
        .map(|e| e.expect("readable").path().join("cluster.yaml"))
        .filter(|p| p.exists())
        .collect();
    files.sort();
    files
}

#[test]
fn corpus_and_scenarios_give_the_same_answer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = inputs(&root.join("../../conformance/cases"));
    files.extend(inputs(&root.join("../../conformance/own")));
    files.extend(inputs(&root.join("tests/scenarios")));
    let mut failures = Vec::new();
    let mut decisions = 0;
    for file in &files {
        let loaded =
            dra_api::load_paths(std::slice::from_ref(file), &dra_api::LoadOptions::default())
                .expect("readable input");
        decisions += compare(&file.display().to_string(), &loaded.cluster, &mut failures).0;
    }
    assert!(files.len() > 200, "only {} inputs", files.len());
    assert!(decisions > 100, "only {decisions} pods decided per class");
    assert!(
        failures.is_empty(),
        "{} runs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

//! Deciding per node class (the default) gives exactly the answer of looking at every node on
//! its own (`SimOptions::per_node`): the whole JSON document, the resulting claims and the
//! changes to pods, on generated clusters of every shape and on the conformance corpus and the
//! scenarios, in both scored modes. Filtering nodes on several threads
//! (`SimOptions::threads`) gives exactly the answer of one thread.

mod common;

use std::path::Path;

use common::{assert_none_differ, corpus_inputs, first_difference, generated, inputs, load_file};
use dra_sim::{NodePick, SimOptions, Simulation};

/// Everything a simulation answers, as text.
fn answer(sim: &Simulation) -> String {
    let document = serde_json::to_string_pretty(sim).expect("serialises");
    let claims: Vec<_> = sim.claims.all().collect();
    let claims = serde_json::to_string_pretty(&claims).expect("serialises");
    format!("{document}\n{claims}\n{:#?}", sim.pod_changes)
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
    assert_none_differ(&failures);
}

#[test]
fn corpus_and_scenarios_give_the_same_answer() {
    let mut files = corpus_inputs();
    files.extend(inputs(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios"),
    ));
    let mut failures = Vec::new();
    let mut decisions = 0;
    for file in &files {
        let loaded = load_file(file);
        decisions += compare(&file.display().to_string(), &loaded.cluster, &mut failures).0;
    }
    assert!(files.len() > 200, "only {} inputs", files.len());
    assert!(decisions > 100, "only {decisions} pods decided per class");
    assert_none_differ(&failures);
}

#[test]
fn parallel_filtering_gives_the_same_answer() {
    // Clusters large enough (at least 32 candidate nodes) that pods with firstAvailable,
    // extended resources, taints or preferred affinity are filtered on several threads.
    let cases: &[(&str, u32, u64)] = &[
        ("hgx-mixed", 99, 0),
        ("hgx-half", 60, 2),
        ("legacy-mixed", 80, 0),
        ("mixed", 12, 4),
    ];
    let mut failures = Vec::new();
    let mut parallel = 0;
    for &(preset, size, seed) in cases {
        let cluster = generated(preset, size, seed);
        let input = dra_sim::SimInput::from_cluster(&cluster);
        for per_node in [false, true] {
            let one = SimOptions {
                per_node,
                threads: 1,
                ..SimOptions::default()
            };
            let many = SimOptions {
                threads: 3,
                threads_at_once: true,
                ..one
            };
            let sequential = dra_sim::simulate(&input, &one).expect("runs");
            let threaded = dra_sim::simulate(&input, &many).expect("runs");
            assert_eq!(sequential.parallel_filters, 0, "{preset}: one thread");
            parallel += threaded.parallel_filters;
            let (a, b) = (answer(&threaded), answer(&sequential));
            if a != b {
                failures.push(format!(
                    "{preset} size {size} seed {seed} per_node {per_node}: {}",
                    first_difference(&a, &b)
                ));
            }
        }
    }
    assert!(parallel > 100, "only {parallel} pods filtered in parallel");
    assert_none_differ(&failures);
}

//! Cross-check: the full scheduler model, picking the first feasible node by name, places every
//! pod of the conformance corpus where the reference loop does, with the same devices, on the
//! cases the model reads the same way (no pod is bound in the input: the reference loop treats
//! `spec.nodeName` as a filter, the model as a running pod).

use std::path::{Path, PathBuf};

use dra_sim::{NodePick, PodState, PodStatus, SimOptions};

/// The conformance cases, in name order.
fn case_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/cases");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("conformance/cases exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.join("cluster.yaml").exists())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn first_feasible_model_agrees_with_the_reference_loop() {
    let dirs = case_dirs();
    let mut compared = 0;
    let mut failures = Vec::new();
    for dir in &dirs {
        let loaded = dra_api::load_paths(
            &[dir.join("cluster.yaml")],
            &dra_api::LoadOptions::default(),
        )
        .expect("readable case");
        let cluster = &loaded.cluster;
        if cluster.pods.iter().any(|p| {
            p.object
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty())
        }) {
            continue;
        }
        compared += 1;
        let input = dra_sim::SimInput::from_cluster(cluster);
        let reference = dra_sim::run_first_fit(&input).expect("reference runs");
        let options = SimOptions {
            node_pick: NodePick::FirstFeasible,
            ..SimOptions::default()
        };
        let model = dra_sim::simulate(&input, &options).expect("model runs");
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        for (r, m) in reference.results.iter().zip(&model.results) {
            // kube-scheduler's PostFilter deallocates an idle claim allocated for a node where
            // the pod cannot go and retries; the reference loop leaves the pod pending. From
            // there on, the two runs legitimately differ.
            if m.notes.iter().any(|n| n.contains("deallocated claim")) {
                assert_eq!(r.status, PodStatus::Unschedulable, "{name} {}", r.pod);
                break;
            }
            let status = match m.status {
                PodState::Scheduled => PodStatus::Scheduled,
                PodState::Error => PodStatus::Error,
                _ => PodStatus::Unschedulable,
            };
            let same = r.pod == m.pod
                && r.node == m.node
                && r.status == status
                && serde_json::to_value(&r.allocations).ok()
                    == serde_json::to_value(&m.allocations).ok();
            if !same {
                failures.push(format!(
                    "{name} {}: reference {:?} on {:?} ({:?}), model {:?} on {:?} ({:?})",
                    r.pod,
                    r.status,
                    r.node,
                    r.error.as_ref().or(r.reason.as_ref()),
                    m.status,
                    m.node,
                    m.error.as_ref().or(m.reason.as_ref())
                ));
                break;
            }
        }
    }
    assert!(compared > 100, "only {compared} cases compared");
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The device pre-check and the best-score-first shortcut never change a result: over the whole
/// corpus, both scored modes give the same document as running the allocator on every node.
#[test]
fn shortcuts_never_change_results() {
    let dirs = case_dirs();
    let mut failures = Vec::new();
    for dir in &dirs {
        let loaded = dra_api::load_paths(
            &[dir.join("cluster.yaml")],
            &dra_api::LoadOptions::default(),
        )
        .expect("readable case");
        let input = dra_sim::SimInput::from_cluster(&loaded.cluster);
        for pick in [NodePick::Scored, NodePick::MostAllocated] {
            let fast = SimOptions {
                node_pick: pick,
                ..SimOptions::default()
            };
            let slow = SimOptions {
                exhaustive: true,
                ..fast
            };
            let key =
                |sim: &dra_sim::Simulation| -> Vec<(String, Option<String>, PodState, String)> {
                    sim.results
                        .iter()
                        .map(|r| {
                            (
                                r.pod.clone(),
                                r.node.clone(),
                                r.status,
                                serde_json::to_string(&r.allocations).unwrap_or_default(),
                            )
                        })
                        .collect()
                };
            let a = key(&dra_sim::simulate(&input, &fast).expect("runs"));
            let b = key(&dra_sim::simulate(&input, &slow).expect("runs"));
            if a != b {
                let first = a.iter().zip(&b).find(|(x, y)| x != y);
                failures.push(format!(
                    "{} ({}): {first:?}",
                    dir.file_name().unwrap_or_default().to_string_lossy(),
                    pick.name()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} runs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

//! The reference loop's shortcut over nodes known to reject a pod's claims changes nothing:
//! the report of `run_first_fit` (devices, nodes, reasons, steps and Allocate calls) is the
//! report of `run_first_fit_every_node`, on generated clusters of every shape and on the
//! conformance corpus. Nor does handing the outcomes over one by one
//! (`run_first_fit_snapshot_each`): they and the totals make the same report, also with the
//! nodes' pools gathered by another thread meanwhile (`gather_pools_from_the_last_node`), and
//! then the nodes' candidate devices computed there (`CandidatesAhead`).

mod common;

use common::{assert_none_differ, corpus_inputs, first_difference, generated, load_file};
use dra_sim::{Report, SimInput};

/// Both runs over one input; returns the calls the shortcut skipped and whether candidates
/// were computed beside the loop.
fn compare(name: &str, cluster: &dra_api::Cluster, failures: &mut Vec<String>) -> (u64, bool) {
    let input = SimInput::from_cluster(cluster);
    let fast = dra_sim::run_first_fit(&input).expect("runs");
    let slow = dra_sim::run_first_fit_every_node(&input).expect("runs");
    assert_eq!(slow.skipped_calls, 0, "{name}: every node visited");
    let text = |r: &Report| serde_json::to_string_pretty(r).expect("serialises");
    let (a, b) = (text(&fast), text(&slow));
    if a != b {
        failures.push(format!("{name}: {}", first_difference(&a, &b)));
    }
    // Handed over one by one; then again with the nodes' pools gathered from the other end
    // by another thread meanwhile, and then with the nodes' candidates computed there too
    // (what `dra simulate`'s helper does).
    let mut candidates_computed = false;
    for (gathered_beside, candidates_beside) in [(false, false), (true, false), (true, true)] {
        let snapshot = dra_sim::Snapshot::new(&input).expect("indexes");
        let gather = dra_sim::gather_pools_from_the_last_node(&snapshot);
        let candidates = candidates_beside
            .then(|| dra_sim::CandidatesAhead::new(&input, &snapshot))
            .flatten();
        candidates_computed |= candidates.is_some();
        let gatherer = gathered_beside.then(|| {
            std::thread::spawn(move || {
                gather();
                if let Some(mut candidates) = candidates {
                    while candidates.next_node() {}
                }
            })
        });
        let mut handed = Vec::new();
        let streamed =
            dra_sim::run_first_fit_snapshot_each(&input, &snapshot, |outcome| handed.push(outcome))
                .expect("runs");
        if let Some(gatherer) = gatherer {
            gatherer.join().expect("the pools are gathered");
        }
        assert!(streamed.results.is_empty(), "{name}: outcomes kept");
        assert_eq!(streamed.skipped_calls, fast.skipped_calls, "{name}");
        check_recorded_allocations(name, &fast, &streamed, &handed, failures);
        let streamed = text(&Report {
            results: handed,
            ..streamed
        });
        if streamed != a {
            let how = match (gathered_beside, candidates_beside) {
                (_, true) => "pools and candidates beside",
                (true, false) => "pools gathered beside",
                (false, _) => "handed over",
            };
            failures.push(format!(
                "{name}, {how}: {}",
                first_difference(&a, &streamed)
            ));
        }
    }
    (fast.skipped_calls, candidates_computed)
}

/// What each report's claim store keeps of the allocations the loop made: a copy of the
/// whole allocation when the outcomes are kept, the node selector alone when they were handed
/// over (the outcome holds the devices).
fn check_recorded_allocations(
    name: &str,
    kept: &Report,
    streamed: &Report,
    handed: &[dra_sim::PodOutcome],
    failures: &mut Vec<String>,
) {
    for (outcome, handed) in kept.results.iter().zip(handed) {
        let namespace = outcome.pod.split('/').next().unwrap_or_default();
        for ((claim, allocation), (_, handed_allocation)) in
            outcome.allocations.iter().zip(handed.allocations.iter())
        {
            let stored = |report: &Report| {
                report
                    .claims
                    .get(namespace, claim)
                    .and_then(|c| c.status.as_ref())
                    .and_then(|s| s.allocation.clone())
            };
            if stored(kept).as_ref() != Some(allocation) {
                failures.push(format!(
                    "{name}: claim {namespace}/{claim}: kept allocation"
                ));
            }
            let light = stored(streamed);
            let as_expected = light.as_ref().is_some_and(|light| {
                light.devices.is_none()
                    && light.allocation_timestamp.is_none()
                    && light.node_selector == handed_allocation.node_selector
            });
            if !as_expected {
                failures.push(format!(
                    "{name}: claim {namespace}/{claim}: handed-over allocation recorded as {light:?}"
                ));
            }
        }
    }
}

#[test]
fn generated_clusters_give_the_same_report() {
    // (preset, size, seed, whether the shortcut must skip calls)
    let cases: &[(&str, u32, u64, bool)] = &[
        ("scheduler-perf", 30, 0, true),
        ("gpu-selector", 12, 0, true),
        ("gpu-nic", 10, 1, true),
        ("hgx", 12, 2, true),
        ("steady-state-half", 30, 0, true),
        ("steady-state-full", 30, 3, true),
        ("consumable-capacity", 3, 0, false),
        ("partitionable", 8, 0, false),
        ("extended-resource", 8, 0, false),
        ("hgx-mixed", 24, 0, false),
        ("hgx-half", 12, 4, false),
        ("hgx-full", 12, 0, false),
        ("legacy-mixed", 20, 0, false),
        ("mixed", 3, 0, false),
        ("mixed", 3, 7, false),
        ("adversarial-match", 2, 0, false),
        ("adversarial-first-available", 2, 0, false),
    ];
    let mut failures = Vec::new();
    let (mut candidates_computed, mut with_templates) = (0, 0);
    for &(preset, size, seed, must_skip) in cases {
        let name = format!("{preset} size {size} seed {seed}");
        let cluster = generated(preset, size, seed);
        let (skipped, candidates) = compare(&name, &cluster, &mut failures);
        if must_skip {
            assert!(skipped > 0, "{name}: the shortcut skipped nothing");
        }
        candidates_computed += usize::from(candidates);
        with_templates += usize::from(!cluster.resource_claim_templates.is_empty());
    }
    // Candidates are computed beside for every input with claim templates: none is large
    // enough for the claims to be made ahead instead (which would make
    // `CandidatesAhead::new` decline).
    assert!(
        with_templates > cases.len() / 2,
        "{with_templates} inputs with templates"
    );
    assert_eq!(candidates_computed, with_templates);
    assert_none_differ(&failures);
}

#[test]
fn corpus_gives_the_same_report() {
    let files = corpus_inputs();
    let mut failures = Vec::new();
    let mut skipped = 0;
    let mut candidates_computed = 0;
    for file in &files {
        let loaded = load_file(file);
        let (skipped_here, candidates) =
            compare(&file.display().to_string(), &loaded.cluster, &mut failures);
        skipped += skipped_here;
        candidates_computed += usize::from(candidates);
    }
    assert!(
        candidates_computed > 0,
        "no input computed candidates beside"
    );
    assert!(files.len() > 200, "only {} inputs", files.len());
    assert!(skipped > 0, "the shortcut skipped nothing in the corpus");
    assert_none_differ(&failures);
}

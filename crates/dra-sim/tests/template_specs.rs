//! Claims made from templates share the spec prepared for their template; a claim of the
//! generated name that was already there, and a template of the same name in another
//! namespace, are prepared from their own specs. The reference loop (with and without the
//! helper that makes claims ahead) and the scheduler model give each pod of the
//! `template-claims` scenario as many devices as its own claim asks for.

use std::path::Path;

use dra_sim::{ClaimAllocations, SimInput, SimOptions};

/// Devices per pod, for pods with one allocated claim each.
fn device_counts<'a>(
    pods: impl Iterator<Item = (&'a str, &'a ClaimAllocations)>,
) -> Vec<(String, usize)> {
    pods.map(|(pod, allocations)| {
        let devices = allocations
            .iter()
            .map(|(_, allocation)| {
                allocation
                    .devices
                    .as_ref()
                    .and_then(|d| d.results.as_ref())
                    .map_or(0, Vec::len)
            })
            .sum();
        (pod.to_string(), devices)
    })
    .collect()
}

#[test]
fn every_claim_gets_what_its_own_spec_asks_for() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/template-claims/cluster.yaml");
    let loaded =
        dra_api::load_paths(&[path], &dra_api::LoadOptions::default()).expect("the scenario loads");
    let input = SimInput::from_cluster(&loaded.cluster);
    let expected: Vec<(String, usize)> = [
        ("default/a", 1),
        ("default/b", 3),
        ("default/c", 1),
        ("team-b/e", 2),
    ]
    .map(|(pod, count)| (pod.to_string(), count))
    .into();

    for (name, report) in [
        ("reference", dra_sim::run_first_fit(&input)),
        (
            "reference, claims made ahead",
            dra_sim::run_first_fit_claims_ahead(&input),
        ),
    ] {
        let report = report.expect("the reference loop runs");
        let counts = device_counts(
            report
                .results
                .iter()
                .map(|r| (r.pod.as_str(), &r.allocations)),
        );
        assert_eq!(counts, expected, "{name}");
    }

    let model = dra_sim::simulate(&input, &SimOptions::default()).expect("the model runs");
    let counts = device_counts(
        model
            .results
            .iter()
            .map(|r| (r.pod.as_str(), &r.allocations)),
    );
    assert_eq!(counts, expected, "model");
}

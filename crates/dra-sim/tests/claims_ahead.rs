//! Making the claims from templates ahead on a helper thread changes nothing: the report of
//! the reference loop with it (`run_first_fit_claims_ahead`) is the report of making each
//! claim in its pod's turn, on the conformance corpus, the scenarios, generated clusters, and
//! a cluster of the cases where a claim made ahead must not be used (a claim of that name
//! exists, an earlier entry fails, the template is missing).

mod common;

use std::path::Path;

use common::{assert_none_differ, corpus_inputs, first_difference, generated, inputs, load_file};
use dra_sim::{PodStatus, Report, SimInput};

/// The report and every claim after the loop, as text.
fn text(report: &Report) -> String {
    let document = serde_json::to_string_pretty(report).expect("serialises");
    let claims: Vec<_> = report.claims.all().collect();
    let claims = serde_json::to_string_pretty(&claims).expect("serialises");
    format!("{document}\n{claims}")
}

/// Both ways; returns the report made with claims ahead.
fn compare(name: &str, cluster: &dra_api::Cluster, failures: &mut Vec<String>) -> Report {
    let input = SimInput::from_cluster(cluster);
    let ahead = dra_sim::run_first_fit_claims_ahead(&input).expect("runs");
    let in_turn = dra_sim::run_first_fit(&input).expect("runs");
    let (a, b) = (text(&ahead), text(&in_turn));
    if a != b {
        failures.push(format!("{name}: {}", first_difference(&a, &b)));
    }
    ahead
}

#[test]
fn corpus_scenarios_and_generated_clusters_give_the_same_answer() {
    let mut files = corpus_inputs();
    files.extend(inputs(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios"),
    ));
    assert!(files.len() > 200, "only {} inputs", files.len());
    let mut failures = Vec::new();
    for file in &files {
        compare(
            &file.display().to_string(),
            &load_file(file).cluster,
            &mut failures,
        );
    }
    for (preset, size, seed) in [
        ("hgx-mixed", 24, 0),
        ("hgx-half", 12, 0),
        ("legacy-mixed", 20, 0),
        ("mixed", 3, 11),
        ("scheduler-perf", 12, 0),
    ] {
        let cluster = generated(preset, size, seed);
        compare(
            &format!("{preset} size {size} seed {seed}"),
            &cluster,
            &mut failures,
        );
    }
    assert_none_differ(&failures);
}

const EDGE_CASES: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
---
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}, {name: gpu-2}, {name: gpu-3}, {name: gpu-4}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two}
spec:
  metadata:
    labels: {team: ml}
  spec:
    devices:
      requests: [{name: gpus, exactly: {deviceClassName: gpu, count: 2}}]
---
# The claim pod p's entry g would get, made beforehand for p by the controller: p uses it
# (one device, not the template's two).
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: p-g
  ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: uid-p, controller: true}]
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, uid: uid-p}
spec:
  containers: [{name: app}]
  resourceClaims: [{name: g, resourceClaimTemplateName: two}]
---
# Pod a's claim a-b-c is the name pod a-b's entry c would get: the reference loop, which
# does not check owners, gives a-b that claim.
apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  containers: [{name: app}]
  resourceClaims: [{name: b-c, resourceClaimTemplateName: one}]
---
apiVersion: v1
kind: Pod
metadata: {name: a-b}
spec:
  containers: [{name: app}]
  resourceClaims: [{name: c, resourceClaimTemplateName: two}]
---
# The first entry names a claim that does not exist: the second's claim is never created.
apiVersion: v1
kind: Pod
metadata: {name: e}
spec:
  containers: [{name: app}]
  resourceClaims:
  - {name: x, resourceClaimName: nowhere}
  - {name: yy, resourceClaimTemplateName: one}
---
# A claim by the name e's second entry would have had.
apiVersion: v1
kind: Pod
metadata: {name: f}
spec:
  containers: [{name: app}]
  resourceClaims: [{name: e-yy, resourceClaimName: e-yy}]
---
apiVersion: v1
kind: Pod
metadata: {name: m}
spec:
  containers: [{name: app}]
  resourceClaims: [{name: x, resourceClaimTemplateName: missing}]
---
apiVersion: v1
kind: Pod
metadata: {name: d}
spec:
  containers: [{name: app}]
  resourceClaims:
  - {name: first, resourceClaimTemplateName: one}
  - {name: second, resourceClaimTemplateName: one}
"#;

#[test]
fn claims_made_ahead_are_used_only_where_the_pod_would_create_them() {
    let loaded = dra_api::load_str("edge-cases.yaml", EDGE_CASES);
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    let mut failures = Vec::new();
    let report = compare("edge cases", &loaded.cluster, &mut failures);
    assert_none_differ(&failures);

    // The cases are what they claim to be.
    let outcome = |pod: &str| {
        let outcome = report
            .results
            .iter()
            .find(|o| o.pod == format!("default/{pod}"))
            .expect("pod");
        (outcome.status, outcome.reason.clone().unwrap_or_default())
    };
    let devices = |claim: &str| {
        report
            .claims
            .get("default", claim)
            .and_then(|c| c.status.as_ref()?.allocation.as_ref()?.devices.as_ref())
            .map_or(0, |d| d.results.as_ref().map_or(0, Vec::len))
    };
    assert_eq!(outcome("p").0, PodStatus::Scheduled);
    assert_eq!(
        devices("p-g"),
        1,
        "p uses the existing claim, not its template's"
    );
    assert_eq!(outcome("a").0, PodStatus::Scheduled);
    assert_eq!(outcome("a-b").0, PodStatus::Scheduled);
    assert_eq!(
        devices("a-b-c"),
        1,
        "a-b shares a's claim, not its template's"
    );
    assert!(outcome("e").1.contains("nowhere"), "{:?}", outcome("e"));
    assert!(outcome("f").1.contains("e-yy"), "{:?}", outcome("f"));
    assert!(outcome("m").1.contains("missing"), "{:?}", outcome("m"));
    assert_eq!(outcome("d").0, PodStatus::Scheduled);
    assert_eq!(devices("d-first") + devices("d-second"), 2);
}

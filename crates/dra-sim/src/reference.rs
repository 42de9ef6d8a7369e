//! The conformance reference loop (`dra simulate --node-pick first-fit`), exactly as
//! `conformance/README.md` defines it: pods in input order, each pod's claims allocated together
//! on the first node (by name) where they fit, results recorded so later pods see the devices.
//!
//! It is deliberately simple and stays unchanged as the full scheduler model grows around it:
//! it is what the upstream allocator's expected results were produced with.

use dra_alloc::{AllocatedState, Index, NodeId, Outcome, PreparedClaim, allocate};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim};

use crate::claims::{ClaimStore, PodClaimError};
use crate::report::{PodOutcome, PodStatus, Report};
use crate::{SimError, SimInput, Snapshot};

/// Runs the reference loop over `input`.
pub fn run_first_fit(input: &SimInput<'_>) -> Result<Report, SimError> {
    run_first_fit_snapshot(input, Snapshot::new(input)?)
}

/// [`run_first_fit`] over a [`Snapshot`] built beforehand from the same input; the input's
/// ResourceSlices are not read again.
pub fn run_first_fit_snapshot(
    input: &SimInput<'_>,
    snapshot: Snapshot,
) -> Result<Report, SimError> {
    let index = snapshot.index;
    let mut claims = ClaimStore::new(input);
    let mut state = AllocatedState::new(&index);
    for (claim, allocation) in claims.allocated() {
        state.add(&index, allocation).map_err(|e| SimError::Claim {
            claim: claim_display(claim),
            message: e.to_string(),
        })?;
    }
    // Nodes in byte-wise name order, whatever their input order.
    let mut nodes: Vec<NodeId> = index.node_ids().collect();
    nodes.sort_by(|a, b| {
        index
            .node_facts(*a)
            .name
            .as_bytes()
            .cmp(index.node_facts(*b).name.as_bytes())
    });

    let mut report = Report::default();
    for pod in &input.pods {
        let outcome = schedule_pod(&index, &mut state, &mut claims, &nodes, pod);
        report.results.push(outcome);
    }
    report.steps = report.results.iter().map(|r| r.steps).sum();
    report.allocate_calls = report.results.iter().map(|r| r.allocate_calls).sum();
    Ok(report)
}

fn claim_display(claim: &ResourceClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or("default"),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

fn schedule_pod(
    index: &Index,
    state: &mut AllocatedState,
    claims: &mut ClaimStore,
    nodes: &[NodeId],
    pod: &Pod,
) -> PodOutcome {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let mut outcome = PodOutcome::new(format!("{namespace}/{pod_name}"));
    let claim_names = match claims.claims_of_pod(pod) {
        Ok(names) => names,
        Err(PodClaimError(message)) => {
            outcome.status = PodStatus::Unschedulable;
            outcome.reason = Some(message);
            return outcome;
        }
    };
    // Already allocated claims only restrict the node; the others are allocated together.
    let mut to_allocate = Vec::new();
    let mut prepared = Vec::new();
    let mut pinned = Vec::new();
    for name in &claim_names {
        // `claims_of_pod` only returns names of claims in the store.
        let Some(claim) = claims.get(namespace, name) else {
            continue;
        };
        match claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
            Some(allocation) => pinned.push(allocation.node_selector.clone()),
            None => {
                to_allocate.push(name.clone());
                prepared.push(PreparedClaim::new(index, claim));
            }
        }
    }
    let prepared_refs: Vec<&PreparedClaim> = prepared.iter().collect();

    for &node in nodes {
        let facts = index.node_facts(node);
        if !crate::fit::pod_node_name_and_selector_fit(pod, facts) {
            continue;
        }
        let pinned_ok = pinned.iter().all(|selector| match selector {
            None => true,
            // An unparsable node selector on an allocation makes the node unusable.
            Some(selector) => {
                dra_alloc::node_selector::node_selector_matches(selector, facts).unwrap_or(false)
            }
        });
        if !pinned_ok {
            continue;
        }
        if prepared_refs.is_empty() {
            outcome.status = PodStatus::Scheduled;
            outcome.node = Some(facts.name.clone());
            return outcome;
        }
        let (result, stats) = allocate(index, state, node, &prepared_refs);
        outcome.steps += stats.steps;
        outcome.allocate_calls += 1;
        match result {
            Outcome::Allocated(results) => {
                outcome.status = PodStatus::Scheduled;
                outcome.node = Some(facts.name.clone());
                for (name, allocation) in to_allocate.iter().zip(results) {
                    record_allocation(index, state, claims, namespace, name, &allocation);
                    outcome.allocations.insert(name.clone(), allocation);
                }
                return outcome;
            }
            Outcome::Unsatisfiable(_) => continue,
            Outcome::Fatal(error) => {
                outcome.status = PodStatus::Error;
                outcome.error = Some(error.message);
                return outcome;
            }
        }
    }
    outcome.status = PodStatus::Unschedulable;
    outcome
}

fn record_allocation(
    index: &Index,
    state: &mut AllocatedState,
    claims: &mut ClaimStore,
    namespace: &str,
    name: &str,
    allocation: &AllocationResult,
) {
    // The allocator produced these results from the index, so their quantities parse.
    let _ = state.add(index, allocation);
    claims.set_allocation(namespace, name, allocation.clone());
}

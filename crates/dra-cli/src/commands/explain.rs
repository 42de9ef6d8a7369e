//! `dra explain NAMESPACE/POD`: why a pod is pending (per node, claim and request) and what
//! would let it fit; for a placed pod, where it went and why there.
//!
//! The explanation comes from the same simulation as `dra simulate` (default node pick), at the
//! moment the pod was tried: pods ahead of it in the queue have taken their devices, pods behind
//! it have not.

use dra_sim::explain::{ClaimDiagnosis, Diagnosis, NodeDiagnosis, RequestDiagnosis};
use dra_sim::{PodResult, PodState, SimInput, SimOptions};

use crate::Failure;
use crate::cli::{ExplainArgs, OutputFormat};
use crate::commands::simulate::devices_text;
use crate::input;
use crate::output::Out;

pub fn run(out: &Out, args: &ExplainArgs) -> Result<(), Failure> {
    let loaded = input::load(out, &args.inputs.files)?;
    let sim_input = SimInput::from_cluster(&loaded.cluster);
    let wanted = if args.pod.contains('/') {
        args.pod.clone()
    } else {
        format!("default/{}", args.pod)
    };
    let options = SimOptions {
        explain: dra_sim::ExplainOptions {
            max_nodes: usize::MAX,
            release_hints: true,
        },
        ..SimOptions::default()
    };
    let simulation = dra_sim::simulate(&sim_input, &options).map_err(|e| Failure::Input(e.to_string()))?;
    let Some(result) = simulation.result(&wanted) else {
        let known: Vec<&str> = simulation.results.iter().map(|r| r.pod.as_str()).collect();
        return Err(Failure::Input(format!(
            "pod {wanted} is not in the input (pods: {})",
            if known.is_empty() { "none".to_string() } else { known.join(", ") }
        )));
    };
    match out.format {
        OutputFormat::Json | OutputFormat::Yaml => out.data(result),
        OutputFormat::Table => out.text(&render(result)),
    }
}

fn render(result: &PodResult) -> String {
    let mut text = format!("Pod {} (priority {})", result.pod, result.priority);
    match result.status {
        PodState::Scheduled => {
            let node = result.node.as_deref().unwrap_or_default();
            text.push_str(&format!(" is scheduled on {node}.\n"));
            let devices = devices_text(&result.allocations, result.node.as_deref());
            if !devices.is_empty() {
                text.push_str(&format!("  devices: {devices}\n"));
            }
            for (resource, served) in &result.extended_resources {
                text.push_str(&format!("  {resource}: served by {served}\n"));
            }
            if let Some(status) = &result.extended_resource_claim_status {
                text.push_str(&format!("  extendedResourceClaimStatus: claim {}", status.resource_claim_name));
                for m in &status.request_mappings {
                    text.push_str(&format!("; {}/{} -> {}", m.container_name, m.resource_name, m.request_name));
                }
                text.push('\n');
            }
            if let Some(placement) = &result.placement {
                if let Some(score) = &placement.score {
                    text.push_str(&format!(
                        "  score {} (TaintToleration {}, NodeAffinity {}, NodeResourcesFit {}, BalancedAllocation {}, DynamicResources {})\n",
                        score.total,
                        score.taint_toleration,
                        score.node_affinity.map_or("-".to_string(), |v| v.to_string()),
                        score.node_resources_fit,
                        score.balanced_allocation.map_or("-".to_string(), |v| v.to_string()),
                        score.dynamic_resources
                    ));
                }
                if let Some(runner) = &placement.runner_up {
                    text.push_str(&format!("  next best: {} with score {}\n", runner.node, runner.total));
                }
                match placement.feasible_nodes {
                    Some(n) => text.push_str(&format!("  {n} feasible node(s); the allocator ran on {}\n", placement.allocator_calls)),
                    None => text.push_str(&format!(
                        "  the allocator ran on {} node(s), best score first (the other scores cannot differ between nodes)\n",
                        placement.allocator_calls
                    )),
                }
            }
        }
        PodState::Running => {
            text.push_str(&format!(
                " is running on {} (bound in the input).\n",
                result.node.as_deref().unwrap_or_default()
            ));
        }
        PodState::Evicted | PodState::Skipped => {
            text.push_str(&format!(" is not scheduled: {}\n", result.reason.as_deref().unwrap_or_default()));
        }
        PodState::Error => {
            text.push_str(&format!(
                " cannot be scheduled: the attempt fails with an error:\n  {}\n",
                result.error.as_deref().unwrap_or_default()
            ));
        }
        PodState::Unschedulable => {
            text.push_str(" is pending.\n");
            match &result.diagnosis {
                Some(diagnosis) => render_diagnosis(&mut text, diagnosis),
                None => text.push_str(&format!("  {}\n", result.reason.as_deref().unwrap_or_default())),
            }
        }
    }
    for note in &result.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    text
}

fn render_diagnosis(text: &mut String, diagnosis: &Diagnosis) {
    text.push_str(&format!("{}\n", diagnosis.message));
    for node in &diagnosis.nodes {
        render_node(text, node);
    }
    if diagnosis.nodes_not_shown > 0 {
        text.push_str(&format!("\n({} more nodes not shown)\n", diagnosis.nodes_not_shown));
    }
    if !diagnosis.hints.is_empty() {
        text.push_str("\nWhat would change it:\n");
        for hint in &diagnosis.hints {
            text.push_str(&format!("  - {hint}\n"));
        }
    }
}

fn render_node(text: &mut String, node: &NodeDiagnosis) {
    text.push_str(&format!("\nnode {}:\n", node.node));
    for failure in &node.failures {
        text.push_str(&format!("  {}: {}", failure.plugin, failure.reason));
        if let Some(detail) = &failure.detail {
            text.push_str(&format!(" ({detail})"));
        }
        text.push('\n');
    }
    for pool in &node.pools {
        text.push_str(&format!("  pool {}: {}\n", pool.pool, pool.problem));
    }
    for claim in &node.claims {
        render_claim(text, claim);
    }
}

fn render_claim(text: &mut String, claim: &ClaimDiagnosis) {
    text.push_str(&format!("  claim {}:\n", claim.claim));
    for request in &claim.requests {
        render_request(text, request);
    }
    for constraint in &claim.constraints {
        let values: Vec<String> = constraint.values.iter().map(|(v, n)| format!("{v}: {n}")).collect();
        text.push_str(&format!(
            "    constraint {} {}: free devices per value {{{}}}{}\n",
            constraint.kind,
            constraint.attribute,
            values.join(", "),
            if constraint.satisfiable { "" } else { " - cannot be satisfied" }
        ));
    }
}

fn render_request(text: &mut String, r: &RequestDiagnosis) {
    if r.class_missing {
        text.push_str(&format!(
            "    request {}: device class {} does not exist\n",
            r.request, r.device_class
        ));
        return;
    }
    text.push_str(&format!(
        "    request {} wants {} of class {}: {} devices on the node, class selectors match {}, request selectors match {}; {} free\n",
        r.request, r.wants, r.device_class, r.devices, r.class_matched, r.request_matched, r.available
    ));
    for held in &r.in_use {
        let pods: Vec<String> = held.pods.iter().map(|p| format!("{} (priority {})", p.pod, p.priority)).collect();
        text.push_str(&format!(
            "      in use: {} by claim {}{}\n",
            held.device,
            held.claims.join(", "),
            if pods.is_empty() {
                " (reserved by no pod)".to_string()
            } else {
                format!(" of pod {}", pods.join(", "))
            }
        ));
    }
    for tainted in &r.tainted {
        text.push_str(&format!("      tainted: {} has {}\n", tainted.device, tainted.taint));
    }
    if r.not_on_this_node > 0 {
        text.push_str(&format!("      {} devices are not available on this node\n", r.not_on_this_node));
    }
    for d in &r.capacity_used_up {
        text.push_str(&format!("      capacity used up: {d}\n"));
    }
    for d in &r.counters_used_up {
        text.push_str(&format!("      shared counters used up: {d}\n"));
    }
    for e in &r.selector_errors {
        text.push_str(&format!("      selector error: {e}\n"));
    }
}

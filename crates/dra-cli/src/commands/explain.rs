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
    let simulation =
        dra_sim::simulate(&sim_input, &options).map_err(|e| Failure::Input(e.to_string()))?;
    let Some(result) = simulation.result(&wanted) else {
        let known: Vec<&str> = simulation.results.iter().map(|r| r.pod.as_str()).collect();
        return Err(Failure::Input(format!(
            "pod {wanted} is not in the input (pods: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
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
                text.push_str(&format!(
                    "  extendedResourceClaimStatus: claim {}",
                    status.resource_claim_name
                ));
                for m in &status.request_mappings {
                    text.push_str(&format!(
                        "; {}/{} -> {}",
                        m.container_name, m.resource_name, m.request_name
                    ));
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
                    text.push_str(&format!(
                        "  next best: {} with score {}\n",
                        runner.node, runner.total
                    ));
                }
                for node in &placement.passed_over {
                    text.push_str(&format!(
                        "  {} ranked higher, but the claims do not fit there:\n",
                        node.node
                    ));
                    let mut nested = String::new();
                    render_node(&mut nested, node);
                    for line in nested.lines().skip(2) {
                        text.push_str(&format!("  {line}\n"));
                    }
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
            text.push_str(&format!(
                " is not scheduled: {}\n",
                result.reason.as_deref().unwrap_or_default()
            ));
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
                None => text.push_str(&format!(
                    "  {}\n",
                    result.reason.as_deref().unwrap_or_default()
                )),
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
        text.push_str(&format!(
            "\n({} more nodes not shown)\n",
            diagnosis.nodes_not_shown
        ));
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
        let values: Vec<String> = constraint
            .values
            .iter()
            .map(|(v, n)| format!("{v}: {n}"))
            .collect();
        text.push_str(&format!(
            "    constraint {} {}: free devices per value {{{}}}{}\n",
            constraint.kind,
            constraint.attribute,
            values.join(", "),
            if constraint.satisfiable {
                ""
            } else {
                " - cannot be satisfied"
            }
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
        let pods: Vec<String> = held
            .pods
            .iter()
            .map(|p| format!("{} (priority {})", p.pod, p.priority))
            .collect();
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
        text.push_str(&format!(
            "      tainted: {} has {}\n",
            tainted.device, tainted.taint
        ));
    }
    if r.not_on_this_node > 0 {
        text.push_str(&format!(
            "      {} devices are not available on this node\n",
            r.not_on_this_node
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn explain(pod: &str) -> String {
        let loaded = dra_api::load_str(crate::input::BUILTIN_NAME, crate::input::BUILTIN_EXAMPLE);
        let simulation = dra_sim::simulate(
            &SimInput::from_cluster(&loaded.cluster),
            &SimOptions::default(),
        )
        .expect("simulates");
        render(simulation.result(pod).expect("pod"))
    }

    #[test]
    fn pending_pod_per_node_claim_and_request() {
        let text = explain("research/train-llm");
        for wanted in [
            "is pending",
            "0/3 nodes are available: 3 cannot allocate all claims.",
            "node gpu-node-a:",
            "request gpus wants 8 of class gpu.example.com",
            "in use: gpu.example.com/gpu-node-a/gpu-0 by claim batch/batch-a-gpus of pod batch/batch-a (priority 100)",
            "tainted: gpu.example.com/gpu-node-b/gpu-7 has example.com/unhealthy=ecc-errors:NoSchedule",
            "would fit on gpu-node-a if claim batch/batch-a-gpus released 2 devices",
            "does not preempt",
        ] {
            assert!(text.contains(wanted), "missing {wanted:?} in:\n{text}");
        }
    }

    #[test]
    fn scheduled_pod_shows_devices_and_score() {
        let text = explain("legacy-apps/inference-0");
        assert!(text.contains("is scheduled on gpu-node-b"), "{text}");
        assert!(text.contains("example.com/gpu: served by DRA"), "{text}");
        assert!(
            text.contains("server/example.com/gpu -> container-0-request-1"),
            "{text}"
        );
        let device_plugin = explain("legacy-apps/inference-1");
        assert!(
            device_plugin.contains("example.com/gpu: served by device plugin"),
            "{device_plugin}"
        );
    }

    #[test]
    fn nodes_passed_over_say_why() {
        let text = explain("research/finetune");
        for wanted in [
            "is scheduled on gpu-node-a",
            "gpu-node-b ranked higher, but the claims do not fit there",
            "tainted: gpu.example.com/gpu-node-b/gpu-7",
            "constraint matchAttribute resource.kubernetes.io/numaNode: free devices per value {0: 3, 1: 3} - cannot be satisfied",
        ] {
            assert!(text.contains(wanted), "missing {wanted:?} in:\n{text}");
        }
    }
}

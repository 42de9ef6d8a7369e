//! `dra simulate`: where the scheduler puts each pod, with which devices; which stay pending
//! and why.
//!
//! `--node-pick first-fit` runs the conformance reference loop (its JSON is the conformance
//! shape); `scored` (default) and `most-allocated` run the scheduler model of `dra-sim`. The
//! rendering helpers here are shared with `dra explain`.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use dra_sim::scheduler::{Eviction, Simulation};
use dra_sim::{
    ClaimAllocations, PodOutcome, PodResult, PodState, PodStatus, Report, SimInput, SimOptions,
    Snapshot,
};
use serde::ser::{Error as _, Serialize, SerializeSeq, SerializeStruct, Serializer};

use crate::Failure;
use crate::cli::{NodePick, OutputFormat, SimulateArgs};
use crate::commands::table;
use crate::helper::Helper;
use crate::input;
use crate::output::{Out, StdoutDirect, write_json};

pub fn run(out: &Out, args: &SimulateArgs) -> Result<(), Failure> {
    // The snapshot holds what the simulation needs of the slices, which are most of a large
    // cluster's memory; only `-o yaml` prints them again (and needs them as objects).
    let (loaded, snapshot, helper) = if out.format == OutputFormat::Yaml {
        let loaded = input::load(out, &args.inputs.files)?;
        let snapshot = input::snapshot(&loaded)?;
        (loaded, snapshot, None)
    } else {
        // Converts slices while the input is read, then writes the first-fit document.
        let helper = Helper::start();
        // First, while it waits for the input's first slice: the CEL environment the index's
        // selector compiler shares (some 250 function declarations, 0.15 M instructions that
        // were the index's largest part on this thread for small inputs).
        drop(helper.run(dra_alloc::prepare_selector_environment));
        let (mut loaded, snapshot) = input::load_snapshot(out, &args.inputs.files, &helper)?;
        crate::leave_to_exit(crate::take_slices(&mut loaded.cluster));
        (loaded, snapshot, Some(helper))
    };
    let sim_input = SimInput::from_cluster(&loaded.cluster);
    let model_pick = match args.node_pick {
        NodePick::FirstFit => None,
        NodePick::Scored => Some(dra_sim::NodePick::Scored),
        NodePick::MostAllocated => Some(dra_sim::NodePick::MostAllocated),
    };
    let result = match model_pick {
        None => run_reference(out, &sim_input, &snapshot, helper),
        Some(pick) => {
            // The model's threads filter nodes beside this one; the helper would only wait.
            drop(helper);
            let options = SimOptions {
                node_pick: pick,
                threads: args.threads,
                ..SimOptions::default()
            };
            run_model(out, &loaded.cluster, &sim_input, &snapshot, &options)
        }
    };
    drop(sim_input);
    crate::leave_to_exit(snapshot);
    crate::leave_to_exit(loaded);
    result
}

/// The scheduler model.
fn run_model(
    out: &Out,
    cluster: &dra_api::Cluster,
    sim_input: &SimInput<'_>,
    snapshot: &Snapshot,
    options: &SimOptions,
) -> Result<(), Failure> {
    let simulation = dra_sim::simulate_snapshot(sim_input, snapshot, options)
        .map_err(|e| Failure::Input(e.to_string()))?;
    crate::timings::mark("simulate");
    match out.format {
        OutputFormat::Json => out.data(&simulation)?,
        OutputFormat::Yaml => out.text(&resulting_objects(cluster, &simulation)?)?,
        OutputFormat::Table => out.text(&render(&simulation))?,
    }
    crate::timings::mark("output");
    let pending = simulation
        .results
        .iter()
        .any(|r| matches!(r.status, PodState::Unschedulable | PodState::Error));
    crate::leave_to_exit(simulation);
    if pending {
        return Err(Failure::Findings);
    }
    Ok(())
}

/// The conformance reference loop. Its document is the answer, pending pods included, so it
/// exits 0 whenever it ran: `conformance/compare.py` treats any other exit code as a failed
/// case.
fn run_reference(
    out: &Out,
    input: &SimInput<'_>,
    snapshot: &Snapshot,
    helper: Option<Helper>,
) -> Result<(), Failure> {
    if out.format == OutputFormat::Json {
        return stream_reference(input, snapshot, helper.unwrap_or_else(Helper::start));
    }
    drop(helper);
    let report = dra_sim::run_first_fit_snapshot(input, snapshot)
        .map_err(|e| Failure::Input(e.to_string()))?;
    crate::timings::mark("simulate");
    let result = match out.format {
        OutputFormat::Json | OutputFormat::Yaml => out.data(&report),
        OutputFormat::Table => out.text(&render_reference(&report)),
    };
    crate::timings::mark("output");
    crate::leave_to_exit(report);
    result
}

/// Outcomes handed to the JSON writer at once: a thread wake-up per pod would cost more
/// than writing it. A batch stays within the blocks that share their mimalloc page
/// ([`crate::SMALL_BLOCK_MAX`]). The last pods' outcomes go one by one
/// ([`hand_over_now`]).
const HANDED_AT_ONCE: usize = 32;
const _: () = assert!(HANDED_AT_ONCE * std::mem::size_of::<PodOutcome>() <= crate::SMALL_BLOCK_MAX);

/// Whether the loop hands its batch of `batched` outcomes to the writer now, with `left`
/// pods still to decide: when the batch is full, and for each of the last
/// [`HANDED_AT_ONCE`] pods. The writer keeps up with the loop (an outcome takes it less
/// time to write than the loop to decide), so what it has left to write once the loop ends
/// is one outcome instead of a batch: a batch of 32 took the writer about 0.1 ms after
/// gpu-nic's loop had ended.
fn hand_over_now(batched: usize, left: usize) -> bool {
    batched >= HANDED_AT_ONCE || left < HANDED_AT_ONCE
}

/// What the reference loop hands the JSON writer.
enum Handed {
    Outcomes(Vec<PodOutcome>),
    /// The end of the loop, with its totals.
    Done {
        steps: u64,
        allocate_calls: u64,
    },
    /// The loop stopped without its totals: an input error before it started, or a panic.
    Stopped,
}

/// The way from the reference loop to the JSON writer.
type HandOver = crate::hand_over::HandOver<Handed>;

/// Hands the writer [`Handed::Stopped`] when dropped before the loop's end was handed over
/// (an input error, or a panic unwinding), so the writer never waits for ever.
struct StopUnlessDone<'a> {
    hand_over: &'a HandOver,
    done: bool,
}

impl Drop for StopUnlessDone<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.hand_over.send(Handed::Stopped);
        }
    }
}

/// The reference loop with its JSON document written by a second thread while the loop
/// runs, outcome by outcome as the loop decides them (writing it after the loop took 5-8%
/// of a small run's time); the document is [`Report`]'s, byte for byte. Nothing is written unless
/// the loop starts: its input errors come before the first outcome.
fn stream_reference(
    input: &SimInput<'_>,
    snapshot: &Snapshot,
    helper: Helper,
) -> Result<(), Failure> {
    let hand_over = Arc::new(HandOver::default());
    // The helper has a while before the first outcomes come: it takes a share of the pools
    // the loop gathers before its first pod (0.1 ms of gpu-nic's loop on this thread alone).
    helper.run(dra_sim::gather_pools_from_the_last_node(snapshot));
    // In small runs, the writer computes the nodes' candidate devices ahead of the loop
    // while it waits for outcomes.
    let candidates = dra_sim::CandidatesAhead::new(input, snapshot);
    // Made here, so that the writer allocates nothing.
    let stdout = StdoutDirect::new();
    let writer = {
        let hand_over = Arc::clone(&hand_over);
        helper.run(move || write_handed(stdout, &hand_over, candidates))
    };
    let mut stop = StopUnlessDone {
        hand_over: &hand_over,
        done: false,
    };
    let mut batch = Vec::with_capacity(HANDED_AT_ONCE);
    let mut decided = 0;
    let ran = dra_sim::run_first_fit_snapshot_each(input, snapshot, |outcome| {
        batch.push(outcome);
        decided += 1;
        let left = input.pods.len().saturating_sub(decided);
        if hand_over_now(batch.len(), left) {
            // Room for what the next batch holds: one outcome near the end (the writer
            // leaves the batches to the process exit, so room unused is fresh memory).
            let room = if left < HANDED_AT_ONCE {
                1
            } else {
                HANDED_AT_ONCE
            };
            let full = std::mem::replace(&mut batch, Vec::with_capacity(room));
            hand_over.send(Handed::Outcomes(full));
        }
    });
    if let Ok(report) = &ran {
        hand_over.send(Handed::Outcomes(batch));
        hand_over.send(Handed::Done {
            steps: report.steps,
            allocate_calls: report.allocate_calls,
        });
        stop.done = true;
        crate::timings::mark("simulate");
    }
    drop(stop);
    // A panic in the writer is a bug; it is raised again here.
    let written = writer.join();
    let report = ran.map_err(|e| Failure::Input(e.to_string()))?;
    crate::timings::mark("output");
    crate::leave_to_exit(report);
    written
}

/// The writer thread of [`stream_reference`]: the document, once the loop hands over its
/// first outcomes or its end; nothing when the loop stops before it starts.
fn write_handed(
    stdout: StdoutDirect,
    hand_over: &HandOver,
    candidates: Option<dra_sim::CandidatesAhead>,
) -> Result<(), Failure> {
    let candidates = RefCell::new(candidates);
    let first = receive(hand_over, &candidates);
    if matches!(first.first(), Some(Handed::Stopped)) {
        crate::leave_to_exit(stdout);
        return Ok(());
    }
    write_json(
        stdout,
        &HandedReport {
            first: Cell::new(first),
            hand_over,
            candidates: &candidates,
            totals: Cell::new(None),
        },
    )
}

/// What the loop handed over since the last call, waiting until there is something and
/// computing nodes' candidates meanwhile; [`Handed::Stopped`] when the loop panicked while
/// handing over.
fn receive(
    hand_over: &HandOver,
    candidates: &RefCell<Option<dra_sim::CandidatesAhead>>,
) -> Vec<Handed> {
    let mut candidates = candidates.borrow_mut();
    hand_over
        .receive_or_work(|| candidates.as_mut().is_some_and(|c| c.next_node()))
        .unwrap_or_else(|| vec![Handed::Stopped])
}

/// [`Report`]'s document, its results taken from the loop as they come: the same fields in
/// the same order (the derived `Serialize` of `Report`; its other fields are skipped).
struct HandedReport<'a> {
    first: Cell<Vec<Handed>>,
    hand_over: &'a HandOver,
    /// Computed while the writer waits.
    candidates: &'a RefCell<Option<dra_sim::CandidatesAhead>>,
    /// Set when the results end.
    totals: Cell<Option<(u64, u64)>>,
}

impl Serialize for HandedReport<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut report = serializer.serialize_struct("Report", 3)?;
        report.serialize_field("results", &HandedResults(self))?;
        let (steps, allocate_calls) = self
            .totals
            .get()
            .ok_or_else(|| S::Error::custom("the simulation stopped midway"))?;
        report.serialize_field("steps", &steps)?;
        report.serialize_field("allocate_calls", &allocate_calls)?;
        report.end()
    }
}

/// The `results` list of a [`HandedReport`].
struct HandedResults<'a>(&'a HandedReport<'a>);

impl Serialize for HandedResults<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let report = self.0;
        let mut results = serializer.serialize_seq(None)?;
        let mut handed = report.first.take();
        loop {
            for item in handed.drain(..) {
                match item {
                    Handed::Outcomes(outcomes) => {
                        for outcome in &outcomes {
                            results.serialize_element(outcome)?;
                        }
                        // Like the report, left to the process exit.
                        crate::leave_to_exit(outcomes);
                    }
                    Handed::Done {
                        steps,
                        allocate_calls,
                    } => report.totals.set(Some((steps, allocate_calls))),
                    Handed::Stopped => {
                        return Err(S::Error::custom("the simulation stopped midway"));
                    }
                }
            }
            crate::leave_to_exit(handed);
            if report.totals.get().is_some() {
                return results.end();
            }
            handed = receive(report.hand_over, report.candidates);
        }
    }
}

/// `claim: device device` per allocation, device names without driver and pool when the
/// pool is named after the node (the usual node-local driver).
pub(crate) fn devices_text(allocations: &ClaimAllocations, node: Option<&str>) -> String {
    allocations
        .iter()
        .map(|(claim, allocation)| {
            let devices: Vec<String> = allocation
                .result()
                .devices
                .iter()
                .flat_map(|d| d.results.iter().flatten())
                .map(|r| {
                    if Some(r.pool.as_str()) == node {
                        r.device.clone()
                    } else {
                        format!("{}/{}", r.pool, r.device)
                    }
                })
                .collect();
            format!("{claim}: {}", devices.join(","))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn placement_text(result: &PodResult) -> String {
    let mut parts = Vec::new();
    let devices = devices_text(&result.allocations, result.node.as_deref());
    if !devices.is_empty() {
        parts.push(devices);
    }
    for (resource, served) in &result.extended_resources {
        if served == "device plugin" {
            parts.push(format!("{resource} from the device plugin"));
        }
    }
    parts.join("; ")
}

fn eviction_when(eviction: &Eviction) -> String {
    match (&eviction.at, eviction.after_seconds) {
        (Some(at), _) => at.clone(),
        (None, 0) => "at once".to_string(),
        (None, s) => format!("{s}s after the taint was added"),
    }
}

/// The readable report of a simulation.
pub(crate) fn render(simulation: &Simulation) -> String {
    let mut text = String::new();
    let mut by_queue: Vec<&PodResult> = simulation
        .results
        .iter()
        .filter(|r| r.status == PodState::Scheduled)
        .collect();
    by_queue.sort_by_key(|r| r.queue_position);
    if !by_queue.is_empty() {
        let rows: Vec<Vec<String>> = by_queue
            .iter()
            .map(|r| {
                vec![
                    r.pod.clone(),
                    r.node.clone().unwrap_or_default(),
                    r.priority.to_string(),
                    placement_text(r),
                ]
            })
            .collect();
        text.push_str(&format!(
            "SCHEDULED (in queue order, --node-pick {})\n",
            simulation.node_pick
        ));
        text.push_str(&table(&["POD", "NODE", "PRIORITY", "DEVICES"], &rows));
    }
    let running: Vec<Vec<String>> = simulation
        .results
        .iter()
        .filter(|r| r.status == PodState::Running)
        .map(|r| {
            vec![
                r.pod.clone(),
                r.node.clone().unwrap_or_default(),
                r.priority.to_string(),
                r.notes.join("; "),
            ]
        })
        .collect();
    if !running.is_empty() {
        text.push_str("\nRUNNING (bound in the input)\n");
        text.push_str(&table(&["POD", "NODE", "PRIORITY", "NOTE"], &running));
    }
    let pending: Vec<Vec<String>> = simulation
        .results
        .iter()
        .filter(|r| {
            matches!(
                r.status,
                PodState::Unschedulable | PodState::Error | PodState::Skipped
            )
        })
        .map(|r| {
            let status = match r.status {
                PodState::Error => "error",
                PodState::Skipped => "skipped",
                _ => "pending",
            };
            vec![
                r.pod.clone(),
                status.to_string(),
                r.priority.to_string(),
                r.reason
                    .clone()
                    .or_else(|| r.error.clone())
                    .unwrap_or_default(),
            ]
        })
        .collect();
    if !pending.is_empty() {
        text.push_str("\nNOT SCHEDULED (dra explain NAMESPACE/POD for details)\n");
        text.push_str(&table(&["POD", "STATUS", "PRIORITY", "REASON"], &pending));
    }
    if !simulation.evictions.is_empty() {
        let rows: Vec<Vec<String>> = simulation
            .evictions
            .iter()
            .map(|e| {
                let first = &e.reasons[0];
                vec![
                    e.pod.clone(),
                    e.node.clone(),
                    eviction_when(e),
                    format!(
                        "{} {}:{} on {}",
                        first.taint.origin, first.taint.key, first.taint.effect, first.device
                    ),
                ]
            })
            .collect();
        text.push_str("\nEVICTED (device taint eviction controller)\n");
        text.push_str(&table(&["POD", "NODE", "WHEN", "TAINT"], &rows));
    }
    if !simulation.tainted_devices.is_empty() {
        let rows: Vec<Vec<String>> = simulation
            .tainted_devices
            .iter()
            .map(|d| {
                let taints: Vec<String> = d
                    .taints
                    .iter()
                    .map(|t| {
                        format!(
                            "{}{}:{} ({})",
                            t.key,
                            t.value
                                .as_deref()
                                .map(|v| format!("={v}"))
                                .unwrap_or_default(),
                            t.effect,
                            t.origin
                        )
                    })
                    .collect();
                let held = if d.allocated_to.is_empty() {
                    "free".to_string()
                } else {
                    d.allocated_to.join(", ")
                };
                vec![d.device.clone(), taints.join("; "), held]
            })
            .collect();
        text.push_str(
            "
TAINTED DEVICES (only requests that tolerate a NoSchedule/NoExecute taint get the device)
",
        );
        text.push_str(&table(&["DEVICE", "TAINTS", "ALLOCATED TO"], &rows));
    }
    for would in &simulation.would_evict {
        let first = &would.reasons[0];
        text.push_str(&format!(
            "\nnote: {} would be evicted if {} {} (effect None) were NoExecute\n",
            would.pod, first.taint.origin, first.taint.key
        ));
    }
    for duplicate in &simulation.extended_resources.duplicates {
        text.push_str(&format!(
            "\nnote: extendedResourceName {} is set by several DeviceClasses; the scheduler uses {} and ignores {}\n",
            duplicate.resource_name,
            duplicate.winner,
            duplicate.ignored.join(", ")
        ));
    }
    for note in &simulation.notes {
        text.push_str(&format!("\nnote: {note}\n"));
    }
    let s = &simulation.summary;
    text.push_str(&format!(
        "\n{} pods: {} scheduled, {} pending, {} errors, {} running, {} evicted, {} skipped\n",
        s.pods, s.scheduled, s.unschedulable, s.error, s.running, s.evicted, s.skipped
    ));
    text
}

/// Every object of the input, with the claims and pods as the simulation leaves them, as
/// multi-document YAML that `dra simulate` and `dra explain` read again.
fn resulting_objects(
    cluster: &dra_api::Cluster,
    simulation: &Simulation,
) -> Result<String, Failure> {
    fn push<T: serde::Serialize>(
        docs: &mut Vec<serde_json::Value>,
        object: &T,
    ) -> Result<(), Failure> {
        docs.push(
            serde_json::to_value(object)
                .map_err(|e| Failure::Internal(format!("cannot render YAML: {e}")))?,
        );
        Ok(())
    }
    let mut docs = Vec::new();
    macro_rules! all {
        ($($field:ident),*) => {
            $( for o in &cluster.$field { push(&mut docs, &o.object)?; } )*
        };
    }
    all!(
        namespaces,
        priority_classes,
        device_classes,
        nodes,
        resource_slices,
        device_taint_rules,
        resource_claim_templates
    );
    for claim in simulation.claims.all() {
        push(&mut docs, claim)?;
    }
    let input = SimInput::from_cluster(cluster);
    for pod in simulation.resulting_pods(&input).iter().flatten() {
        push(&mut docs, pod)?;
    }
    all!(
        service_accounts,
        deployments,
        stateful_sets,
        daemon_sets,
        replica_sets,
        jobs,
        cron_jobs,
        roles,
        cluster_roles,
        role_bindings,
        cluster_role_bindings
    );
    serde_saphyr::to_string_multiple(&docs)
        .map_err(|e| Failure::Internal(format!("cannot render YAML: {e}")))
}

fn render_reference(report: &Report) -> String {
    let rows: Vec<Vec<String>> = report
        .results
        .iter()
        .map(|r| {
            let detail = match r.status {
                PodStatus::Scheduled => devices_text(&r.allocations, r.node.as_deref()),
                PodStatus::Error => r.error.clone().unwrap_or_default(),
                PodStatus::Unschedulable => r
                    .reason
                    .clone()
                    .unwrap_or_else(|| "no node can allocate the pod's claims".to_string()),
            };
            vec![
                r.pod.clone(),
                format!("{:?}", r.status).to_lowercase(),
                r.node.clone().unwrap_or_else(|| "-".to_string()),
                detail,
            ]
        })
        .collect();
    let scheduled = report
        .results
        .iter()
        .filter(|r| r.status == PodStatus::Scheduled)
        .count();
    let mut text = table(&["POD", "STATUS", "NODE", "DEVICES / REASON"], &rows);
    text.push_str(&format!(
        "\n{scheduled} of {} pods scheduled, {} pending\n",
        report.results.len(),
        report.results.len() - scheduled
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> (dra_api::Cluster, Simulation) {
        let loaded = dra_api::load_str(crate::input::BUILTIN_NAME, crate::input::BUILTIN_EXAMPLE);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        let simulation = dra_sim::simulate(
            &SimInput::from_cluster(&loaded.cluster),
            &SimOptions::default(),
        )
        .expect("simulates");
        (loaded.cluster, simulation)
    }

    /// Full batches go at once, and so does every outcome of the last pods; nothing waits
    /// for a batch that cannot fill.
    #[test]
    fn batches_are_full_but_the_last_pods_go_one_by_one() {
        assert!(!hand_over_now(1, 1000));
        assert!(!hand_over_now(HANDED_AT_ONCE - 1, HANDED_AT_ONCE));
        assert!(hand_over_now(HANDED_AT_ONCE, 1000));
        assert!(hand_over_now(1, HANDED_AT_ONCE - 1));
        assert!(hand_over_now(1, 0));
        // What a run of 100 pods hands over: three full batches, then the last pods one by
        // one from the first whose outcome leaves fewer than a batch to decide.
        let (mut batched, mut sizes) = (0, Vec::new());
        for decided in 1..=100usize {
            batched += 1;
            if hand_over_now(batched, 100 - decided) {
                sizes.push(batched);
                batched = 0;
            }
        }
        let mut expected = vec![32, 32];
        // The 69th outcome leaves 31: the third batch goes with 5, then 31 singles.
        expected.push(69 - 64);
        expected.extend(std::iter::repeat_n(1, 31));
        assert_eq!(sizes, expected);
    }

    #[test]
    fn the_table_tells_the_example_story() {
        let (_, simulation) = example();
        let text = render(&simulation);
        for wanted in [
            "legacy-apps/inference-1  legacy-gpu-node",
            "example.com/gpu from the device plugin",
            "inference-0-extended-resources: gpu-1",
            "inference-5-extended-resources: gpu-2",
            "finetune-gpus: gpu-4,gpu-5,gpu-6,gpu-7",
            "research/train-llm",
            "the scheduler does not preempt pods for DRA devices",
            "gpu.example.com/gpu-node-b/gpu-7  example.com/unhealthy=ecc-errors:NoSchedule",
        ] {
            assert!(text.contains(wanted), "missing {wanted:?} in:\n{text}");
        }
    }

    #[test]
    fn yaml_output_feeds_back_into_the_simulation() {
        let (cluster, first) = example();
        let yaml = resulting_objects(&cluster, &first).expect("renders");
        let loaded = dra_api::load_str("result.yaml", &yaml);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        assert!(
            dra_api::validate(&loaded.cluster)
                .iter()
                .all(|d| !d.is_error())
        );
        let second = dra_sim::simulate(
            &SimInput::from_cluster(&loaded.cluster),
            &SimOptions::default(),
        )
        .expect("simulates");
        for (before, after) in first.results.iter().zip(&second.results) {
            assert_eq!(before.pod, after.pod);
            match before.status {
                // Placed pods come back bound to the same node.
                PodState::Scheduled | PodState::Running => {
                    assert_eq!(after.status, PodState::Running, "{}", after.pod);
                    assert_eq!(before.node, after.node);
                }
                other => assert_eq!(after.status, other, "{}", after.pod),
            }
        }
    }
}

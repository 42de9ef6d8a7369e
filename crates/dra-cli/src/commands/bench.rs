//! `dra bench`: named suites over generated clusters.
//!
//! Each suite generates its cluster in memory (as JSON, not timed), then measures in a fresh
//! child process (so peak memory is the suite's own): reading the input (`dra-api`) as
//! `dra simulate FILE` reads it, and the simulation (index, claims, allocation). Timings are
//! wall clock on this machine; the figures that matter for comparisons (allocate calls, search
//! steps, results) are deterministic.

use std::io::Write;
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::Failure;
use crate::cli::{BenchArgs, OutputFormat};
use crate::commands::table;
use crate::output::Out;

/// How a suite places pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Mode {
    /// The conformance reference loop, as upstream's allocator figures were measured.
    FirstFit,
    /// The scheduler model with its default scoring.
    Scored,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::FirstFit => "first-fit",
            Mode::Scored => "scored",
        }
    }
}

/// One suite.
#[derive(Debug, Clone, Copy)]
struct Suite {
    name: &'static str,
    preset: &'static str,
    size: u32,
    quick_size: u32,
    mode: Mode,
    what: &'static str,
}

const SUITES: &[Suite] = &[
    Suite {
        name: "gpu-selector",
        preset: "gpu-selector",
        size: 100,
        quick_size: 10,
        mode: Mode::FirstFit,
        what: "100 HGX nodes x 8 GPUs, 400 pods claiming 2 GPUs by a CEL selector (upstream: 0.68 s of Allocate)",
    },
    Suite {
        name: "scheduler-perf",
        preset: "scheduler-perf",
        size: 500,
        quick_size: 20,
        mode: Mode::FirstFit,
        what: "SchedulingWithResourceClaimTemplate: 5,000 pods on 500 nodes x 10 devices (upstream: 8.1 s)",
    },
    Suite {
        name: "gpu-nic",
        preset: "gpu-nic",
        size: 64,
        quick_size: 8,
        mode: Mode::FirstFit,
        what: "64 HGX nodes, 256 pods claiming 2 GPUs and a NIC on one PCIe root (upstream: 0.25 s)",
    },
    Suite {
        name: "adversarial-match",
        preset: "adversarial-match",
        size: 1,
        quick_size: 1,
        mode: Mode::FirstFit,
        what: "one claim of 8 requests under a matchAttribute over 13 devices, no solution (upstream: 12.3 s)",
    },
    Suite {
        name: "adversarial-first-available",
        preset: "adversarial-first-available",
        size: 1,
        quick_size: 1,
        mode: Mode::FirstFit,
        what: "5 firstAvailable requests whose first combinations exceed the node or the 32-result limit",
    },
    Suite {
        name: "steady-state-empty",
        preset: "steady-state-empty",
        size: 500,
        quick_size: 20,
        mode: Mode::Scored,
        what: "scheduler_perf steady state, empty cluster: 500 nodes x 10 devices",
    },
    Suite {
        name: "steady-state-half",
        preset: "steady-state-half",
        size: 500,
        quick_size: 20,
        mode: Mode::Scored,
        what: "steady state with half of the devices allocated",
    },
    Suite {
        name: "steady-state-full",
        preset: "steady-state-full",
        size: 500,
        quick_size: 20,
        mode: Mode::Scored,
        what: "steady state with all but 10 devices allocated",
    },
    Suite {
        name: "partitionable",
        preset: "partitionable",
        size: 100,
        quick_size: 5,
        mode: Mode::Scored,
        what: "MIG-style partitionable GPUs (shared counters), 100 nodes",
    },
    Suite {
        name: "consumable-capacity",
        preset: "consumable-capacity",
        size: 100,
        quick_size: 5,
        mode: Mode::Scored,
        what: "NICs with consumable bandwidth shared by 32 pods each, 100 nodes",
    },
    Suite {
        name: "extended-resource",
        preset: "extended-resource",
        size: 500,
        quick_size: 20,
        mode: Mode::Scored,
        what: "extended resources backed by DRA with 2,500 device classes, 500 nodes",
    },
    Suite {
        name: "hgx-mixed",
        preset: "hgx-mixed",
        size: 999,
        quick_size: 12,
        mode: Mode::Scored,
        what: "H100/H200/B200 HGX fleet, mixed GPU, GPU+NIC and NUMA-aligned pods at two priorities",
    },
    Suite {
        name: "hgx-10k",
        preset: "hgx",
        size: 10_000,
        quick_size: 20,
        mode: Mode::Scored,
        what: "10,000 HGX nodes (80,000 GPUs), 80,000 single-GPU pods",
    },
];

/// The figures of one suite run.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Figures {
    suite: String,
    preset: String,
    size: u32,
    mode: Mode,
    input_bytes: usize,
    pods: usize,
    scheduled: usize,
    /// Reading and validating nothing: loading the generated JSON into typed objects, the
    /// slices kept as text (as `dra simulate FILE` loads them).
    load_seconds: f64,
    /// Index (the slices' conversion included), claims, allocation and reporting.
    simulate_seconds: f64,
    total_seconds: f64,
    pods_per_second: f64,
    allocate_calls: u64,
    steps: u64,
    peak_rss_mib: f64,
}

pub fn run(out: &Out, args: &BenchArgs) -> Result<(), Failure> {
    if args.list {
        let rows: Vec<Vec<String>> = SUITES
            .iter()
            .map(|s| {
                vec![
                    s.name.to_string(),
                    format!("{}", s.size),
                    s.mode.name().to_string(),
                    s.what.to_string(),
                ]
            })
            .collect();
        return out.text(&table(&["SUITE", "SIZE", "MODE", "WHAT"], &rows));
    }
    if let Some(name) = &args.run_suite {
        // Child process: run one suite and print its figures as JSON.
        let suite = find(name)?;
        let figures = measure(suite, args.size.unwrap_or(suite.size))?;
        return out.text(&format!(
            "{}\n",
            serde_json::to_string(&figures).map_err(|e| Failure::Internal(e.to_string()))?
        ));
    }
    let selected: Vec<&Suite> = if args.suites.is_empty() {
        SUITES.iter().collect()
    } else {
        args.suites
            .iter()
            .map(|n| find(n))
            .collect::<Result<_, _>>()?
    };
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Internal(format!("cannot find the dra executable: {e}")))?;
    let mut results = Vec::new();
    for suite in selected {
        let size = args.size.unwrap_or(if args.quick {
            suite.quick_size
        } else {
            suite.size
        });
        let _ = writeln!(std::io::stderr(), "running {} (size {size})...", suite.name);
        let mut runs = Vec::new();
        for _ in 0..args.repeat {
            let output = Command::new(&exe)
                .args([
                    "bench",
                    "--run-suite",
                    suite.name,
                    "--size",
                    &size.to_string(),
                ])
                .output()
                .map_err(|e| Failure::Internal(format!("cannot run a suite: {e}")))?;
            if !output.status.success() {
                return Err(Failure::Internal(format!(
                    "suite {} failed: {}",
                    suite.name,
                    String::from_utf8_lossy(&output.stderr).trim()
                )));
            }
            let figures: Figures = serde_json::from_slice(&output.stdout).map_err(|e| {
                Failure::Internal(format!("suite {}: bad figures: {e}", suite.name))
            })?;
            runs.push(figures);
        }
        runs.sort_by(|a, b| a.total_seconds.total_cmp(&b.total_seconds));
        let figures = runs.swap_remove(runs.len() / 2);
        results.push(figures);
    }
    match out.format {
        OutputFormat::Json | OutputFormat::Yaml => out.data(&results),
        OutputFormat::Table => out.text(&render(&results)),
    }
}

fn find(name: &str) -> Result<&'static Suite, Failure> {
    SUITES.iter().find(|s| s.name == name).ok_or_else(|| {
        Failure::Input(format!(
            "unknown suite {name:?} (dra bench --list shows them)"
        ))
    })
}

fn render(results: &[Figures]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|f| {
            vec![
                f.suite.clone(),
                f.size.to_string(),
                f.mode.name().to_string(),
                f.pods.to_string(),
                f.scheduled.to_string(),
                format!("{:.3}", f.load_seconds),
                format!("{:.3}", f.simulate_seconds),
                format!("{:.3}", f.total_seconds),
                format!("{:.0}", f.pods_per_second),
                f.allocate_calls.to_string(),
                f.steps.to_string(),
                format!("{:.0}", f.peak_rss_mib),
            ]
        })
        .collect();
    table(
        &[
            "SUITE",
            "SIZE",
            "MODE",
            "PODS",
            "SCHEDULED",
            "LOAD S",
            "SIM S",
            "TOTAL S",
            "PODS/S",
            "ALLOCATE CALLS",
            "STEPS",
            "PEAK MIB",
        ],
        &rows,
    )
}

/// Generates the suite's cluster as JSON, then loads and simulates it, timing both.
fn measure(suite: &Suite, size: u32) -> Result<Figures, Failure> {
    let spec = dra_gen::preset(suite.preset, size).map_err(|e| Failure::Input(e.to_string()))?;
    let mut text = Vec::new();
    dra_gen::generate_json_lines(&spec, &mut text).map_err(|e| Failure::Internal(e.to_string()))?;
    let text = String::from_utf8(text).map_err(|e| Failure::Internal(e.to_string()))?;

    let input_bytes = text.len();
    let start = Instant::now();
    // As `dra simulate FILE` reads its input (`input::load_snapshot`): the loader takes the
    // text, and the slices stay JSON text for the index to convert.
    let loaded = dra_api::load_string_with(
        &format!("<bench:{}>", suite.name),
        text,
        &crate::input::snapshot_load_options(),
    );
    if loaded.has_errors() {
        return Err(Failure::Internal(format!(
            "generated input does not load: {}",
            loaded.diagnostics[0]
        )));
    }
    let loaded_at = Instant::now();
    let mut cluster = loaded.cluster;
    let snapshot = dra_sim::Snapshot::new(&dra_sim::SimInput::from_cluster(&cluster))
        .map_err(|e| Failure::Internal(e.to_string()))?;
    // As `dra simulate` does: the snapshot holds what the simulation needs of the slices. What
    // `dra simulate` leaves to the exit is freed here after the clock stops.
    let slices = crate::take_slices(&mut cluster);
    let input = dra_sim::SimInput::from_cluster(&cluster);
    // The clock stops when the answer is there, before it is freed.
    let (pods, scheduled, allocate_calls, steps, done) = match suite.mode {
        Mode::FirstFit => {
            let report = dra_sim::run_first_fit_snapshot(&input, &snapshot)
                .map_err(|e| Failure::Internal(e.to_string()))?;
            let done = Instant::now();
            let scheduled = report
                .results
                .iter()
                .filter(|r| r.status == dra_sim::PodStatus::Scheduled)
                .count();
            (
                report.results.len(),
                scheduled,
                report.allocate_calls,
                report.steps,
                done,
            )
        }
        Mode::Scored => {
            let simulation =
                dra_sim::simulate_snapshot(&input, &snapshot, &dra_sim::SimOptions::default())
                    .map_err(|e| Failure::Internal(e.to_string()))?;
            let done = Instant::now();
            let calls = simulation
                .results
                .iter()
                .filter_map(|r| r.placement.as_ref())
                .map(|p| p.allocator_calls as u64)
                .sum();
            (
                simulation.summary.pods,
                simulation.summary.scheduled,
                calls,
                simulation.steps,
                done,
            )
        }
    };
    drop(slices);
    let total = done - start;
    Ok(Figures {
        suite: suite.name.to_string(),
        preset: suite.preset.to_string(),
        size,
        mode: suite.mode,
        input_bytes,
        pods,
        scheduled,
        load_seconds: (loaded_at - start).as_secs_f64(),
        simulate_seconds: (done - loaded_at).as_secs_f64(),
        total_seconds: total.as_secs_f64(),
        pods_per_second: pods as f64 / total.as_secs_f64().max(1e-9),
        allocate_calls,
        steps,
        peak_rss_mib: peak_rss_mib(),
    })
}

/// Peak resident memory of this process (`VmHWM`), 0 where /proc is unavailable.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

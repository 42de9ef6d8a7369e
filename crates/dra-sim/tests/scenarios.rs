//! Scenario tests of the scheduler model, as data: `tests/scenarios/<name>/cluster.yaml` (or
//! `cluster.ref`, a path to an input elsewhere in the repository) in, `expected.json` out. One
//! runner for all of them.
//!
//! A scenario's first comment lines say what it pins down and why the expected result is what
//! kube-scheduler 1.37 does. A line `# sim: key=value ...` sets options: `node-pick=scored|
//! most-allocated|first-feasible`, `sampling=all|adaptive|<percent>`.
//!
//! The compared document is a readable digest of the simulation (statuses, nodes, devices per
//! claim, one-line reasons, hints, evictions). Every scenario also runs with
//! `SimOptions::exhaustive` and must give the same digest: the device pre-check and the
//! best-score-first shortcut never change a result.
//!
//! `DRA_BLESS=1 cargo test -p dra-sim --test scenarios` rewrites the expected files; review
//! every change by hand. `DRA_SCENARIO=<substring>` runs only matching scenarios.

use std::path::{Path, PathBuf};

use dra_sim::{NodePick, NodeSampling, SimOptions, Simulation};
use serde_json::{Map, Value, json};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios")
}

fn options_of(text: &str) -> Result<SimOptions, String> {
    let mut options = SimOptions::default();
    for line in text.lines().take_while(|l| l.starts_with('#')) {
        let Some(rest) = line.strip_prefix("# sim:") else {
            continue;
        };
        for item in rest.split_whitespace() {
            match item.split_once('=') {
                Some(("node-pick", "scored")) => options.node_pick = NodePick::Scored,
                Some(("node-pick", "most-allocated")) => {
                    options.node_pick = NodePick::MostAllocated
                }
                Some(("node-pick", "first-feasible")) => {
                    options.node_pick = NodePick::FirstFeasible
                }
                Some(("sampling", "all")) => options.sampling = NodeSampling::AllNodes,
                Some(("sampling", "adaptive")) => options.sampling = NodeSampling::Adaptive,
                Some(("sampling", pct)) => {
                    options.sampling = NodeSampling::Percentage(
                        pct.parse().map_err(|_| format!("bad sampling {pct}"))?,
                    )
                }
                _ => return Err(format!("unknown option {item}")),
            }
        }
    }
    Ok(options)
}

fn digest(sim: &Simulation) -> Value {
    let pods: Vec<Value> = sim
        .results
        .iter()
        .map(|r| {
            let mut pod = Map::new();
            pod.insert("pod".into(), json!(r.pod));
            pod.insert(
                "status".into(),
                serde_json::to_value(r.status).unwrap_or_default(),
            );
            if let Some(node) = &r.node {
                pod.insert("node".into(), json!(node));
            }
            pod.insert("priority".into(), json!(r.priority));
            if !r.claims.is_empty() {
                pod.insert("claims".into(), json!(r.claims));
            }
            if !r.allocations.is_empty() {
                let allocations: Map<String, Value> = r
                    .allocations
                    .iter()
                    .map(|(claim, allocation)| {
                        let devices: Vec<String> = allocation
                            .devices
                            .iter()
                            .flat_map(|d| d.results.iter().flatten())
                            .map(|d| format!("{}={}/{}/{}", d.request, d.driver, d.pool, d.device))
                            .collect();
                        (claim.clone(), json!(devices))
                    })
                    .collect();
                pod.insert("allocations".into(), Value::Object(allocations));
            }
            if !r.extended_resources.is_empty() {
                pod.insert("extendedResources".into(), json!(r.extended_resources));
            }
            if let Some(status) = &r.extended_resource_claim_status {
                pod.insert(
                    "extendedResourceClaimStatus".into(),
                    serde_json::to_value(status).unwrap_or_default(),
                );
            }
            if let Some(score) = r.placement.as_ref().and_then(|p| p.score.as_ref()) {
                pod.insert("score".into(), json!(score.total));
            }
            if let Some(error) = &r.error {
                pod.insert("error".into(), json!(error));
            } else if let Some(reason) = &r.reason {
                pod.insert("reason".into(), json!(reason));
            }
            if let Some(diagnosis) = &r.diagnosis
                && !diagnosis.hints.is_empty()
            {
                pod.insert("hints".into(), json!(diagnosis.hints));
            }
            if !r.notes.is_empty() {
                pod.insert("notes".into(), json!(r.notes));
            }
            Value::Object(pod)
        })
        .collect();
    let evictions: Vec<Value> = sim
        .evictions
        .iter()
        .map(|e| {
            let taints: Vec<String> = e
                .reasons
                .iter()
                .map(|r| {
                    format!(
                        "{} {}:{} on {} (claim {})",
                        r.taint.origin, r.taint.key, r.taint.effect, r.device, r.claim
                    )
                })
                .collect();
            json!({
                "pod": e.pod,
                "node": e.node,
                "afterSeconds": e.after_seconds,
                "at": e.at,
                "taints": taints,
                "deallocatedClaims": e.deallocated_claims,
                "deletedClaims": e.deleted_claims,
            })
        })
        .collect();
    let mut doc = Map::new();
    doc.insert("pods".into(), Value::Array(pods));
    if !evictions.is_empty() {
        doc.insert("evictions".into(), Value::Array(evictions));
    }
    if !sim.would_evict.is_empty() {
        let would: Vec<Value> = sim
            .would_evict
            .iter()
            .map(|w| json!({"pod": w.pod, "devices": w.reasons.iter().map(|r| r.device.clone()).collect::<Vec<_>>()}))
            .collect();
        doc.insert("wouldEvict".into(), Value::Array(would));
    }
    if !sim.extended_resources.duplicates.is_empty() {
        doc.insert(
            "duplicateExtendedResourceNames".into(),
            serde_json::to_value(&sim.extended_resources.duplicates).unwrap_or_default(),
        );
    }
    let claims: Map<String, Value> = sim
        .claims
        .all()
        .filter_map(|claim| {
            let status = claim.status.as_ref()?;
            let devices: Vec<String> = status
                .allocation
                .iter()
                .flat_map(|a| a.devices.iter())
                .flat_map(|d| d.results.iter().flatten())
                .map(|d| format!("{}/{}/{}", d.driver, d.pool, d.device))
                .collect();
            let reserved: Vec<String> = status
                .reserved_for
                .iter()
                .flatten()
                .map(|r| r.name.clone())
                .collect();
            if status.allocation.is_none() && reserved.is_empty() {
                return None;
            }
            let mut entry = Map::new();
            if status.allocation.is_some() {
                entry.insert("devices".into(), json!(devices));
            }
            if reserved.len() > 8 {
                entry.insert(
                    "reservedFor".into(),
                    json!(format!("{} pods", reserved.len())),
                );
            } else if !reserved.is_empty() {
                entry.insert("reservedFor".into(), json!(reserved));
            }
            let name = format!(
                "{}/{}",
                claim.metadata.namespace.as_deref().unwrap_or("default"),
                claim.metadata.name.as_deref().unwrap_or_default()
            );
            Some((name, Value::Object(entry)))
        })
        .collect();
    doc.insert("claims".into(), Value::Object(claims));
    if !sim.notes.is_empty() {
        doc.insert("notes".into(), json!(sim.notes));
    }
    Value::Object(doc)
}

fn run(dir: &Path, bless: bool) -> Result<(), String> {
    // `cluster.ref` names an input elsewhere in the repository (the built-in example).
    let path = match std::fs::read_to_string(dir.join("cluster.ref")) {
        Ok(reference) => dir.join(reference.trim()),
        Err(_) => dir.join("cluster.yaml"),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let options = options_of(&text)?;
    let loaded = dra_api::load_str(&path.display().to_string(), &text);
    if loaded.has_errors() {
        return Err(format!("load: {:?}", loaded.diagnostics));
    }
    let input = dra_sim::SimInput::from_cluster(&loaded.cluster);
    let sim = dra_sim::simulate(&input, &options).map_err(|e| e.to_string())?;
    let actual = digest(&sim);
    let exhaustive = dra_sim::simulate(
        &input,
        &SimOptions {
            exhaustive: true,
            ..options
        },
    )
    .map_err(|e| e.to_string())?;
    let rendered = serde_json::to_string_pretty(&actual).map_err(|e| e.to_string())? + "\n";
    let exhaustive =
        serde_json::to_string_pretty(&digest(&exhaustive)).map_err(|e| e.to_string())? + "\n";
    if exhaustive != rendered {
        return Err(format!(
            "the exhaustive run differs: {}",
            first_difference(&rendered, &exhaustive)
        ));
    }
    let expected_path = dir.join("expected.json");
    if bless {
        return std::fs::write(&expected_path, rendered).map_err(|e| e.to_string());
    }
    let expected = std::fs::read_to_string(&expected_path).map_err(|e| {
        format!(
            "{}: {e} (run with DRA_BLESS=1 to create it)",
            expected_path.display()
        )
    })?;
    if expected != rendered {
        return Err(format!(
            "differs from expected.json: {} (DRA_BLESS=1 to accept)",
            first_difference(&expected, &rendered)
        ));
    }
    Ok(())
}

/// The first differing line of two texts, with its line number.
fn first_difference(expected: &str, actual: &str) -> String {
    let mut a = actual.lines();
    for (i, e) in expected.lines().enumerate() {
        match a.next() {
            Some(line) if line == e => {}
            Some(line) => {
                return format!(
                    "line {}: expected `{}`, got `{}`",
                    i + 1,
                    e.trim(),
                    line.trim()
                );
            }
            None => return format!("line {}: expected `{}`, got the end", i + 1, e.trim()),
        }
    }
    match a.next() {
        Some(line) => format!("unexpected extra line `{}`", line.trim()),
        None => "no difference".to_string(),
    }
}

#[test]
fn scenarios() {
    let bless = std::env::var_os("DRA_BLESS").is_some();
    let filter = std::env::var("DRA_SCENARIO").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("tests/scenarios exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.join("cluster.yaml").exists() || p.join("cluster.ref").exists())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&filter))
        })
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no scenarios found");
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|dir| {
            run(dir, bless).err().map(|e| {
                format!(
                    "FAIL {}: {e}",
                    dir.file_name().unwrap_or_default().to_string_lossy()
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}

//! The conformance corpus (`conformance/cases`, expected results from the upstream 1.37
//! allocator) and our own cases (`conformance/own`, expected results derived by hand from
//! upstream's algorithm) through the reference loop: one runner for every case.
//!
//! Each case's output is normalised like `conformance/normalize.py` does and compared with
//! `expected.json`. All failures are listed before the test fails. `DRA_CASE=<substring>`
//! limits the run to matching cases.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The case directories: the reference corpus and our own hand-derived cases.
fn case_roots() -> [PathBuf; 2] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    [root.join("cases"), root.join("own")]
}

fn milli(value: &Value) -> Value {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match dra_types::Quantity::parse(&text) {
        // Exact integer milli-units, rounded up like Quantity.MilliValue().
        Ok(q) => {
            let nanos = q.as_nanos();
            let milli = nanos.div_euclid(1_000_000) + i128::from(nanos.rem_euclid(1_000_000) != 0);
            Value::String(milli.to_string())
        }
        Err(e) => Value::String(format!("<bad quantity {text}: {e}>")),
    }
}

fn prune(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let v = prune(v);
                let empty = match &v {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    Value::Object(o) => o.is_empty(),
                    _ => false,
                };
                if !empty {
                    out.insert(k, v);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(prune).collect()),
        other => other,
    }
}

fn pick(object: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for key in keys {
        if let Some(v) = object.get(*key) {
            out.insert((*key).to_string(), v.clone());
        }
    }
    prune(Value::Object(out))
}

fn device_result(r: &Value) -> Value {
    let mut out = Map::new();
    for key in ["request", "driver", "pool", "device"] {
        out.insert(key.to_string(), r.get(key).cloned().unwrap_or(Value::Null));
    }
    if r.get("adminAccess") == Some(&Value::Bool(true)) {
        out.insert("adminAccess".into(), Value::Bool(true));
    }
    let tolerations: Vec<Value> = r
        .get("tolerations")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .map(|t| {
                    pick(
                        t,
                        &["key", "operator", "value", "effect", "tolerationSeconds"],
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if !tolerations.is_empty() {
        out.insert("tolerations".into(), Value::Array(tolerations));
    }
    for key in ["bindingConditions", "bindingFailureConditions"] {
        if let Some(v) = r
            .get(key)
            .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        {
            out.insert(key.to_string(), v.clone());
        }
    }
    if let Some(consumed) = r.get("consumedCapacity").and_then(Value::as_object)
        && !consumed.is_empty()
    {
        let map = consumed
            .iter()
            .map(|(k, v)| (k.clone(), milli(v)))
            .collect();
        out.insert("consumedCapacity".into(), Value::Object(map));
    }
    if r.get("shareID")
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    {
        out.insert("shareID".into(), Value::String("<share>".into()));
    }
    Value::Object(out)
}

fn allocation(a: &Value) -> Value {
    let devices = a.get("devices").cloned().unwrap_or(Value::Null);
    let results: Vec<Value> = devices
        .get("results")
        .and_then(Value::as_array)
        .map(|r| r.iter().map(device_result).collect())
        .unwrap_or_default();
    let mut devices_out = Map::new();
    devices_out.insert("results".into(), Value::Array(results));
    let config: Vec<Value> = devices
        .get("config")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .map(|c| pick(c, &["source", "requests", "opaque"]))
                .collect()
        })
        .unwrap_or_default();
    if !config.is_empty() {
        devices_out.insert("config".into(), Value::Array(config));
    }
    let mut out = Map::new();
    out.insert("devices".into(), Value::Object(devices_out));
    let selector = prune(a.get("nodeSelector").cloned().unwrap_or(Value::Null));
    if selector.as_object().is_some_and(|o| !o.is_empty()) {
        out.insert("nodeSelector".into(), selector);
    }
    Value::Object(out)
}

/// The canonical form of a result document, as `conformance/normalize.py` computes it,
/// without `errorText` (never compared).
fn normalize(doc: &Value) -> Vec<Value> {
    doc["results"]
        .as_array()
        .expect("results list")
        .iter()
        .map(|p| {
            let error = match p.get("error") {
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) => !s.is_empty(),
                _ => false,
            };
            let allocations: Map<String, Value> = p
                .get("allocations")
                .and_then(Value::as_object)
                .map(|a| a.iter().map(|(k, v)| (k.clone(), allocation(v))).collect())
                .unwrap_or_default();
            serde_json::json!({
                "pod": p["pod"],
                "node": p.get("node").filter(|n| n.as_str().is_some_and(|s| !s.is_empty())).cloned().unwrap_or(Value::Null),
                "status": p["status"],
                "allocations": allocations,
                "error": error,
            })
        })
        .collect()
}

fn first_difference(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let mut keys: Vec<&String> = e.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let sub = format!("{path}.{key}");
                match (e.get(key), a.get(key)) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = first_difference(x, y, &sub) {
                            return Some(d);
                        }
                    }
                    (x, y) => return Some(format!("{sub}: expected {x:?}, got {y:?}")),
                }
            }
            None
        }
        (Value::Array(e), Value::Array(a)) => {
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                if let Some(d) = first_difference(x, y, &format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (e.len() != a.len())
                .then(|| format!("{path}: expected {} items, got {}", e.len(), a.len()))
        }
        (e, a) => (e != a).then(|| format!("{path}: expected {e}, got {a}")),
    }
}

/// The objects of a loaded case as a JSON stream, one object per line, kind by kind (each
/// kind in input order, which is all a simulation reads).
fn json_stream(cluster: &dra_api::Cluster) -> Result<String, String> {
    let mut text = String::new();
    let mut add = |object: Result<String, serde_json::Error>| -> Result<(), String> {
        text.push_str(&object.map_err(|e| e.to_string())?);
        text.push('\n');
        Ok(())
    };
    macro_rules! kinds {
        ($($field:ident),*) => {$(
            for located in &cluster.$field {
                add(serde_json::to_string(&*located.object))?;
            }
        )*};
    }
    kinds!(
        namespaces,
        priority_classes,
        device_classes,
        nodes,
        resource_slices,
        device_taint_rules,
        resource_claim_templates,
        resource_claims,
        pods
    );
    Ok(text)
}

/// Runs a case from its YAML, and again from the same objects as a JSON stream whose slices
/// the index decodes from their text (`LoadOptions::defer_slices`, what `dra simulate` does
/// with JSON input).
fn run_case(dir: &Path) -> Result<(), String> {
    let loaded = dra_api::load_paths(
        &[dir.join("cluster.yaml")],
        &dra_api::LoadOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    if loaded.has_errors() {
        return Err(format!("load: {:?}", loaded.diagnostics));
    }
    check_report(dir, &loaded.cluster)?;
    let options = dra_api::LoadOptions {
        defer_slices: true,
        ..dra_api::LoadOptions::default()
    };
    let stream = json_stream(&loaded.cluster)?;
    let deferred = dra_api::load_str_with("cluster.json", &stream, &options);
    if deferred.has_errors() {
        return Err(format!("load as JSON: {:?}", deferred.diagnostics));
    }
    let as_text = deferred
        .cluster
        .slice_docs
        .iter()
        .filter(|doc| matches!(&*doc.object, dra_api::SliceDoc::Json(_)))
        .count();
    if as_text != loaded.cluster.resource_slices.len() {
        return Err(format!(
            "{as_text} of {} slices kept as text",
            loaded.cluster.resource_slices.len()
        ));
    }
    check_report(dir, &deferred.cluster).map_err(|e| format!("as JSON: {e}"))
}

/// The reference loop's answer for `cluster` against the case's expected results.
fn check_report(dir: &Path, cluster: &dra_api::Cluster) -> Result<(), String> {
    let input = dra_sim::SimInput::from_cluster(cluster);
    let report = dra_sim::run_first_fit(&input).map_err(|e| e.to_string())?;
    // The streamed loop hands its allocations over as picks, which serialise without
    // making their objects (`ClaimPicks::serialize_result`): the same text as the objects,
    // and as the report's.
    let snapshot = dra_sim::Snapshot::new(&input).map_err(|e| e.to_string())?;
    let mut outcomes = Vec::new();
    dra_sim::run_first_fit_snapshot_each(&input, &snapshot, |outcome| outcomes.push(outcome))
        .map_err(|e| e.to_string())?;
    if outcomes.len() != report.results.len() {
        return Err(format!(
            "{} outcomes streamed, {} reported",
            outcomes.len(),
            report.results.len()
        ));
    }
    for (outcome, result) in outcomes.iter().zip(&report.results) {
        for ((claim, allocation), (_, kept)) in
            outcome.allocations.iter().zip(result.allocations.iter())
        {
            let direct = serde_json::to_string(&**allocation).map_err(|e| e.to_string())?;
            let object = serde_json::to_string(&*allocation.result()).map_err(|e| e.to_string())?;
            let reported = serde_json::to_string(&**kept).map_err(|e| e.to_string())?;
            if direct != object || direct != reported {
                return Err(format!(
                    "{claim}: the picks serialise as\n{direct}\nthe object as\n{object}\nthe report's as\n{reported}"
                ));
            }
        }
    }
    let actual = normalize(&serde_json::to_value(&report).map_err(|e| e.to_string())?);
    let expected_doc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let expected: Vec<Value> = expected_doc["results"]
        .as_array()
        .expect("expected results")
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p.as_object_mut().map(|o| o.remove("errorText"));
            p
        })
        .collect();
    match first_difference(&Value::Array(expected), &Value::Array(actual), "results") {
        None => Ok(()),
        Some(d) => Err(d),
    }
}

#[test]
fn conformance_corpus() {
    let filter = std::env::var("DRA_CASE").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in case_roots() {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
            .map(|e| e.expect("readable").path())
            .filter(|p| p.join("cluster.yaml").exists())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(&filter))
            })
            .collect();
        found.sort();
        dirs.extend(found);
    }
    assert!(!dirs.is_empty(), "no conformance cases found");
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|dir| {
            run_case(dir).err().map(|e| {
                let root = dir.parent().and_then(Path::file_name).unwrap_or_default();
                let name = dir.file_name().unwrap_or_default();
                format!(
                    "FAIL {}/{}: {e}",
                    root.to_string_lossy(),
                    name.to_string_lossy()
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}

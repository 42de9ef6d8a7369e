//! Runs every case of `tests/corpus/*.yaml`: an expression against a named device, with
//! the expected outcome (true, false, a compile error or a runtime error, by substring),
//! optionally the environment, feature gates and the expected cost estimate.

use std::collections::BTreeMap;
use std::path::Path;

use dra_cel::{AttributeValue, Compiler, CompilerOptions, DeviceInput, Environment, Features};
use dra_types::Quantity;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    #[serde(default)]
    devices: BTreeMap<String, DeviceSpec>,
    #[serde(default)]
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DeviceSpec {
    driver: String,
    #[serde(default)]
    attributes: BTreeMap<String, AttrSpec>,
    #[serde(default)]
    capacity: BTreeMap<String, String>,
    #[serde(default)]
    allow_multiple_allocations: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttrSpec {
    int: Option<i64>,
    bool: Option<bool>,
    string: Option<String>,
    version: Option<String>,
    ints: Option<Vec<i64>>,
    bools: Option<Vec<bool>>,
    strings: Option<Vec<String>>,
    versions: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Case {
    expr: String,
    #[serde(default)]
    device: Option<String>,
    #[serde(default)]
    env: Option<String>,
    #[serde(default)]
    list_type_attributes: Option<bool>,
    #[serde(default)]
    consumable_capacity: Option<bool>,
    #[serde(default)]
    expect: Option<bool>,
    #[serde(default)]
    compile_error: Option<String>,
    #[serde(default)]
    runtime_error: Option<String>,
    #[serde(default)]
    cost_max: Option<u64>,
    #[serde(default)]
    cost_limit: Option<u64>,
    #[serde(default)]
    cost_over_budget: Option<bool>,
}

fn attribute(spec: &AttrSpec) -> AttributeValue {
    if let Some(v) = spec.int {
        AttributeValue::Int(v)
    } else if let Some(v) = spec.bool {
        AttributeValue::Bool(v)
    } else if let Some(v) = &spec.string {
        AttributeValue::String(v.clone())
    } else if let Some(v) = &spec.version {
        AttributeValue::Version(v.clone())
    } else if let Some(v) = &spec.ints {
        AttributeValue::IntList(v.clone())
    } else if let Some(v) = &spec.bools {
        AttributeValue::BoolList(v.clone())
    } else if let Some(v) = &spec.strings {
        AttributeValue::StringList(v.clone())
    } else if let Some(v) = &spec.versions {
        AttributeValue::VersionList(v.clone())
    } else {
        AttributeValue::Unset
    }
}

fn build_device(spec: &DeviceSpec) -> DeviceInput {
    let capacity: Vec<(&str, Quantity)> = spec
        .capacity
        .iter()
        .map(|(k, v)| (k.as_str(), Quantity::parse(v).expect("corpus quantity")))
        .collect();
    DeviceInput::new(
        &spec.driver,
        spec.attributes
            .iter()
            .map(|(k, v)| (k.as_str(), attribute(v))),
        capacity,
        spec.allow_multiple_allocations,
    )
}

fn run_case(
    file: &str,
    devices: &BTreeMap<String, DeviceInput>,
    case: &Case,
) -> Result<(), String> {
    let environment = match case.env.as_deref() {
        None | Some("stored") => Environment::StoredExpressions,
        Some("new") => Environment::NewExpressions,
        Some(other) => return Err(format!("unknown env {other}")),
    };
    let defaults = Features::default();
    let compiler = Compiler::new(CompilerOptions {
        environment,
        features: Features {
            list_type_attributes: case
                .list_type_attributes
                .unwrap_or(defaults.list_type_attributes),
            consumable_capacity: case
                .consumable_capacity
                .unwrap_or(defaults.consumable_capacity),
        },
        cost_limit: case.cost_limit.unwrap_or(dra_cel::SELECTOR_MAX_COST),
    });
    let outcomes = [
        case.expect.is_some(),
        case.compile_error.is_some(),
        case.runtime_error.is_some(),
    ];
    if outcomes.iter().filter(|o| **o).count() != 1 {
        return Err(format!(
            "{file}: case {:?} needs exactly one of expect/compileError/runtimeError",
            case.expr
        ));
    }
    let selector = match compiler.compile(&case.expr) {
        Ok(s) => s,
        Err(e) => {
            return match &case.compile_error {
                Some(want) if e.to_string().contains(want.as_str()) => Ok(()),
                Some(want) => Err(format!(
                    "compile error {:?} does not contain {want:?}",
                    e.to_string()
                )),
                None => Err(format!("unexpected compile error: {e}")),
            };
        }
    };
    if let Some(want) = &case.compile_error {
        return Err(format!("expected compile error {want:?}, compiled"));
    }
    if let Some(max) = case.cost_max {
        let got = selector.cost_estimate().max;
        if got != max {
            return Err(format!("cost estimate max {got}, expected {max}"));
        }
    }
    if let Some(over) = case.cost_over_budget {
        let got = selector
            .check_cost_budget(dra_cel::SELECTOR_MAX_COST)
            .is_err();
        if got != over {
            return Err(format!(
                "over budget: {got} (estimate {:?}), expected {over}",
                selector.cost_estimate()
            ));
        }
    }
    let device_name = case.device.as_deref().unwrap_or("gpu");
    let device = devices
        .get(device_name)
        .ok_or_else(|| format!("unknown device {device_name}"))?;
    match (selector.evaluate(device), case.expect, &case.runtime_error) {
        (Ok(got), Some(want), _) if got == want => Ok(()),
        (Ok(got), Some(want), _) => Err(format!("evaluated to {got}, expected {want}")),
        (Ok(got), None, Some(want)) => Err(format!(
            "evaluated to {got}, expected runtime error {want:?}"
        )),
        (Err(e), _, Some(want)) if e.to_string().contains(want.as_str()) => Ok(()),
        (Err(e), _, Some(want)) => Err(format!(
            "runtime error {:?} does not contain {want:?}",
            e.to_string()
        )),
        (Err(e), _, None) => Err(format!("unexpected runtime error: {e}")),
        (Ok(_), None, None) => Err("no expectation".to_string()),
    }
}

#[test]
fn corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no corpus files");
    let mut files = Vec::new();
    let mut devices: BTreeMap<String, DeviceInput> = BTreeMap::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("read corpus");
        let file: CorpusFile =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (k, v) in &file.devices {
            assert!(
                devices.insert(k.clone(), build_device(v)).is_none(),
                "{}: device {k} defined twice",
                path.display()
            );
        }
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        files.push((name, file));
    }
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, file) in &files {
        for case in &file.cases {
            total += 1;
            if let Err(why) = run_case(name, &devices, case) {
                failures.push(format!("{name}: {:?}: {why}", case.expr));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} corpus cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(total > 300, "corpus unexpectedly small: {total} cases");
}

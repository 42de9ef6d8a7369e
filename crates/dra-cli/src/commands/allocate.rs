//! `dra allocate --node NODE CLAIM... FILE...`: upstream `Allocate` for these claims on this
//! node, given every allocation already in the input.

use std::path::{Path, PathBuf};

use dra_alloc::{
    AllocatedState, Index, IndexInput, IndexOptions, Outcome, PreparedClaim, SliceInput,
};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimStatus};

use crate::Failure;
use crate::cli::{AllocateArgs, OutputFormat};
use crate::commands::table;
use crate::input;
use crate::output::Out;

/// `NAMESPACE/NAME` or `NAME` (namespace `default`).
fn parse_claim_ref(text: &str) -> (String, String) {
    match text.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => ("default".to_string(), text.to_string()),
    }
}

pub fn run(out: &Out, args: &AllocateArgs) -> Result<(), Failure> {
    let (files, claims): (Vec<&String>, Vec<&String>) = args
        .args
        .iter()
        .partition(|a| a.as_str() == "-" || Path::new(a.as_str()).exists());
    if claims.is_empty() {
        return Err(Failure::Input(
            "name at least one claim (NAMESPACE/NAME) to allocate".to_string(),
        ));
    }
    let files: Vec<PathBuf> = files.into_iter().map(PathBuf::from).collect();
    let loaded = input::load(out, &files)?;
    let cluster = &loaded.cluster;
    let index = Index::build(
        &IndexInput {
            nodes: cluster.nodes.iter().map(|o| &*o.object).collect(),
            slices: cluster
                .resource_slices
                .iter()
                .map(|o| SliceInput::Object(&o.object))
                .collect(),
            classes: cluster.device_classes.iter().map(|o| &*o.object).collect(),
            taint_rules: cluster
                .device_taint_rules
                .iter()
                .map(|o| &*o.object)
                .collect(),
        },
        &IndexOptions::default(),
    )
    .map_err(|e| Failure::Input(e.to_string()))?;
    let Some(node) = index.node(&args.node) else {
        return Err(Failure::Input(format!(
            "node {:?} not found in the input",
            args.node
        )));
    };
    let mut state = AllocatedState::new(&index);
    for claim in &cluster.resource_claims {
        if let Some(allocation) = claim
            .object
            .status
            .as_ref()
            .and_then(|s| s.allocation.as_ref())
        {
            state.add(&index, allocation).map_err(|e| {
                Failure::Input(format!(
                    "{}: ResourceClaim: status.allocation: {e}",
                    claim.source
                ))
            })?;
        }
    }
    let mut selected: Vec<&ResourceClaim> = Vec::new();
    for text in &claims {
        let (namespace, name) = parse_claim_ref(text);
        let Some(found) = cluster.resource_claims.iter().find(|c| {
            c.object.metadata.namespace.as_deref() == Some(namespace.as_str())
                && c.object.metadata.name.as_deref() == Some(name.as_str())
        }) else {
            return Err(Failure::Input(format!(
                "ResourceClaim {namespace}/{name} not found in the input (nor is a file of that name)"
            )));
        };
        if found
            .object
            .status
            .as_ref()
            .is_some_and(|s| s.allocation.is_some())
        {
            return Err(Failure::Input(format!(
                "ResourceClaim {namespace}/{name} ({}) is already allocated",
                found.source
            )));
        }
        selected.push(&found.object);
    }
    let prepared: Vec<PreparedClaim> = selected
        .iter()
        .map(|c| PreparedClaim::new(&index, c))
        .collect();
    let refs: Vec<&PreparedClaim> = prepared.iter().collect();
    let (outcome, stats) = dra_alloc::allocate(&index, &state, node, &refs);
    match outcome {
        Outcome::Allocated(results) => {
            let claims: Vec<ResourceClaim> = selected
                .iter()
                .zip(results)
                .map(|(claim, allocation)| {
                    let mut claim = (*claim).clone();
                    claim
                        .status
                        .get_or_insert_with(ResourceClaimStatus::default)
                        .allocation = Some(allocation);
                    claim
                })
                .collect();
            match out.format {
                OutputFormat::Table => out.text(&render(&claims, stats.steps))?,
                OutputFormat::Json | OutputFormat::Yaml => {
                    let items: Vec<serde_json::Value> = claims
                        .iter()
                        .map(|c| {
                            let mut v = serde_json::to_value(c).unwrap_or_default();
                            if let Some(o) = v.as_object_mut() {
                                o.insert("apiVersion".into(), "resource.k8s.io/v1".into());
                                o.insert("kind".into(), "ResourceClaim".into());
                            }
                            v
                        })
                        .collect();
                    out.data(&serde_json::json!({
                        "apiVersion": "v1",
                        "kind": "List",
                        "items": items,
                    }))?;
                }
            }
            Ok(())
        }
        Outcome::Unsatisfiable(why) => {
            out.diagnostic(
                "error",
                &format!(
                    "node {}: {} (UnschedulableAndUnresolvable)",
                    args.node,
                    why.message()
                ),
            );
            Err(Failure::Findings)
        }
        Outcome::Fatal(error) => {
            out.diagnostic("error", &format!("allocation failed: {error}"));
            Err(Failure::Findings)
        }
    }
}

fn render(claims: &[ResourceClaim], steps: u64) -> String {
    let mut rows = Vec::new();
    for claim in claims {
        let name = format!(
            "{}/{}",
            claim.metadata.namespace.as_deref().unwrap_or_default(),
            claim.metadata.name.as_deref().unwrap_or_default()
        );
        let allocation = claim.status.as_ref().and_then(|s| s.allocation.as_ref());
        for result in allocation
            .and_then(|a| a.devices.as_ref())
            .and_then(|d| d.results.as_deref())
            .unwrap_or_default()
        {
            rows.push(vec![
                name.clone(),
                result.request.clone(),
                format!("{}/{}/{}", result.driver, result.pool, result.device),
                result.share_id.clone().unwrap_or_default(),
            ]);
        }
    }
    let mut text = table(&["CLAIM", "REQUEST", "DEVICE", "SHARE"], &rows);
    text.push_str(&format!(
        "\n{} device(s), {steps} search steps\n",
        rows.len()
    ));
    text
}

//! `dra lint`.

use std::collections::BTreeMap;

use dra_api::{Cluster, Diagnostic, Located, ObjectRef, ScopeFlag, Source};
use dra_cel::{Compiler, CompilerOptions, Environment, SELECTOR_MAX_COST};
use k8s_openapi::Resource;
use k8s_openapi::api::resource::v1::{DeviceClaim, DeviceSelector};

/// Options for [`lint`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LintOptions {
    /// CEL feature gates (defaults: Kubernetes 1.37).
    pub cel_features: dra_cel::Features,
}

/// Every finding about `cluster`, sorted by file, line and message.
pub fn lint(cluster: &Cluster, options: &LintOptions) -> Vec<Diagnostic> {
    let mut findings = dra_api::validate(cluster);
    let compiler = Compiler::new(CompilerOptions {
        environment: Environment::NewExpressions,
        features: options.cel_features,
        ..CompilerOptions::default()
    });
    let mut cel = CelLint {
        compiler: &compiler,
        findings: &mut findings,
    };
    for class in &cluster.device_classes {
        let selectors = class
            .object
            .spec
            .as_ref()
            .and_then(|s| s.selectors.as_deref());
        cel.selectors(class, &class.object.metadata, "spec.selectors", selectors);
    }
    for claim in &cluster.resource_claims {
        if let Some(devices) = claim.object.spec.as_ref().and_then(|s| s.devices.as_ref()) {
            cel.claim(claim, &claim.object.metadata, "spec.devices", devices);
        }
    }
    for template in &cluster.resource_claim_templates {
        if let Some(devices) = template
            .object
            .spec
            .as_ref()
            .and_then(|s| s.spec.as_ref())
            .and_then(|s| s.devices.as_ref())
        {
            cel.claim(
                template,
                &template.object.metadata,
                "spec.spec.devices",
                devices,
            );
        }
    }
    cross_object(cluster, &mut findings);
    findings.sort();
    findings.dedup();
    findings
}

struct CelLint<'a> {
    compiler: &'a Compiler,
    findings: &'a mut Vec<Diagnostic>,
}

impl CelLint<'_> {
    fn claim<T>(
        &mut self,
        object: &Located<T>,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        prefix: &str,
        devices: &DeviceClaim,
    ) where
        T: Resource,
        T::Scope: ScopeFlag,
    {
        for (r, request) in devices.requests.iter().flatten().enumerate() {
            if let Some(exact) = &request.exactly {
                self.selectors(
                    object,
                    meta,
                    &format!("{prefix}.requests[{r}].exactly.selectors"),
                    exact.selectors.as_deref(),
                );
            }
            for (s, sub) in request.first_available.iter().flatten().enumerate() {
                self.selectors(
                    object,
                    meta,
                    &format!("{prefix}.requests[{r}].firstAvailable[{s}].selectors"),
                    sub.selectors.as_deref(),
                );
            }
        }
    }

    fn selectors<T>(
        &mut self,
        object: &Located<T>,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        path: &str,
        selectors: Option<&[DeviceSelector]>,
    ) where
        T: Resource,
        T::Scope: ScopeFlag,
    {
        for (i, selector) in selectors.unwrap_or_default().iter().enumerate() {
            let Some(cel) = &selector.cel else {
                continue;
            };
            let field = format!("{path}[{i}].cel.expression");
            let object_ref = ObjectRef::of::<T>(meta);
            let diagnostic = |message: String| {
                Diagnostic::error(message)
                    .at(object.source.clone())
                    .on(object_ref.clone())
                    .field(field.clone())
            };
            match self.compiler.compile(&cel.expression) {
                Err(e) => {
                    let at = e
                        .position()
                        .map(|p| {
                            format!(" (selector #{i}, line {} column {})", p.line, p.column + 1)
                        })
                        .unwrap_or_else(|| format!(" (selector #{i})"));
                    self.findings.push(diagnostic(format!(
                        "Invalid value: CEL compile error{at}: {e}"
                    )));
                }
                Ok(compiled) => {
                    if let Err(e) = compiled.check_cost_budget(SELECTOR_MAX_COST) {
                        self.findings.push(diagnostic(format!(
                            "Forbidden: selector #{i}: CEL expression too complex: estimated worst-case cost {} exceeds the budget of {}: {e}",
                            e.estimated_max, e.limit
                        )));
                    }
                }
            }
        }
    }
}

fn class_names(devices: &DeviceClaim) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (r, request) in devices.requests.iter().flatten().enumerate() {
        if let Some(exact) = &request.exactly {
            out.push((
                format!("requests[{r}].exactly.deviceClassName"),
                exact.device_class_name.clone(),
            ));
        }
        for (s, sub) in request.first_available.iter().flatten().enumerate() {
            out.push((
                format!("requests[{r}].firstAvailable[{s}].deviceClassName"),
                sub.device_class_name.clone(),
            ));
        }
    }
    out
}

fn cross_object(cluster: &Cluster, findings: &mut Vec<Diagnostic>) {
    let classes: BTreeMap<&str, &Source> = cluster
        .device_classes
        .iter()
        .map(|c| {
            (
                c.object.metadata.name.as_deref().unwrap_or_default(),
                &c.source,
            )
        })
        .collect();
    let mut missing_class = |source: &Source, object: ObjectRef, field: String, class: &str| {
        if !class.is_empty() && !classes.contains_key(class) {
            findings.push(
                Diagnostic::warning(format!(
                    "DeviceClass {class:?} not found: pods using this claim stay pending until it exists"
                ))
                .at(source.clone())
                .on(object)
                .field(field),
            );
        }
    };
    for claim in &cluster.resource_claims {
        // Allocated claims no longer need their class.
        let allocated = claim
            .object
            .status
            .as_ref()
            .is_some_and(|s| s.allocation.is_some());
        if let (Some(devices), false) = (
            claim.object.spec.as_ref().and_then(|s| s.devices.as_ref()),
            allocated,
        ) {
            for (field, class) in class_names(devices) {
                missing_class(
                    &claim.source,
                    ObjectRef::of::<k8s_openapi::api::resource::v1::ResourceClaim>(
                        &claim.object.metadata,
                    ),
                    format!("spec.devices.{field}"),
                    &class,
                );
            }
        }
    }
    for template in &cluster.resource_claim_templates {
        if let Some(devices) = template
            .object
            .spec
            .as_ref()
            .and_then(|s| s.spec.as_ref())
            .and_then(|s| s.devices.as_ref())
        {
            for (field, class) in class_names(devices) {
                missing_class(
                    &template.source,
                    ObjectRef::of::<k8s_openapi::api::resource::v1::ResourceClaimTemplate>(
                        &template.object.metadata,
                    ),
                    format!("spec.spec.devices.{field}"),
                    &class,
                );
            }
        }
    }
    duplicate_extended_resource_names(cluster, findings);
    incomplete_pools(cluster, findings);
}

/// Two classes with one `extendedResourceName`: the scheduler uses the newest (then the
/// lexicographically smaller name) and ignores the others.
fn duplicate_extended_resource_names(cluster: &Cluster, findings: &mut Vec<Diagnostic>) {
    let mut by_name: BTreeMap<&str, Vec<&Located<k8s_openapi::api::resource::v1::DeviceClass>>> =
        BTreeMap::new();
    for class in &cluster.device_classes {
        if let Some(name) = class
            .object
            .spec
            .as_ref()
            .and_then(|s| s.extended_resource_name.as_deref())
        {
            by_name.entry(name).or_default().push(class);
        }
    }
    for (resource, classes) in by_name {
        if classes.len() < 2 {
            continue;
        }
        let winner = dra_sim::extended_resource_winner(classes.iter().map(|c| &c.object.metadata));
        let winner_name = winner.and_then(|m| m.name.as_deref()).unwrap_or_default();
        for class in &classes {
            let name = class.object.metadata.name.as_deref().unwrap_or_default();
            if name == winner_name {
                continue;
            }
            findings.push(
                Diagnostic::warning(format!(
                    "extendedResourceName {resource:?} is also set by DeviceClass {winner_name:?}, which the scheduler uses (newest creationTimestamp, then smallest name); this class does not serve {resource}"
                ))
                .at(class.source.clone())
                .on(ObjectRef::of::<k8s_openapi::api::resource::v1::DeviceClass>(&class.object.metadata))
                .field("spec.extendedResourceName"),
            );
        }
    }
}

/// Pools whose newest generation has fewer slices than `resourceSliceCount` say: the scheduler
/// does not allocate from them.
fn incomplete_pools(cluster: &Cluster, findings: &mut Vec<Diagnostic>) {
    let mut pools: BTreeMap<
        (&str, &str),
        Vec<&Located<k8s_openapi::api::resource::v1::ResourceSlice>>,
    > = BTreeMap::new();
    for slice in &cluster.resource_slices {
        pools
            .entry((
                slice.object.spec.driver.as_str(),
                slice.object.spec.pool.name.as_str(),
            ))
            .or_default()
            .push(slice);
    }
    for ((driver, pool), slices) in pools {
        let newest = slices
            .iter()
            .map(|s| s.object.spec.pool.generation)
            .max()
            .unwrap_or_default();
        let current: Vec<_> = slices
            .iter()
            .filter(|s| s.object.spec.pool.generation == newest)
            .collect();
        let wanted = current[0].object.spec.pool.resource_slice_count;
        if current.len() as i64 != wanted {
            let first = current[0];
            findings.push(
                Diagnostic::warning(format!(
                    "pool {driver}/{pool} generation {newest} has {} of {wanted} slices: the scheduler does not allocate from incomplete pools",
                    current.len()
                ))
                .at(first.source.clone())
                .on(ObjectRef::of::<k8s_openapi::api::resource::v1::ResourceSlice>(&first.object.metadata))
                .field("spec.pool.resourceSliceCount"),
            );
        }
    }
}

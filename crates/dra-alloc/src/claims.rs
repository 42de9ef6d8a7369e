//! Claims prepared for allocation: classes resolved, selector sets interned, quantities parsed.
//!
//! Preparation is node-independent and done once per claim (per pod in the simulator), not
//! once per node. It never fails: anything upstream reports as an error is kept and reported
//! by [`crate::allocate`] at the point where upstream's `Allocate` would report it, so that the
//! first error of a call is the same one upstream returns.

use std::collections::BTreeMap;
use std::sync::Arc;

use dra_types::Quantity;
use k8s_openapi::api::resource::v1::{
    DeviceClaimConfiguration, DeviceRequest, DeviceToleration, ExactDeviceRequest, ResourceClaim,
};

use crate::attributes::AttributeColumn;
use crate::index::{ClassId, Index};
use crate::selectors::SelSetId;

/// `allocationMode` of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocationMode {
    ExactCount,
    All,
    Unsupported(String),
}

/// A request or subrequest ready for the search.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// Name of the request, or of the subrequest for `firstAvailable` entries.
    pub name: String,
    pub class_name: String,
    /// `None`: the class does not exist (a fatal error when the search needs it).
    pub class: Option<ClassId>,
    /// Interned (class selectors, request selectors); `None` when the class is missing.
    pub selector_set: Option<SelSetId>,
    /// Index of the first selector without a CEL expression (a fatal error upstream).
    pub empty_selector: Option<usize>,
    pub mode: AllocationMode,
    pub count: i64,
    /// `Some(_)` when the field is set (upstream checks presence and value separately).
    pub admin_access: Option<bool>,
    pub tolerations: Vec<DeviceToleration>,
    /// `capacity.requests`, parsed; `Err` holds a parse error message.
    pub capacity: Result<Option<BTreeMap<String, Quantity>>, String>,
}

impl RequestSpec {
    pub fn admin(&self) -> bool {
        self.admin_access == Some(true)
    }
}

/// The shape of one request of a claim.
#[derive(Debug, Clone)]
pub enum RequestBody {
    Exact(RequestSpec),
    FirstAvailable(Vec<RequestSpec>),
    /// Neither `exactly` nor `firstAvailable` is set.
    Unknown,
}

impl RequestBody {
    /// The request's specs: the one of an exact request, the subrequests of a
    /// `firstAvailable` one in their order, none for an unknown shape.
    pub fn specs(&self) -> &[RequestSpec] {
        match self {
            RequestBody::Exact(spec) => std::slice::from_ref(spec),
            RequestBody::FirstAvailable(subs) => subs,
            RequestBody::Unknown => &[],
        }
    }
}

/// One request of a claim.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    pub name: String,
    pub body: RequestBody,
}

/// A claim constraint.
#[derive(Debug, Clone)]
pub enum ConstraintSpec {
    MatchAttribute {
        requests: Vec<String>,
        attribute: String,
    },
    DistinctAttribute {
        requests: Vec<String>,
        attribute: String,
    },
    /// Neither kind is set (a fatal error upstream).
    Empty,
}

/// A claim ready for [`crate::allocate`]: its name and its prepared spec.
///
/// The spec may be shared ([`PreparedClaim::with_spec`]): claims made from one template have
/// the same spec, and preparing it again for every pod cost some 1,350 instructions and a
/// dozen allocations for a claim of one request. Its fields read through the claim
/// (`claim.requests`).
#[derive(Debug, Clone)]
pub struct PreparedClaim {
    pub namespace: String,
    pub name: String,
    spec: Arc<PreparedSpec>,
}

/// What preparation makes of a claim's spec; it depends on the spec and the index alone.
#[derive(Debug)]
pub struct PreparedSpec {
    pub requests: Vec<PreparedRequest>,
    pub constraints: Vec<ConstraintSpec>,
    pub config: Vec<DeviceClaimConfiguration>,
    /// Upstream's per-claim preprocessing cannot fail for this claim on any node: classes
    /// exist, selectors are present, every request is `ExactCount`, at most 32 devices. Such
    /// claims may be rejected by a cheap check before the search.
    pub(crate) plain: bool,
    /// What the pre-search check of plain claims depends on: per request its shape, and per
    /// (sub)request the selector set and count. Claims with equal keys are rejected by the
    /// same nodes in the same state.
    pub(crate) fit_key: Vec<u64>,
    /// Per constraint, what the search needs of it (`None` for an empty constraint).
    pub(crate) constraint_plans: Vec<Option<ConstraintPlan>>,
}

/// A claim constraint as the search uses it, worked out when the claim is prepared rather
/// than at every device the search tries.
#[derive(Debug)]
pub(crate) struct ConstraintPlan {
    /// A `distinctAttribute` constraint (else a `matchAttribute` one).
    pub(crate) distinct: bool,
    /// Where each device keeps the constraint's attribute.
    pub(crate) column: Arc<AttributeColumn>,
    /// `[request][subrequest]` (one entry for an exact request): whether the constraint
    /// applies to the devices picked for it (its `requests` list is empty or names the
    /// request, or the subrequest as `<request>/<subrequest>`).
    pub(crate) applies: Vec<Vec<bool>>,
}

impl ConstraintPlan {
    fn new(
        index: &Index,
        requests: &[PreparedRequest],
        constraint: &ConstraintSpec,
    ) -> Option<Self> {
        let (names, attribute, distinct) = match constraint {
            ConstraintSpec::MatchAttribute {
                requests,
                attribute,
            } => (requests, attribute, false),
            ConstraintSpec::DistinctAttribute {
                requests,
                attribute,
            } => (requests, attribute, true),
            ConstraintSpec::Empty => return None,
        };
        let applies = requests
            .iter()
            .map(|request| match &request.body {
                RequestBody::FirstAvailable(subs) => subs
                    .iter()
                    .map(|sub| constraint_applies(names, &request.name, Some(&sub.name)))
                    .collect(),
                RequestBody::Exact(spec) => vec![constraint_applies(names, &spec.name, None)],
                RequestBody::Unknown => Vec::new(),
            })
            .collect();
        Some(ConstraintPlan {
            distinct,
            column: index.attribute_column(attribute),
            applies,
        })
    }

    /// Whether the constraint applies to (sub)request `sub` of request `request`.
    pub(crate) fn applies(&self, request: usize, sub: usize) -> bool {
        self.applies
            .get(request)
            .and_then(|subs| subs.get(sub))
            .copied()
            .unwrap_or(false)
    }
}

/// Whether a constraint listing `requests` applies to request `base` (or to its subrequest
/// `sub`).
fn constraint_applies(requests: &[String], base: &str, sub: Option<&str>) -> bool {
    if requests.is_empty() {
        return true;
    }
    if requests.iter().any(|r| r == base) {
        return true;
    }
    // A subrequest is also named by "<request>/<subrequest>".
    sub.is_some_and(|sub| {
        requests.iter().any(|r| {
            r.strip_prefix(base)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|rest| rest == sub)
        })
    })
}

impl std::ops::Deref for PreparedClaim {
    type Target = PreparedSpec;

    fn deref(&self) -> &PreparedSpec {
        &self.spec
    }
}

impl PreparedClaim {
    /// `namespace/name`, as upstream's `klog.KObj` prints a claim.
    pub fn display_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Prepares a claim; the claim's namespace defaults to `default`.
    pub fn new(index: &Index, claim: &ResourceClaim) -> PreparedClaim {
        PreparedClaim {
            namespace: claim
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
            name: claim.metadata.name.clone().unwrap_or_default(),
            spec: Arc::new(PreparedSpec::new(index, claim)),
        }
    }

    /// A claim whose spec is one already prepared: the caller knows that the claim's spec
    /// equals the one `spec` was prepared from, with the same index (a claim made from a
    /// template whose spec was prepared for an earlier claim of that template).
    pub fn with_spec(namespace: String, name: String, spec: Arc<PreparedSpec>) -> PreparedClaim {
        PreparedClaim {
            namespace,
            name,
            spec,
        }
    }

    /// The prepared spec, to be shared with [`PreparedClaim::with_spec`].
    pub fn spec(&self) -> &Arc<PreparedSpec> {
        &self.spec
    }
}

impl PreparedSpec {
    /// Whether a request of the claim lists alternatives (`firstAvailable`).
    pub fn has_first_available(&self) -> bool {
        self.requests
            .iter()
            .any(|r| matches!(r.body, RequestBody::FirstAvailable(_)))
    }

    fn new(index: &Index, claim: &ResourceClaim) -> PreparedSpec {
        let devices = claim.spec.as_ref().and_then(|s| s.devices.as_ref());
        let requests: Vec<PreparedRequest> = devices
            .and_then(|d| d.requests.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|r| prepare_request(index, r))
            .collect();
        let constraints: Vec<ConstraintSpec> = devices
            .and_then(|d| d.constraints.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|c| {
                let requests = c.requests.clone().unwrap_or_default();
                if let Some(attribute) = &c.match_attribute {
                    ConstraintSpec::MatchAttribute {
                        requests,
                        attribute: attribute.clone(),
                    }
                } else if let Some(attribute) = &c.distinct_attribute {
                    ConstraintSpec::DistinctAttribute {
                        requests,
                        attribute: attribute.clone(),
                    }
                } else {
                    ConstraintSpec::Empty
                }
            })
            .collect();
        let plain = is_plain(&requests, &constraints);
        let fit_key = fit_key(&requests);
        let constraint_plans = constraints
            .iter()
            .map(|c| ConstraintPlan::new(index, &requests, c))
            .collect();
        PreparedSpec {
            plain,
            fit_key,
            constraint_plans,
            requests,
            constraints,
            config: devices.and_then(|d| d.config.clone()).unwrap_or_default(),
        }
    }
}

fn fit_key(requests: &[PreparedRequest]) -> Vec<u64> {
    let mut key = Vec::new();
    for request in requests {
        let specs = request.body.specs();
        key.push(specs.len() as u64);
        for spec in specs {
            key.push(
                spec.selector_set
                    .as_ref()
                    .map_or(u64::MAX, |s| u64::from(s.id)),
            );
            key.push(spec.count as u64);
        }
    }
    key
}

fn is_plain(requests: &[PreparedRequest], constraints: &[ConstraintSpec]) -> bool {
    let plain_spec = |s: &RequestSpec| {
        s.class.is_some()
            && s.selector_set.is_some()
            && s.empty_selector.is_none()
            && s.mode == AllocationMode::ExactCount
            && s.capacity.is_ok()
            && s.admin_access.is_none()
            && s.count >= 0
    };
    let mut min_devices: i64 = 0;
    for request in requests {
        match &request.body {
            RequestBody::Exact(spec) if plain_spec(spec) => min_devices += spec.count,
            RequestBody::FirstAvailable(subs) if subs.iter().all(plain_spec) => {
                min_devices += subs.iter().map(|s| s.count).min().unwrap_or(0);
            }
            _ => return false,
        }
        if min_devices > 32 {
            return false;
        }
    }
    constraints
        .iter()
        .all(|c| !matches!(c, ConstraintSpec::Empty))
}

fn prepare_request(index: &Index, request: &DeviceRequest) -> PreparedRequest {
    let body = match (&request.first_available, &request.exactly) {
        (Some(subs), _) if !subs.is_empty() => RequestBody::FirstAvailable(
            subs.iter()
                .map(|s| {
                    prepare_spec(
                        index,
                        SpecFields {
                            name: &s.name,
                            class_name: &s.device_class_name,
                            selectors: s.selectors.as_deref().unwrap_or_default(),
                            mode: s.allocation_mode.as_deref(),
                            count: s.count,
                            admin_access: None,
                            tolerations: s.tolerations.as_deref().unwrap_or_default(),
                            capacity: s.capacity.as_ref().and_then(|c| c.requests.as_ref()),
                        },
                    )
                })
                .collect(),
        ),
        (_, Some(exact)) => RequestBody::Exact(prepare_exact(index, &request.name, exact)),
        _ => RequestBody::Unknown,
    };
    PreparedRequest {
        name: request.name.clone(),
        body,
    }
}

fn prepare_exact(index: &Index, name: &str, exact: &ExactDeviceRequest) -> RequestSpec {
    prepare_spec(
        index,
        SpecFields {
            name,
            class_name: &exact.device_class_name,
            selectors: exact.selectors.as_deref().unwrap_or_default(),
            mode: exact.allocation_mode.as_deref(),
            count: exact.count,
            admin_access: exact.admin_access,
            tolerations: exact.tolerations.as_deref().unwrap_or_default(),
            capacity: exact.capacity.as_ref().and_then(|c| c.requests.as_ref()),
        },
    )
}

struct SpecFields<'a> {
    name: &'a str,
    class_name: &'a str,
    selectors: &'a [k8s_openapi::api::resource::v1::DeviceSelector],
    mode: Option<&'a str>,
    count: Option<i64>,
    admin_access: Option<bool>,
    tolerations: &'a [DeviceToleration],
    capacity: Option<&'a BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
}

fn prepare_spec(index: &Index, fields: SpecFields<'_>) -> RequestSpec {
    let class = index.class(fields.class_name);
    let empty_selector = fields.selectors.iter().position(|s| s.cel.is_none());
    let expressions: Vec<String> = fields
        .selectors
        .iter()
        .map(|s| {
            s.cel
                .as_ref()
                .map(|c| c.expression.clone())
                .unwrap_or_default()
        })
        .collect();
    let selector_set = match (class, empty_selector) {
        (Some(class), None) => Some(index.selectors.intern(index, class, &expressions)),
        _ => None,
    };
    let mode = match fields.mode {
        None | Some("ExactCount") => AllocationMode::ExactCount,
        Some("All") => AllocationMode::All,
        Some(other) => AllocationMode::Unsupported(other.to_string()),
    };
    let capacity = fields
        .capacity
        .map(|requests| {
            requests
                .iter()
                .map(|(name, q)| {
                    Quantity::parse(&q.0)
                        .map(|v| (name.clone(), v))
                        .map_err(|e| format!("capacity request {name}: {e}"))
                })
                .collect::<Result<BTreeMap<_, _>, _>>()
        })
        .transpose();
    RequestSpec {
        name: fields.name.to_string(),
        class_name: fields.class_name.to_string(),
        class,
        selector_set,
        empty_selector,
        mode,
        count: fields.count.unwrap_or(1),
        admin_access: fields.admin_access,
        tolerations: fields.tolerations.to_vec(),
        capacity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{IndexInput, IndexOptions};

    /// Which (sub)requests a constraint holds, worked out once per claim: all with an empty
    /// list; a request by its name, with all its subrequests; one subrequest by
    /// `<request>/<subrequest>`.
    #[test]
    fn constraint_plans_apply_to_the_requests_they_name() {
        let index = Index::build(
            &IndexInput {
                nodes: Vec::new(),
                slices: Vec::new(),
                classes: Vec::new(),
                taint_rules: Vec::new(),
            },
            &IndexOptions::default(),
        )
        .expect("indexes");
        let claim: ResourceClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": 2}},
                    {"name": "nic", "firstAvailable": [
                        {"name": "fast", "deviceClassName": "nic"},
                        {"name": "slow", "deviceClassName": "nic"}
                    ]}
                ],
                "constraints": [
                    {"matchAttribute": "example.com/root"},
                    {"matchAttribute": "example.com/root", "requests": ["gpus"]},
                    {"distinctAttribute": "example.com/id", "requests": ["nic"]},
                    {"matchAttribute": "example.com/root", "requests": ["gpus", "nic/slow"]},
                    {"matchAttribute": "example.com/root", "requests": ["nic/none", "gpus/fast"]},
                    {"requests": ["gpus"]}
                ]
            }}
        }))
        .expect("claim");
        let prepared = PreparedClaim::new(&index, &claim);
        let applies = |plan: &ConstraintPlan| {
            [(0, 0), (1, 0), (1, 1)].map(|(request, sub)| plan.applies(request, sub))
        };
        let plans: Vec<_> = prepared
            .constraint_plans
            .iter()
            .map(Option::as_ref)
            .collect();
        assert_eq!(plans.len(), 6);
        assert_eq!(applies(plans[0].unwrap()), [true, true, true]);
        assert_eq!(applies(plans[1].unwrap()), [true, false, false]);
        assert_eq!(applies(plans[2].unwrap()), [false, true, true]);
        assert_eq!(applies(plans[3].unwrap()), [true, false, true]);
        assert_eq!(applies(plans[4].unwrap()), [false, false, false]);
        assert!(plans[5].is_none(), "an empty constraint has no plan");
        let distinct: Vec<bool> = plans[..5].iter().map(|p| p.unwrap().distinct).collect();
        assert_eq!(distinct, [false, false, true, false, false]);
        // Out of range (a request the claim does not have) applies nowhere.
        assert!(!plans[0].unwrap().applies(2, 0) && !plans[0].unwrap().applies(1, 2));
        // Constraints on one attribute share its column.
        assert!(Arc::ptr_eq(
            &plans[0].unwrap().column,
            &plans[1].unwrap().column
        ));
    }
}

//! The device taint eviction controller (kube-controller-manager,
//! `device-taint-eviction-controller`, SPEC.md §5.4): which running pods a NoExecute device
//! taint evicts, and when.
//!
//! For each allocated claim of a scheduled pod that lists the pod in `reservedFor`, every
//! device of the allocation is checked against the NoExecute taints of its current slice and of
//! the DeviceTaintRules that select it. Only tolerations with `effect: NoExecute` count (a
//! toleration without effect lets the scheduler allocate the device but does not stop the
//! eviction — an upstream quirk the simulation keeps). A matching toleration without
//! `tolerationSeconds` tolerates the taint for good; otherwise the pod goes
//! `tolerationSeconds` after the taint's `timeAdded`, and the earliest taint decides.
//! Taints with effect `None` evict nobody; they are reported as what a NoExecute taint would do.

use std::collections::BTreeMap;

use dra_alloc::{DeviceIdx, Index, taint_rule_selects, tolerates_taint};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceTaint, DeviceTaintRule, DeviceToleration,
};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;

/// Where a taint comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintSource {
    /// `DeviceTaintRule <name>` or `ResourceSlice <name>`.
    pub origin: String,
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub effect: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

/// One device taint that evicts (or, with effect None, would evict) a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvictionReason {
    pub claim: String,
    /// `driver/pool/device`.
    pub device: String,
    pub taint: TaintSource,
    /// `tolerationSeconds` of the matching NoExecute toleration; absent: evicted at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// When the controller evicts a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionTime {
    /// Seconds after the deciding taint was added (0: immediately).
    pub after_seconds: i64,
    /// The moment, when the deciding taint has a `timeAdded`.
    pub at: Option<Timestamp>,
    /// Every untolerated NoExecute taint, the deciding one first.
    pub reasons: Vec<EvictionReason>,
}

/// The device taints of the current (highest generation) slices of each pool, and the rules,
/// for lookups. It owns what it keeps, so the slices can be freed once it is built.
#[derive(Debug, Default)]
pub struct TaintView {
    /// (driver, pool, device) of every current device with a taint of its own -> (slice name,
    /// the device's taints in that slice).
    tainted: BTreeMap<(String, String, String), (String, Vec<DeviceTaint>)>,
    /// Every current device, sorted; kept only when there are rules, which may select any.
    all: Vec<(String, String, String)>,
    rules: Vec<DeviceTaintRule>,
}

impl TaintView {
    /// The taints of the index's slices (as the slices gave them, without the rules') and the
    /// rules.
    pub fn new(index: &Index, rules: &[&DeviceTaintRule]) -> TaintView {
        // The common case, no taints at all, needs no per-device map.
        let any_device_tainted = index
            .device_entries()
            .any(|(_, device)| !device.slice_taints().is_empty());
        if rules.is_empty() && !any_device_tainted {
            return TaintView::default();
        }
        let mut newest: BTreeMap<(&str, &str), i64> = BTreeMap::new();
        for (_, slice) in index.slice_entries() {
            let g = newest
                .entry((slice.driver.as_str(), slice.pool.as_str()))
                .or_insert(i64::MIN);
            *g = (*g).max(slice.generation);
        }
        // The first slice that lists a device wins.
        let mut devices: BTreeMap<(&str, &str, &str), (&str, &[DeviceTaint])> = BTreeMap::new();
        for (_, slice) in index.slice_entries() {
            let key = (slice.driver.as_str(), slice.pool.as_str());
            if newest.get(&key) != Some(&slice.generation) {
                continue;
            }
            for at in slice.devices.clone() {
                let device = index.device(DeviceIdx(at));
                devices
                    .entry((key.0, key.1, &device.name))
                    .or_insert((slice.name.as_str(), device.slice_taints()));
            }
        }
        let owned = |(driver, pool, device): &(&str, &str, &str)| {
            (driver.to_string(), pool.to_string(), device.to_string())
        };
        TaintView {
            tainted: devices
                .iter()
                .filter(|(_, (_, taints))| !taints.is_empty())
                .map(|(key, (slice, taints))| (owned(key), (slice.to_string(), taints.to_vec())))
                .collect(),
            all: if rules.is_empty() {
                Vec::new()
            } else {
                devices.keys().map(owned).collect()
            },
            rules: rules.iter().map(|r| (*r).clone()).collect(),
        }
    }

    /// Every taint of a device with its origin: rules first (by name), then the slice's taints.
    fn taints_of(&self, driver: &str, pool: &str, device: &str) -> Vec<(String, &DeviceTaint)> {
        let mut out = Vec::new();
        let mut rules: Vec<&DeviceTaintRule> = self
            .rules
            .iter()
            .filter(|r| taint_rule_selects(r, driver, pool, device))
            .collect();
        rules.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for rule in rules {
            out.push((
                format!(
                    "DeviceTaintRule {}",
                    rule.metadata.name.as_deref().unwrap_or_default()
                ),
                &rule.spec.taint,
            ));
        }
        // Most clusters have no tainted device: no key to build then.
        let key = || (driver.to_string(), pool.to_string(), device.to_string());
        if let Some((slice, taints)) = (!self.tainted.is_empty())
            .then(|| self.tainted.get(&key()))
            .flatten()
        {
            for taint in taints {
                out.push((format!("ResourceSlice {slice}"), taint));
            }
        }
        out
    }

    /// Every device of the current slices that has a taint, with its taints (rules first).
    pub fn tainted_devices(&self) -> Vec<((String, String, String), Vec<TaintSource>)> {
        // Without rules only the slices' taints count.
        let candidates: Vec<&(String, String, String)> = if self.rules.is_empty() {
            self.tainted.keys().collect()
        } else {
            self.all.iter().collect()
        };
        candidates
            .into_iter()
            .filter_map(|key| {
                let (driver, pool, device) = key;
                let taints: Vec<TaintSource> = self
                    .taints_of(driver, pool, device)
                    .into_iter()
                    .map(|(origin, taint)| TaintSource {
                        origin,
                        key: taint.key.clone(),
                        value: taint.value.clone(),
                        effect: taint.effect.clone(),
                        time_added: taint.time_added.as_ref().map(|t| t.0.to_string()),
                    })
                    .collect();
                (!taints.is_empty()).then(|| (key.clone(), taints))
            })
            .collect()
    }

    /// `claimEvictionTime` over one allocation; `None` when nothing evicts. Also returns the
    /// taints with effect None that would evict if they were NoExecute.
    pub fn claim_eviction(
        &self,
        claim: &str,
        allocation: &AllocationResult,
    ) -> (Option<EvictionTime>, Vec<EvictionReason>) {
        let mut reasons: Vec<(Option<Timestamp>, i64, EvictionReason)> = Vec::new();
        let mut dry_run = Vec::new();
        for result in allocation
            .devices
            .iter()
            .flat_map(|d| d.results.iter().flatten())
        {
            let tolerations = result.tolerations.as_deref().unwrap_or_default();
            for (origin, taint) in self.taints_of(&result.driver, &result.pool, &result.device) {
                let source = TaintSource {
                    origin,
                    key: taint.key.clone(),
                    value: taint.value.clone(),
                    effect: taint.effect.clone(),
                    time_added: taint.time_added.as_ref().map(|t| t.0.to_string()),
                };
                let device = format!("{}/{}/{}", result.driver, result.pool, result.device);
                match taint.effect.as_str() {
                    "NoExecute" => {}
                    "None" => {
                        if !tolerated_for_good(tolerations, taint).0 {
                            dry_run.push(EvictionReason {
                                claim: claim.to_string(),
                                device,
                                taint: source,
                                toleration_seconds: None,
                            });
                        }
                        continue;
                    }
                    _ => continue,
                }
                let (forever, seconds) = tolerated_for_good(tolerations, taint);
                if forever {
                    continue;
                }
                reasons.push((
                    taint.time_added.as_ref().map(|t| t.0),
                    seconds.unwrap_or(0),
                    EvictionReason {
                        claim: claim.to_string(),
                        device,
                        taint: source,
                        toleration_seconds: seconds,
                    },
                ));
            }
        }
        if reasons.is_empty() {
            return (None, dry_run);
        }
        let when = |r: &(Option<Timestamp>, i64, EvictionReason)| {
            r.0.and_then(|t| t.checked_add(SignedDuration::from_secs(r.1)).ok())
        };
        // Earliest first: known moments by time, then unknown ones by delay.
        reasons.sort_by(|a, b| match (when(a), when(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.1.cmp(&b.1),
        });
        let first = &reasons[0];
        let time = EvictionTime {
            after_seconds: first.1,
            at: when(first),
            reasons: reasons.iter().map(|r| r.2.clone()).collect(),
        };
        (Some(time), dry_run)
    }
}

/// (tolerated forever, smallest `tolerationSeconds` of the matching NoExecute tolerations).
/// Only tolerations with `effect: NoExecute` are considered, as the controller does.
fn tolerated_for_good(
    tolerations: &[DeviceToleration],
    taint: &DeviceTaint,
) -> (bool, Option<i64>) {
    let probe = DeviceTaint {
        effect: "NoExecute".to_string(),
        ..taint.clone()
    };
    let mut seconds: Option<i64> = None;
    for toleration in tolerations {
        if toleration.effect.as_deref() != Some("NoExecute") || !tolerates_taint(toleration, &probe)
        {
            continue;
        }
        match toleration.toleration_seconds {
            None => return (true, None),
            Some(s) => seconds = Some(seconds.map_or(s.max(0), |c| c.min(s.max(0)))),
        }
    }
    (false, seconds)
}

/// Merges the eviction times of a pod's claims: the earliest wins, reasons accumulate.
pub fn earliest(times: Vec<EvictionTime>) -> Option<EvictionTime> {
    let mut times = times;
    times.sort_by(|a, b| match (a.at, b.at) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.after_seconds.cmp(&b.after_seconds),
    });
    let mut iter = times.into_iter();
    let mut first = iter.next()?;
    for other in iter {
        first.reasons.extend(other.reasons);
    }
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(yaml: &str) -> dra_api::Cluster {
        let loaded = dra_api::load_str("t.yaml", yaml);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        loaded.cluster
    }

    fn index(cluster: &dra_api::Cluster) -> Index {
        crate::SimInput::from_cluster(cluster)
            .build_index(Vec::new())
            .expect("index")
    }

    const SLICE: &str = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n  nodeName: node-1\n  pool: {name: p, generation: 1, resourceSliceCount: 1}\n  devices:\n  - name: a\n    taints: [{key: broken, effect: NoExecute, timeAdded: '2026-03-01T10:00:00Z'}]\n  - name: b\n    taints: [{key: soon, effect: None}]\n";

    fn allocation(device: &str, tolerations: &str) -> AllocationResult {
        serde_json::from_str(&format!(
            "{{\"devices\": {{\"results\": [{{\"request\": \"r\", \"driver\": \"d\", \"pool\": \"p\", \"device\": \"{device}\", \"tolerations\": {tolerations}}}]}}}}"
        ))
        .unwrap()
    }

    #[test]
    fn no_execute_tolerations() {
        let c = cluster(SLICE);
        let view = TaintView::new(&index(&c), &[]);
        // No toleration: evicted at once.
        let (time, _) = view.claim_eviction("ns/c", &allocation("a", "[]"));
        let time = time.unwrap();
        assert_eq!(time.after_seconds, 0);
        assert_eq!(time.at.unwrap().to_string(), "2026-03-01T10:00:00Z");
        // A toleration without effect does not count for the controller.
        let (time, _) = view.claim_eviction(
            "ns/c",
            &allocation("a", "[{\"key\": \"broken\", \"operator\": \"Exists\"}]"),
        );
        assert!(time.is_some());
        // NoExecute with seconds: later.
        let (time, _) = view.claim_eviction(
            "ns/c",
            &allocation(
                "a",
                "[{\"key\": \"broken\", \"operator\": \"Exists\", \"effect\": \"NoExecute\", \"tolerationSeconds\": 300}]",
            ),
        );
        let time = time.unwrap();
        assert_eq!(time.after_seconds, 300);
        assert_eq!(time.at.unwrap().to_string(), "2026-03-01T10:05:00Z");
        // NoExecute without seconds: tolerated for good.
        let (time, _) = view.claim_eviction(
            "ns/c",
            &allocation(
                "a",
                "[{\"key\": \"broken\", \"operator\": \"Exists\", \"effect\": \"NoExecute\"}]",
            ),
        );
        assert!(time.is_none());
        // Effect None: only a dry run.
        let (time, dry_run) = view.claim_eviction("ns/c", &allocation("b", "[]"));
        assert!(time.is_none());
        assert_eq!(dry_run.len(), 1);
        assert_eq!(dry_run[0].taint.key, "soon");
    }

    #[test]
    fn rules_select_devices() {
        let c = cluster(&format!(
            "{SLICE}---\napiVersion: resource.k8s.io/v1\nkind: DeviceTaintRule\nmetadata: {{name: drain}}\nspec:\n  deviceSelector: {{driver: d, pool: p}}\n  taint: {{key: drain, effect: NoExecute}}\n"
        ));
        let rules: Vec<&DeviceTaintRule> =
            c.device_taint_rules.iter().map(|r| &*r.object).collect();
        let view = TaintView::new(&index(&c), &rules);
        let (time, _) = view.claim_eviction("ns/c", &allocation("b", "[]"));
        let time = time.unwrap();
        assert_eq!(time.reasons[0].taint.origin, "DeviceTaintRule drain");
        assert_eq!(time.at, None);
    }
}

//! Random small clusters and claim sequences for the property tests.
//!
//! A [`Scenario`] is built from one seed by a small deterministic generator (SplitMix64), so a
//! failing case is reproduced by its seed alone and can be dumped as a cluster file
//! ([`Scenario::to_cluster_yaml`]) for `dra simulate`. Objects are written as Kubernetes JSON and
//! deserialised into the k8s-openapi types, so they look exactly like loaded input.
//!
//! Generated inputs are API-valid except where noted, and avoid the inputs on which upstream's
//! result depends on a bug fixed after the 1.37 snapshot (counters and shared devices, see
//! `conformance/README.md`): counters are consumed only by exclusive devices, only one driver
//! has counter pools, and counter pools have a single generation.

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use serde_json::{Map, Value, json};

/// SplitMix64: tiny, deterministic, good enough for test inputs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What kind of inputs to generate.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenOptions {
    /// Tiny inputs for the brute-force comparison: at most 6 devices, no counters, no
    /// capacities, no capacity requests, distinctAttribute only over single-device requests,
    /// no constraints in claims with an `All` request.
    pub tiny: bool,
}

/// One allocation attempt: these claims (indices into [`Scenario::claims`]) together on this
/// node.
#[derive(Debug, Clone)]
pub struct Step {
    pub node: usize,
    pub claims: Vec<usize>,
}

/// A generated cluster and a sequence of allocation attempts.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub options: GenOptions,
    pub nodes: Vec<Node>,
    pub slices: Vec<ResourceSlice>,
    pub classes: Vec<DeviceClass>,
    pub claims: Vec<ResourceClaim>,
    pub steps: Vec<Step>,
    /// Raw JSON of every object, for dumping.
    raw: Vec<Value>,
}

pub const GPU: &str = "gpu.example.com";
pub const NIC: &str = "nic.example.com";
pub const ADMIN_NAMESPACE: &str = "admin-ns";

/// Class names with their selectors and whether they carry config.
const CLASSES: &[(&str, &[&str], bool)] = &[
    ("gpu", &["device.driver == \"gpu.example.com\""], false),
    ("nic", &["device.driver == \"nic.example.com\""], false),
    ("any", &[], false),
    (
        "big",
        &[
            "device.driver == \"gpu.example.com\" && device.attributes[\"gpu.example.com\"].mem >= 40",
        ],
        false,
    ),
    (
        "healthy",
        &["device.attributes[device.driver].healthy"],
        false,
    ),
    ("gpu-cfg", &["device.driver == \"gpu.example.com\""], true),
    ("nic-cfg", &["device.driver == \"nic.example.com\""], true),
];

/// Request selectors: all compile and none fails at runtime on generated devices (every
/// device has `model`, `mem`, `healthy` and `driverVersion` in its driver's domain).
pub const REQUEST_SELECTORS: &[&str] = &[
    "device.attributes[device.driver].model == \"a100\"",
    "device.attributes[device.driver].model != \"l4\"",
    "device.attributes[device.driver].mem >= 16",
    "device.attributes[device.driver].driverVersion.isGreaterThan(semver(\"1.1.0\"))",
    "\"numaNode\" in device.attributes[\"resource.kubernetes.io\"] && device.attributes[\"resource.kubernetes.io\"].numaNode == 1",
    "!(\"memory\" in device.capacity[device.driver]) || device.capacity[device.driver].memory.compareTo(quantity(\"16Gi\")) >= 0",
    "device.allowMultipleAllocations",
    "!device.allowMultipleAllocations",
    "device.attributes[device.driver].healthy && device.attributes[device.driver].model in [\"a100\", \"h100\"]",
];

const CONSTRAINT_ATTRIBUTES: &[&str] = &[
    "gpu.example.com/model",
    "nic.example.com/model",
    "gpu.example.com/mem",
    "resource.kubernetes.io/numaNode",
    "resource.kubernetes.io/pcieRoot",
    "gpu.example.com/healthy",
    "gpu.example.com/driverVersion",
];

const TAINT_KEYS: &[&str] = &["example.com/unhealthy", "example.com/maintenance"];
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "NoExecute", "None"];

fn node_name(i: usize) -> String {
    format!("node-{i}")
}

/// Per-pool generation state.
struct PoolGen {
    driver: &'static str,
    name: String,
    next_device: usize,
    device_names: Vec<String>,
}

struct Generator {
    rng: Rng,
    options: GenOptions,
    num_nodes: usize,
    node_labels: Vec<Map<String, Value>>,
    slices: Vec<Value>,
    slice_names: Vec<String>,
    /// (driver, pool name) of the pools generated so far: each pool is generated once.
    pools: Vec<(&'static str, String)>,
    devices_left: usize,
}

impl Generator {
    fn unique_slice_name(&mut self, base: &str) -> String {
        const WORDS: &[&str] = &["a", "b", "c", "m", "x", "z", "10", "9"];
        for attempt in 0.. {
            let word = *self.rng.pick(WORDS);
            let name = if attempt < 8 {
                format!("{base}-{word}")
            } else {
                format!("{base}-{word}{attempt}")
            };
            if !self.slice_names.contains(&name) {
                self.slice_names.push(name.clone());
                return name;
            }
        }
        unreachable!("some name is free")
    }

    fn node_selector(&mut self) -> Value {
        match self.rng.below(5) {
            0 => json!({"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]}]}]}),
            1 => json!({"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "rack", "operator": "NotIn", "values": ["r0"]}]}]}),
            2 => json!({"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "accelerated", "operator": "Exists"}]}]}),
            3 => {
                // Field selectors take exactly one value.
                let (operator, name) = (
                    *self.rng.pick(&["In", "NotIn"]),
                    node_name(self.rng.below(self.num_nodes)),
                );
                json!({"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": operator, "values": [name]}]}]})
            }
            _ => json!({"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a", "b"]},
                {"key": "rack", "operator": "In", "values": ["r1", "r2"]}]}]}),
        }
    }

    fn attributes(&mut self, driver: &str) -> Value {
        let mut attrs = Map::new();
        attrs.insert(
            "model".into(),
            json!({"string": *self.rng.pick(&["a100", "h100", "l4"])}),
        );
        attrs.insert(
            "mem".into(),
            json!({"int": *self.rng.pick(&[8, 16, 40, 80])}),
        );
        attrs.insert("healthy".into(), json!({"bool": self.rng.chance(75)}));
        attrs.insert(
            "driverVersion".into(),
            json!({"version": *self.rng.pick(&["1.0.0", "1.2.0", "2.0.0-rc.1"])}),
        );
        if self.rng.chance(80) {
            attrs.insert(
                "resource.kubernetes.io/numaNode".into(),
                json!({"int": self.rng.below(2)}),
            );
        }
        if self.rng.chance(70) {
            attrs.insert(
                "resource.kubernetes.io/pcieRoot".into(),
                json!({"string": *self.rng.pick(&["pci0000:00", "pci0000:01"])}),
            );
        }
        if driver == NIC && self.rng.chance(30) {
            // A fully qualified name of the driver's own domain.
            attrs.insert(
                format!("{NIC}/speed"),
                json!({"int": *self.rng.pick(&[100, 200])}),
            );
        }
        Value::Object(attrs)
    }

    fn taints(&mut self) -> Option<Value> {
        if !self.rng.chance(20) {
            return None;
        }
        let n = self.rng.range(1, 2);
        let taints: Vec<Value> = (0..n)
            .map(|_| {
                let mut taint = json!({
                    "key": *self.rng.pick(TAINT_KEYS),
                    "effect": *self.rng.pick(TAINT_EFFECTS),
                });
                if self.rng.chance(40) {
                    taint["value"] = json!(*self.rng.pick(&["x", "y"]));
                }
                taint
            })
            .collect();
        Some(Value::Array(taints))
    }

    fn shared_capacity(&mut self) -> Value {
        let policy = match self.rng.below(5) {
            0 => None,
            1 => Some(json!({"default": "1G"})),
            2 => Some(json!({"default": "1G", "validValues": ["1G", "2G", "5G"]})),
            3 => Some(
                json!({"default": "1G", "validRange": {"min": "1G", "max": "8G", "step": "1G"}}),
            ),
            _ => Some(json!({"default": "500M", "validRange": {"min": "500M", "step": "250M"}})),
        };
        let mut bandwidth = json!({"value": "10G"});
        if let Some(policy) = policy {
            bandwidth["requestPolicy"] = policy;
        }
        let mut capacity = Map::new();
        capacity.insert("bandwidth".into(), bandwidth);
        if self.rng.chance(30) {
            capacity.insert("memory".into(), json!({"value": "16Gi"}));
        }
        Value::Object(capacity)
    }

    /// One device of a pool; `counter_sets` are the sets the pool's counter slice defines.
    fn device(&mut self, pool: &mut PoolGen, counter_sets: &[String], per_device: bool) -> Value {
        let tiny = self.options.tiny;
        let shared = self.rng.chance(12);
        let consumes = !shared && !counter_sets.is_empty() && self.rng.chance(75);
        let prefix = if shared {
            "shared"
        } else if consumes {
            "part"
        } else {
            "dev"
        };
        let mut name = format!("{prefix}-{}", pool.next_device);
        pool.next_device += 1;
        // Rarely a duplicate name: the pool becomes invalid.
        if !pool.device_names.is_empty() && self.rng.chance(2) {
            name = self.rng.pick(&pool.device_names).clone();
        }
        pool.device_names.push(name.clone());
        let mut device = json!({"name": name, "attributes": self.attributes(pool.driver)});
        if shared {
            device["allowMultipleAllocations"] = json!(true);
            if !tiny {
                device["capacity"] = self.shared_capacity();
            }
        } else if !tiny && self.rng.chance(50) {
            device["capacity"] =
                json!({"memory": {"value": *self.rng.pick(&["8Gi", "16Gi", "40Gi"])}});
        }
        if consumes {
            let set = self.rng.pick(counter_sets).clone();
            let mut counters = Map::new();
            counters.insert(
                "mem".into(),
                json!({"value": *self.rng.pick(&["10Gi", "20Gi", "40Gi"])}),
            );
            if self.rng.chance(40) {
                counters.insert("slots".into(), json!({"value": "1"}));
            }
            device["consumesCounters"] = json!([{"counterSet": set, "counters": counters}]);
        }
        if let Some(taints) = self.taints() {
            device["taints"] = taints;
        }
        if per_device {
            match self.rng.below(3) {
                0 => device["nodeName"] = json!(node_name(self.rng.below(self.num_nodes))),
                1 => device["allNodes"] = json!(true),
                _ => device["nodeSelector"] = self.node_selector(),
            }
        }
        device
    }

    fn slice(
        &mut self,
        name: String,
        pool: &PoolGen,
        generation: i64,
        count: usize,
        selection: &Value,
        devices: Vec<Value>,
    ) -> Value {
        let mut spec = json!({
            "driver": pool.driver,
            "pool": {"name": pool.name, "generation": generation, "resourceSliceCount": count},
        });
        for (k, v) in selection.as_object().into_iter().flatten() {
            spec[k] = v.clone();
        }
        if !devices.is_empty() {
            spec["devices"] = Value::Array(devices);
        }
        json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": spec,
        })
    }

    /// Generates one pool (all its slices) and appends them. `kind`: 0 node-local (on
    /// `local_node`), 1 nodeSelector, 2 allNodes, 3 per-device node selection.
    fn pool(&mut self, index: usize, driver: &'static str, kind: usize, local_node: usize) {
        let tiny = self.options.tiny;
        let name = match kind {
            0 if self.rng.chance(70) && !self.pools.contains(&(driver, node_name(local_node))) => {
                node_name(local_node)
            }
            0 => format!("local-{index}"),
            1 | 2 => format!("net-{index}"),
            _ => format!("fabric-{index}"),
        };
        self.pools.push((driver, name.clone()));
        let mut pool = PoolGen {
            driver,
            name,
            next_device: 0,
            device_names: Vec::new(),
        };
        let selection = match kind {
            0 => json!({"nodeName": node_name(local_node)}),
            1 => json!({"nodeSelector": self.node_selector()}),
            2 => json!({"allNodes": true}),
            _ => json!({"perDeviceNodeSelection": true}),
        };
        let per_device = kind == 3;
        let with_counters = !tiny && driver == GPU && self.rng.chance(35);
        let counter_sets: Vec<String> = if with_counters {
            (0..self.rng.range(1, 2))
                .map(|i| format!("cs-{i}"))
                .collect()
        } else {
            Vec::new()
        };
        let num_device_slices = if tiny {
            self.rng.range(1, 2)
        } else {
            self.rng.range(1, 3)
        };
        let single_generation = with_counters;
        let generation = if single_generation {
            0
        } else {
            self.rng.range(0, 2) as i64
        };
        let total_slices = num_device_slices + usize::from(with_counters);
        // Incomplete pools: the count says one more slice than exists.
        let incomplete = !with_counters && self.rng.chance(8);
        let count = total_slices + usize::from(incomplete);
        let base = format!(
            "{}-{}",
            if driver == GPU { "gpu" } else { "nic" },
            pool.name
        );
        let mut slices = Vec::new();
        if with_counters {
            let counters_selection = match self.rng.below(3) {
                0 => selection.clone(),
                1 => json!({"allNodes": true}),
                // Possibly not matching the node: the pool then looks incomplete and the
                // completeness path finds the counter slice.
                _ => json!({"nodeSelector": self.node_selector()}),
            };
            let counters_selection =
                if per_device && counters_selection.get("perDeviceNodeSelection").is_some() {
                    json!({"allNodes": true})
                } else {
                    counters_selection
                };
            let sets: Vec<Value> = counter_sets
                .iter()
                .map(|set| {
                    json!({"name": set, "counters": {
                        "mem": {"value": *self.rng.pick(&["40Gi", "80Gi"])},
                        "slots": {"value": *self.rng.pick(&["2", "4"])},
                    }})
                })
                .collect();
            let name = self.unique_slice_name(&base);
            let mut slice = self.slice(
                name,
                &pool,
                generation,
                count,
                &counters_selection,
                Vec::new(),
            );
            slice["spec"]["sharedCounters"] = Value::Array(sets);
            slices.push(slice);
        }
        for _ in 0..num_device_slices {
            let max = if tiny { self.devices_left.min(2) } else { 4 };
            let n = if max == 0 { 0 } else { self.rng.range(1, max) };
            let devices: Vec<Value> = (0..n)
                .map(|_| self.device(&mut pool, &counter_sets, per_device))
                .collect();
            self.devices_left = self.devices_left.saturating_sub(n);
            let name = self.unique_slice_name(&base);
            slices.push(self.slice(name, &pool, generation, count, &selection, devices));
        }
        // Binding conditions on some pools' devices: such pools are tried last.
        if self.rng.chance(15) {
            for slice in &mut slices {
                for device in slice["spec"]["devices"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    if self.rng.chance(60) {
                        device["bindingConditions"] = json!(["attached"]);
                        device["bindingFailureConditions"] = json!(["attach-failed"]);
                        if self.rng.chance(30) {
                            device["bindsToNode"] = json!(true);
                        }
                    }
                }
            }
        }
        // An outdated slice of an older generation (ignored), or, for a node-local pool, a
        // newer generation published on another node (the pool is obsolete where it is
        // incomplete).
        if !single_generation && !tiny && self.rng.chance(15) {
            if generation > 0 {
                let devices: Vec<Value> = (0..self.rng.range(1, 2))
                    .map(|_| self.device(&mut pool, &[], per_device))
                    .collect();
                let name = self.unique_slice_name(&base);
                let old = self.slice(name, &pool, generation - 1, count, &selection, devices);
                let at = self.rng.below(slices.len() + 1);
                slices.insert(at, old);
            } else if kind == 0 && incomplete && self.num_nodes > 1 {
                let other = (local_node + 1) % self.num_nodes;
                let devices: Vec<Value> = vec![self.device(&mut pool, &[], false)];
                let name = self.unique_slice_name(&base);
                let newer = self.slice(
                    name,
                    &pool,
                    generation + 1,
                    1,
                    &json!({"nodeName": node_name(other)}),
                    devices,
                );
                slices.push(newer);
            }
        }
        // Input order is not name order.
        if slices.len() > 1 && self.rng.chance(50) {
            slices.reverse();
        }
        self.slices.extend(slices);
    }
}

/// Request-level generation context.
struct RequestGen<'a> {
    rng: &'a mut Rng,
    tiny: bool,
}

impl RequestGen<'_> {
    fn class(&mut self) -> &'static str {
        // GPUs are more common than NICs in generated pools.
        const WEIGHTED: &[&str] = &[
            "gpu", "gpu", "gpu-cfg", "big", "nic", "nic-cfg", "any", "any", "healthy",
        ];
        let class: &&str = self.rng.pick(WEIGHTED);
        class
    }

    fn count(&mut self) -> i64 {
        if self.tiny {
            self.rng.range(1, 2) as i64
        } else {
            *self.rng.pick(&[1, 1, 1, 2, 2, 3]) as i64
        }
    }

    fn selectors(&mut self) -> Option<Value> {
        if !self.rng.chance(35) {
            return None;
        }
        let expression = *self.rng.pick(REQUEST_SELECTORS);
        Some(json!([{"cel": {"expression": expression}}]))
    }

    fn tolerations(&mut self) -> Option<Value> {
        if !self.rng.chance(30) {
            return None;
        }
        let n = self.rng.range(1, 2);
        let list: Vec<Value> = (0..n)
            .map(|_| {
                let mut t = Map::new();
                if self.rng.chance(80) {
                    t.insert("key".into(), json!(*self.rng.pick(TAINT_KEYS)));
                }
                let exists = self.rng.chance(50);
                t.insert(
                    "operator".into(),
                    json!(if exists { "Exists" } else { "Equal" }),
                );
                if !exists && self.rng.chance(50) {
                    t.insert("value".into(), json!(*self.rng.pick(&["x", "y"])));
                }
                if self.rng.chance(40) {
                    t.insert(
                        "effect".into(),
                        json!(*self.rng.pick(&["NoSchedule", "NoExecute"])),
                    );
                }
                if self.rng.chance(15) {
                    t.insert("tolerationSeconds".into(), json!(300));
                }
                Value::Object(t)
            })
            .collect();
        Some(Value::Array(list))
    }

    fn capacity(&mut self) -> Option<Value> {
        if self.tiny || !self.rng.chance(20) {
            return None;
        }
        Some(match self.rng.below(3) {
            0 => {
                json!({"requests": {"bandwidth": *self.rng.pick(&["500M", "1G", "1500M", "2G", "3G", "2100M"])}})
            }
            1 => json!({"requests": {"memory": *self.rng.pick(&["4Gi", "8Gi", "16Gi"])}}),
            _ => json!({"requests": {"bandwidth": "1G", "memory": "8Gi"}}),
        })
    }

    /// Fields shared by `exactly` and subrequests.
    fn body(&mut self, allow_all: bool) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("deviceClassName".into(), json!(self.class()));
        if allow_all && self.rng.chance(8) {
            body.insert("allocationMode".into(), json!("All"));
        } else {
            body.insert("allocationMode".into(), json!("ExactCount"));
            body.insert("count".into(), json!(self.count()));
        }
        if let Some(s) = self.selectors() {
            body.insert("selectors".into(), s);
        }
        if let Some(t) = self.tolerations() {
            body.insert("tolerations".into(), t);
        }
        if let Some(c) = self.capacity() {
            body.insert("capacity".into(), c);
        }
        body
    }
}

/// Names a constraint may list for a request: `r`, or `r/s` for its subrequests.
fn request_names(requests: &[Value]) -> Vec<String> {
    let mut names = Vec::new();
    for r in requests {
        let name = r["name"].as_str().unwrap_or_default().to_string();
        names.push(name.clone());
        for sub in r["firstAvailable"].as_array().into_iter().flatten() {
            names.push(format!(
                "{name}/{}",
                sub["name"].as_str().unwrap_or_default()
            ));
        }
    }
    names
}

fn claim(rng: &mut Rng, options: GenOptions, index: usize) -> Value {
    let tiny = options.tiny;
    let mut rg = RequestGen { rng, tiny };
    let num_requests = if tiny {
        rg.rng.range(1, 2)
    } else {
        *rg.rng.pick(&[1, 1, 1, 2, 2, 3])
    };
    let mut admin = false;
    let mut requests = Vec::new();
    for r in 0..num_requests {
        let name = format!("r{r}");
        if rg.rng.chance(25) {
            let subs: Vec<Value> = (0..rg.rng.range(1, if tiny { 2 } else { 3 }))
                .map(|s| {
                    let mut body = rg.body(true);
                    body.insert("name".into(), json!(format!("s{s}")));
                    Value::Object(body)
                })
                .collect();
            requests.push(json!({"name": name, "firstAvailable": subs}));
        } else {
            let mut body = rg.body(true);
            if rg.rng.chance(10) {
                body.insert("adminAccess".into(), json!(true));
                admin = true;
            }
            requests.push(json!({"name": name, "exactly": body}));
        }
    }
    let names = request_names(&requests);
    let has_all = requests.iter().any(|r| {
        r["exactly"]["allocationMode"] == "All"
            || r["firstAvailable"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["allocationMode"] == "All")
    });
    let mut constraints = Vec::new();
    if !(tiny && has_all) {
        let num_constraints = *rg.rng.pick(&[0, 0, 0, 0, 1, 1, 1, 2]);
        for _ in 0..num_constraints {
            // Mostly attributes every driver may have; driver-specific ones fail on the other
            // driver's devices.
            let attribute = if rg.rng.chance(65) {
                *rg.rng.pick(&CONSTRAINT_ATTRIBUTES[3..5])
            } else {
                *rg.rng.pick(CONSTRAINT_ATTRIBUTES)
            };
            let listed: Vec<String> = if rg.rng.chance(40) {
                Vec::new()
            } else {
                names
                    .iter()
                    .filter(|_| rg.rng.chance(60))
                    .cloned()
                    .collect()
            };
            let distinct = rg.rng.chance(40);
            if distinct && tiny && !single_device_requests(&requests, &listed) {
                continue;
            }
            let mut c =
                json!({ if distinct { "distinctAttribute" } else { "matchAttribute" }: attribute });
            if !listed.is_empty() {
                c["requests"] = json!(listed);
            }
            constraints.push(c);
        }
    }
    let mut config = Vec::new();
    for k in 0..rg.rng.below(3) {
        let mut entry =
            json!({"opaque": {"driver": GPU, "parameters": {"kind": "ClaimConfig", "n": k}}});
        if rg.rng.chance(60) {
            let listed: Vec<String> = names
                .iter()
                .filter(|_| rg.rng.chance(50))
                .cloned()
                .collect();
            if !listed.is_empty() {
                entry["requests"] = json!(listed);
            }
        }
        config.push(entry);
    }
    let mut devices = json!({"requests": requests});
    if !constraints.is_empty() {
        devices["constraints"] = Value::Array(constraints);
    }
    if !config.is_empty() {
        devices["config"] = Value::Array(config);
    }
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": format!("claim-{index}"),
            "namespace": if admin { ADMIN_NAMESPACE } else { "default" },
        },
        "spec": {"devices": devices},
    })
}

/// Whether every (sub)request a constraint listing `listed` applies to picks at most one
/// device (distinctAttribute is then exact despite upstream's per-request keying).
fn single_device_requests(requests: &[Value], listed: &[String]) -> bool {
    requests.iter().all(|r| {
        let name = r["name"].as_str().unwrap_or_default();
        let bodies: Vec<(&Value, String)> = match r["firstAvailable"].as_array() {
            Some(subs) => subs
                .iter()
                .map(|s| {
                    (
                        s,
                        format!("{name}/{}", s["name"].as_str().unwrap_or_default()),
                    )
                })
                .collect(),
            None => vec![(&r["exactly"], name.to_string())],
        };
        bodies.iter().all(|(body, full)| {
            let applies = listed.is_empty()
                || listed.iter().any(|l| l == name)
                || listed.iter().any(|l| l == full);
            !applies || (body["allocationMode"] != "All" && body["count"].as_i64() == Some(1))
        })
    })
}

fn class(name: &str, selectors: &[&str], with_config: bool) -> Value {
    let mut spec = Map::new();
    if !selectors.is_empty() {
        spec.insert(
            "selectors".into(),
            Value::Array(
                selectors
                    .iter()
                    .map(|e| json!({"cel": {"expression": e}}))
                    .collect(),
            ),
        );
    }
    if with_config {
        let driver = if name.starts_with("nic") { NIC } else { GPU };
        spec.insert(
            "config".into(),
            json!([
                {"opaque": {"driver": driver, "parameters": {"kind": "ClassConfig", "class": name}}},
                {"opaque": {"driver": driver, "parameters": {"kind": "ClassConfig", "second": true}}},
            ]),
        );
    }
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn from_value<T: k8s_openapi::serde::de::DeserializeOwned>(value: &Value) -> T {
    match serde_json::from_value(value.clone()) {
        Ok(v) => v,
        Err(e) => panic!("generated object does not deserialize: {e}\n{value:#}"),
    }
}

/// Generates a scenario from a seed.
pub fn generate(seed: u64, options: GenOptions) -> Scenario {
    let mut rng = Rng::new(seed);
    let tiny = options.tiny;
    let num_nodes = if tiny {
        rng.range(1, 2)
    } else {
        rng.range(1, 4)
    };
    let node_labels: Vec<Map<String, Value>> = (0..num_nodes)
        .map(|i| {
            let mut labels = Map::new();
            labels.insert("kubernetes.io/hostname".into(), json!(node_name(i)));
            labels.insert("zone".into(), json!(*rng.pick(&["a", "b"])));
            labels.insert("rack".into(), json!(*rng.pick(&["r0", "r1", "r2"])));
            if rng.chance(50) {
                labels.insert("accelerated".into(), json!("true"));
            }
            labels
        })
        .collect();
    let mut generator = Generator {
        rng: rng.clone(),
        options,
        num_nodes,
        node_labels,
        slices: Vec::new(),
        slice_names: Vec::new(),
        pools: Vec::new(),
        devices_left: if tiny { 6 } else { usize::MAX },
    };
    // Most nodes get a node-local pool; then one or two pools of the other kinds.
    let mut index = 0;
    for n in 0..num_nodes {
        for (driver, percent) in [
            (GPU, if tiny { 50 } else { 70 }),
            (NIC, if tiny { 20 } else { 35 }),
        ] {
            if generator.rng.chance(percent) {
                generator.pool(index, driver, 0, n);
                index += 1;
            }
        }
    }
    let others = if tiny { 1 } else { generator.rng.range(1, 2) };
    for _ in 0..others {
        let kind = *generator.rng.pick(&[0, 1, 2, 2, 3]);
        let node = generator.rng.below(num_nodes);
        let driver = if generator.rng.chance(50) { GPU } else { NIC };
        generator.pool(index, driver, kind, node);
        index += 1;
    }
    let local_nodes: Vec<usize> = (0..num_nodes)
        .filter(|n| {
            generator
                .pools
                .iter()
                .any(|(_, name)| *name == node_name(*n))
        })
        .collect();
    let mut rng = generator.rng.clone();
    let mut raw = Vec::new();
    let mut nodes = Vec::new();
    for (i, labels) in generator.node_labels.iter().enumerate() {
        let node = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node_name(i), "labels": labels},
        });
        nodes.push(from_value::<Node>(&node));
        raw.push(node);
    }
    let classes: Vec<Value> = CLASSES
        .iter()
        .map(|(name, selectors, config)| class(name, selectors, *config))
        .collect();
    let num_steps = rng.range(2, if tiny { 4 } else { 6 });
    let mut claims_raw = Vec::new();
    let mut steps = Vec::new();
    for _ in 0..num_steps {
        let n = if rng.chance(65) { 1 } else { 2 };
        let mut ids = Vec::new();
        for _ in 0..n {
            let c = claim(&mut rng, options, claims_raw.len());
            ids.push(claims_raw.len());
            claims_raw.push(c);
        }
        // The claims of one step belong to one pod, so to one namespace.
        if ids
            .iter()
            .any(|i| claims_raw[*i]["metadata"]["namespace"] == ADMIN_NAMESPACE)
        {
            for i in &ids {
                claims_raw[*i]["metadata"]["namespace"] = json!(ADMIN_NAMESPACE);
            }
        }
        // Mostly nodes with node-local devices, where allocations are likely to succeed.
        let node = if !local_nodes.is_empty() && rng.chance(70) {
            *rng.pick(&local_nodes)
        } else {
            rng.below(num_nodes)
        };
        steps.push(Step { node, claims: ids });
    }
    let slices: Vec<ResourceSlice> = generator.slices.iter().map(from_value).collect();
    let classes_typed: Vec<DeviceClass> = classes.iter().map(from_value).collect();
    let claims: Vec<ResourceClaim> = claims_raw.iter().map(from_value).collect();
    raw.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": ADMIN_NAMESPACE, "labels": {"resource.kubernetes.io/admin-access": "true"}}}),
    );
    raw.extend(classes);
    raw.extend(generator.slices);
    raw.extend(claims_raw);
    Scenario {
        seed,
        options,
        nodes,
        slices,
        classes: classes_typed,
        claims,
        steps,
        raw,
    }
}

impl Scenario {
    /// The scenario as a cluster file for `dra simulate --node-pick first-fit`: one pod per
    /// step, pinned to the step's node, using the step's claims in order.
    pub fn to_cluster_yaml(&self) -> String {
        let mut out = format!(
            "# Property-test scenario, seed {} ({}).\n",
            self.seed,
            if self.options.tiny { "tiny" } else { "normal" }
        );
        let mut docs: Vec<Value> = self.raw.clone();
        for (i, step) in self.steps.iter().enumerate() {
            let claims: Vec<&ResourceClaim> =
                step.claims.iter().map(|c| &self.claims[*c]).collect();
            let namespace = claims
                .first()
                .and_then(|c| c.metadata.namespace.as_deref())
                .unwrap_or("default");
            let entries: Vec<Value> = claims
                .iter()
                .map(|c| {
                    let name = c.metadata.name.clone().unwrap_or_default();
                    json!({"name": name, "resourceClaimName": name})
                })
                .collect();
            docs.push(json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": format!("step-{i}"), "namespace": namespace},
                "spec": {
                    "nodeName": node_name(step.node),
                    "containers": [{"name": "main", "image": "registry.example/app:1"}],
                    "resourceClaims": entries,
                },
            }));
        }
        for doc in docs {
            out.push_str("---\n");
            out.push_str(&serde_json::to_string(&doc).unwrap_or_default());
            out.push('\n');
        }
        out
    }
}

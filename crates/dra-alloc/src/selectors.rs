//! Selector sets and their snapshot-wide result cache.
//!
//! A *selector set* is what upstream's `isSelectable` evaluates for one request or subrequest:
//! the class selectors, then the request selectors, stopping at the first `false`. Requests with
//! the same class and the same selector expressions (every pod created from one template, for
//! instance) share one set, and its result per device entry is computed at most once per
//! snapshot. The result is a pure function of the device, so caching it never changes which
//! device upstream would pick; errors are cached too and reported only when the search reaches
//! the device, exactly where upstream's lazy evaluation meets them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use dra_types::shared_once::SharedOnce;

use crate::hashing::WordHashMap;
use crate::index::{ClassId, DeviceEntry, DeviceIdx, Index, NodeId};
use crate::pools::{NodePools, node_matches};

/// Where a failing selector lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectorOrigin {
    Class,
    Request,
}

/// Compile or runtime failure of one selector on one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorFailure {
    pub origin: SelectorOrigin,
    /// Index of the selector in the class or request.
    pub index: usize,
    pub compile: bool,
    /// The CEL message (upstream's text after `CEL compile error: ` / `CEL runtime error: `).
    pub message: String,
}

/// Outcome of a selector set on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    Yes,
    No,
    Failed(SelectorFailure),
}

type Compiled = Arc<Result<dra_cel::Selector, String>>;

/// One interned selector set with its per-device result cache.
#[derive(Debug)]
pub struct SelectorSet {
    pub class: ClassId,
    /// Equal for sets whose class and request expressions are equal (classes that differ only
    /// in name, as with one class per extended resource): such sets select alike, fail alike
    /// (a [`SelectorFailure`] does not name the class) and share their results.
    pub content_id: u32,
    class_selectors: Vec<Compiled>,
    request_selectors: Vec<Compiled>,
    results: Arc<SharedResults>,
}

/// What a selector set computes, shared by all sets with the same expressions.
#[derive(Debug)]
struct SharedResults {
    /// 0 = not evaluated, 1 = no, 2 = yes, 3 = failed (details in `failures`).
    codes: Box<[AtomicU8]>,
    failures: Mutex<BTreeMap<u32, SelectorFailure>>,
    /// Per node (allocated on first use): the devices of the node's usable pools the set
    /// selects, in search order.
    per_node: OnceLock<Box<[SharedOnce<Candidates>]>>,
}

/// The devices one selector set selects on one node, in search order: what upstream's search
/// would find selectable, precomputed.
#[derive(Debug, Default)]
pub struct Candidates {
    /// `(pool index, position in the pool, device)`, sorted by (pool, position).
    pub entries: Vec<Candidate>,
    /// Some device of the node's usable pools makes `isSelectable` fail (CEL or node-selector
    /// error). The search then examines devices one by one, as upstream does, so that the
    /// error surfaces exactly where upstream meets it; pruning is off.
    pub has_error: bool,
}

/// One selectable device on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub pool: u32,
    pub position: u32,
    pub device: DeviceIdx,
    pub key: crate::index::DeviceKey,
}

/// A handle on an interned selector set.
#[derive(Debug, Clone)]
pub struct SelSetId {
    pub id: u32,
    pub set: Arc<SelectorSet>,
}

/// The expressions of a set: the class's (`None`: not a CEL selector), then the request's.
type Content = (Vec<Option<String>>, Vec<String>);

#[derive(Debug, Default)]
struct Interner {
    by_key: WordHashMap<(ClassId, Vec<String>), SelSetId>,
    by_content: WordHashMap<Content, (u32, Arc<SharedResults>)>,
    count: u32,
}

/// The snapshot-wide cache of compiled expressions and selector-set results.
#[derive(Debug, Default)]
pub struct SelectorCache {
    interner: RwLock<Interner>,
    compiled: Mutex<WordHashMap<String, Compiled>>,
}

impl SelectorCache {
    fn compile(&self, index: &Index, expression: &str) -> Compiled {
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = compiled.get(expression) {
            return c.clone();
        }
        let result = Arc::new(
            index
                .compiler
                .compile(expression)
                .map_err(|e| e.to_string()),
        );
        compiled.insert(expression.to_string(), result.clone());
        result
    }

    /// The set for (class, request selectors), created on first use.
    pub fn intern(&self, index: &Index, class: ClassId, expressions: &[String]) -> SelSetId {
        let key = (class, expressions.to_vec());
        if let Some(id) = self
            .interner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_key
            .get(&key)
        {
            return id.clone();
        }
        let class_entry = index.class_entry(class);
        let class_selectors = class_entry
            .selectors
            .iter()
            .map(|expr| match expr {
                Some(expr) => self.compile(index, expr),
                None => Arc::new(Err(
                    "CEL expression empty (unsupported selector type?)".to_string()
                )),
            })
            .collect();
        let request_selectors = expressions.iter().map(|e| self.compile(index, e)).collect();
        let mut interner = self.interner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = interner.by_key.get(&key) {
            return id.clone();
        }
        let content: Content = (class_entry.selectors.clone(), expressions.to_vec());
        let next_content = interner.by_content.len() as u32;
        let (content_id, results) = interner
            .by_content
            .entry(content)
            .or_insert_with(|| {
                (
                    next_content,
                    Arc::new(SharedResults {
                        codes: (0..index.devices.len()).map(|_| AtomicU8::new(0)).collect(),
                        failures: Mutex::new(BTreeMap::new()),
                        per_node: OnceLock::new(),
                    }),
                )
            })
            .clone();
        let id = SelSetId {
            id: interner.count,
            set: Arc::new(SelectorSet {
                class,
                content_id,
                class_selectors,
                request_selectors,
                results,
            }),
        };
        interner.count += 1;
        interner.by_key.insert(key, id.clone());
        id
    }
}

impl SelectorSet {
    /// Evaluates (or recalls) the set on a device entry.
    pub fn matches(&self, index: &Index, device: DeviceIdx) -> Match {
        match self.results.codes[device.0 as usize].load(Ordering::Acquire) {
            1 => return Match::No,
            2 => return Match::Yes,
            3 => {
                if let Some(f) = self
                    .results
                    .failures
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&device.0)
                {
                    return Match::Failed(f.clone());
                }
            }
            _ => {}
        }
        let outcome = self.evaluate(index, device);
        let code = match &outcome {
            Match::No => 1,
            Match::Yes => 2,
            Match::Failed(f) => {
                self.results
                    .failures
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(device.0, f.clone());
                3
            }
        };
        self.results.codes[device.0 as usize].store(code, Ordering::Release);
        outcome
    }

    /// The devices this set selects on `node` (whose pools are `pools`), computed on first use.
    /// Evaluating every device of the node here is safe: results are cached, and errors are
    /// only reported by the search when it reaches the device.
    pub fn candidates(&self, index: &Index, node: NodeId, pools: &NodePools) -> &Candidates {
        self.per_node(index, node)
            .get_or_init(|| self.compute_candidates(index, node, pools))
    }

    /// [`SelectorSet::candidates`] for a thread that computes them ahead of the one that
    /// needs them: computed unless another thread has begun them, and never waiting for it.
    pub fn candidates_ahead(&self, index: &Index, node: NodeId, pools: &NodePools) {
        let _ = self
            .per_node(index, node)
            .get_or_init_if_untaken(|| self.compute_candidates(index, node, pools));
    }

    /// The cell of `node`'s candidates.
    fn per_node(&self, index: &Index, node: NodeId) -> &SharedOnce<Candidates> {
        let per_node = self
            .results
            .per_node
            .get_or_init(|| (0..index.nodes.len()).map(|_| SharedOnce::new()).collect());
        &per_node[node.0 as usize]
    }

    fn compute_candidates(&self, index: &Index, node: NodeId, pools: &NodePools) -> Candidates {
        let facts = index.node_facts(node);
        let mut out = Candidates::default();
        for (p, pool) in pools.pools.iter().enumerate() {
            if !pool.usable() {
                continue;
            }
            for (position, &device) in pool.devices.iter().enumerate() {
                let entry = index.device(device);
                if !index.features.device_binding_and_status
                    && entry
                        .binding_conditions
                        .as_ref()
                        .is_some_and(|c| !c.is_empty())
                {
                    continue;
                }
                match self.matches(index, device) {
                    Match::No => continue,
                    Match::Failed(_) => {
                        out.has_error = true;
                        continue;
                    }
                    Match::Yes => {}
                }
                if index.slice(entry.slice).per_device_node_selection_field {
                    match node_matches(
                        facts,
                        entry.node_name.as_deref().unwrap_or_default(),
                        entry.all_nodes,
                        entry.node_selector.as_ref(),
                    ) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(_) => {
                            out.has_error = true;
                            continue;
                        }
                    }
                }
                out.entries.push(Candidate {
                    pool: p as u32,
                    position: position as u32,
                    device,
                    key: entry.key,
                });
            }
        }
        out
    }

    /// The result if already known, without evaluating.
    pub fn known(&self, device: DeviceIdx) -> Option<bool> {
        match self.results.codes[device.0 as usize].load(Ordering::Acquire) {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        }
    }

    fn evaluate(&self, index: &Index, device: DeviceIdx) -> Match {
        // Built on the first selector that needs it, once per evaluation.
        let mut input = None;
        for (origin, selectors) in [
            (SelectorOrigin::Class, &self.class_selectors),
            (SelectorOrigin::Request, &self.request_selectors),
        ] {
            for (i, compiled) in selectors.iter().enumerate() {
                let selector = match compiled.as_ref() {
                    Ok(s) => s,
                    Err(message) => {
                        return Match::Failed(SelectorFailure {
                            origin,
                            index: i,
                            compile: true,
                            message: message.clone(),
                        });
                    }
                };
                let answer = match selector
                    .shortcut()
                    .and_then(|shortcut| shortcut_answer(shortcut, index, device))
                {
                    Some(answer) => Ok(answer),
                    None => selector.evaluate(input.get_or_insert_with(|| index.cel_input(device))),
                };
                match answer {
                    Ok(true) => {}
                    Ok(false) => return Match::No,
                    Err(e) => {
                        return Match::Failed(SelectorFailure {
                            origin,
                            index: i,
                            compile: false,
                            message: e.to_string(),
                        });
                    }
                }
            }
        }
        Match::Yes
    }
}

/// A selector's answer from its [`dra_cel::Shortcut`], without the device's CEL view; `None`
/// when the shortcut's rules leave the answer to a full evaluation (the CEL view does not
/// convert, the attribute is missing or of another kind than the constant).
fn shortcut_answer(shortcut: &dra_cel::Shortcut, index: &Index, device: DeviceIdx) -> Option<bool> {
    use crate::index::AttrValue as A;
    use dra_cel::{Shortcut, ShortcutValue as C};
    let entry = index.device(device);
    if !entry.cel_converts() {
        return None;
    }
    let driver = &*index.slice(entry.slice).driver;
    match shortcut {
        Shortcut::DriverIs(name) => Some(driver == &**name),
        Shortcut::AttributeIs {
            qualified_name,
            value,
        } => match (entry.lookup_attribute(driver, qualified_name)?, value) {
            (A::String(a), C::Str(b)) => Some(**a == **b),
            (A::Int(a), C::Int(b)) => Some(a == b),
            (A::Bool(a), C::Bool(b)) => Some(a == b),
            _ => None,
        },
    }
}

/// Builds the CEL view of a device entry.
pub(crate) fn build_cel_input(driver: &str, device: &DeviceEntry) -> dra_cel::DeviceInput {
    use crate::index::AttrValue as A;
    use dra_cel::AttributeValue as V;
    let strings = |list: &[Arc<str>]| list.iter().map(|s| s.to_string()).collect();
    dra_cel::DeviceInput::new(
        driver,
        device.attributes.iter().map(|(name, value)| {
            let value = match value {
                A::Int(v) => V::Int(*v),
                A::Bool(v) => V::Bool(*v),
                A::String(v) => V::String(v.to_string()),
                A::Version(v) => V::Version(v.to_string()),
                A::IntList(v) => V::IntList(v.to_vec()),
                A::BoolList(v) => V::BoolList(v.to_vec()),
                A::StringList(v) => V::StringList(strings(v)),
                A::VersionList(v) => V::VersionList(strings(v)),
                A::Unset => V::Unset,
            };
            (&**name, value)
        }),
        device
            .capacity
            .iter()
            .map(|(name, c)| (&**name, c.value.clone())),
        device.allow_multiple_allocations,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IndexInput, IndexOptions};
    use k8s_openapi::api::resource::v1::{DeviceClass, ResourceSlice};

    fn class(name: &str, expression: &str) -> DeviceClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}
        }))
        .expect("a valid class")
    }

    fn index_of(slice: &ResourceSlice, classes: &[DeviceClass]) -> Index {
        Index::build(
            &IndexInput {
                nodes: Vec::new(),
                slices: vec![slice.into()],
                classes: classes.iter().collect(),
                taint_rules: Vec::new(),
            },
            &IndexOptions::default(),
        )
        .expect("builds")
    }

    #[test]
    fn sets_with_equal_expressions_share_results_and_failures() {
        let slice: ResourceSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s"},
            "spec": {
                "driver": "dom", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": "with", "attributes": {"x": {"int": 1}}},
                    {"name": "without"}
                ]
            }
        }))
        .expect("a valid slice");
        let classes = [
            class("a", "device.attributes['dom'].x == 1"),
            class("b", "device.attributes['dom'].x == 1"),
            class("c", "device.driver == 'dom'"),
        ];
        let index = index_of(&slice, &classes);
        let set = |name: &str| {
            let class = index.class(name).expect("known class");
            index.selectors.intern(&index, class, &[])
        };
        let (a, b, c) = (set("a"), set("b"), set("c"));
        assert_ne!(a.id, b.id, "one set per class");
        assert_eq!(a.set.content_id, b.set.content_id);
        assert_ne!(a.set.content_id, c.set.content_id);

        let (with, without) = (DeviceIdx(0), DeviceIdx(1));
        assert_eq!(a.set.matches(&index, with), Match::Yes);
        // Known to b without evaluating; unknown to c, whose expression differs.
        assert_eq!(b.set.known(with), Some(true));
        assert_eq!(c.set.known(with), None);
        let Match::Failed(failure) = a.set.matches(&index, without) else {
            panic!("a missing attribute is a runtime error");
        };
        assert!(
            failure.message.contains("no such key"),
            "{}",
            failure.message
        );
        assert_eq!(b.set.matches(&index, without), Match::Failed(failure));
        assert_eq!(c.set.matches(&index, without), Match::Yes);
    }

    /// Shortcut answers (see [`shortcut_answer`]) never differ from a full evaluation:
    /// every device shape the shortcut must refuse or answer, against every plain comparison.
    #[test]
    fn shortcut_answers_equal_full_evaluation() {
        let slice: ResourceSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s"},
            "spec": {
                "driver": "dom", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": "short", "attributes": {"type": {"string": "gpu"}, "index": {"int": 1}, "ok": {"bool": true}}},
                    {"name": "qualified", "attributes": {"dom/type": {"string": "gpu"}, "dom/index": {"int": 2}}},
                    {"name": "both", "attributes": {"type": {"string": "nic"}, "dom/type": {"string": "gpu"}}},
                    {"name": "other-domain", "attributes": {"other.io/type": {"string": "gpu"}}},
                    {"name": "wrong-kind", "attributes": {"type": {"int": 3}, "index": {"string": "1"}, "ok": {"string": "true"}}},
                    {"name": "none"},
                    {"name": "bad-version", "attributes": {"type": {"string": "gpu"}, "v": {"version": "1.0"}}},
                    {"name": "good-version", "attributes": {"type": {"string": "gpu"}, "v": {"version": "1.0.0"}}},
                    {"name": "unset", "attributes": {"type": {"string": "gpu"}, "u": {}}},
                    {"name": "bad-versions", "attributes": {"type": {"string": "gpu"}, "vs": {"versions": ["1.0.0", "x"]}}}
                ]
            }
        }))
        .expect("a valid slice");
        let expressions = [
            "device.driver == 'dom'",
            "'other' == device.driver",
            "device.attributes['dom'].type == 'gpu'",
            "device.attributes['dom'].index == 1",
            "device.attributes['dom'].ok == true",
            "device.attributes['other.io'].type == 'gpu'",
        ];
        let classes: Vec<DeviceClass> = expressions
            .iter()
            .enumerate()
            .map(|(i, e)| class(&format!("c{i}"), e))
            .collect();
        let index = index_of(&slice, &classes);
        let mut shortcut_answers = 0;
        for (i, expression) in expressions.iter().enumerate() {
            let selector = index.compiler.compile(expression).expect("compiles");
            assert!(selector.shortcut().is_some(), "{expression}");
            let class = index.class(&format!("c{i}")).expect("known class");
            let set = index.selectors.intern(&index, class, &[]);
            for d in 0..index.devices.len() {
                let device = DeviceIdx(d as u32);
                let entry = index.device(device);
                let full = selector.evaluate(&build_cel_input("dom", entry));
                if shortcut_answer(selector.shortcut().unwrap(), &index, device).is_some() {
                    shortcut_answers += 1;
                }
                let expected = match full {
                    Ok(true) => Match::Yes,
                    Ok(false) => Match::No,
                    Err(e) => Match::Failed(SelectorFailure {
                        origin: SelectorOrigin::Class,
                        index: 0,
                        compile: false,
                        message: e.to_string(),
                    }),
                };
                assert_eq!(
                    set.set.matches(&index, device),
                    expected,
                    "{expression} on {}",
                    entry.name
                );
            }
        }
        // The shortcut was really taken, and really refused on some devices.
        assert!(shortcut_answers > 20, "{shortcut_answers}");
        assert!(shortcut_answers < expressions.len() * index.devices.len());
    }
}

//! The loaded objects, by kind, in input order.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};

use crate::source::{Located, ObjectRef, Source};

/// A kind this crate loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindInfo {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
}

/// Whether a k8s-openapi scope marker type (`NamespaceResourceScope`,
/// `ClusterResourceScope`) is namespaced.
pub trait ScopeFlag {
    const NAMESPACED: bool;
}

impl ScopeFlag for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeFlag for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

macro_rules! kinds {
    ($( $variant:ident => $field:ident : $ty:ty ),* $(,)?) => {
        /// Every loaded object, per kind, in input order (files in the order given,
        /// directory entries sorted by name, documents and `List` items in file order).
        ///
        /// Objects are k8s-openapi `v1_37` types with API-server defaults applied
        /// (see [`crate::apply_defaults`]). Invalid and duplicate objects are kept:
        /// [`crate::validate`] and the loader report them; the lookup helpers return
        /// the first definition.
        #[derive(Clone, Debug, Default)]
        pub struct Cluster {
            $( pub $field: Vec<Located<$ty>>, )*
            /// ResourceSlices loaded with [`crate::LoadOptions::defer_slices`], all of them,
            /// in input order (`resource_slices` is then empty); otherwise empty.
            pub slice_docs: Vec<Located<SliceDoc>>,
        }

        impl Cluster {
            /// The total number of objects.
            pub fn object_count(&self) -> usize {
                self.slice_docs.len() $( + self.$field.len() )*
            }

            pub fn is_empty(&self) -> bool {
                self.object_count() == 0
            }

            /// Appends every object of `other`, keeping order.
            pub fn extend(&mut self, other: Cluster) {
                $( self.$field.extend(other.$field); )*
                self.slice_docs.extend(other.slice_docs);
            }

            /// A reference to every object, in kind order then input order.
            pub fn object_refs(&self) -> Vec<(ObjectRef, &Source)> {
                let mut refs = Vec::with_capacity(self.object_count());
                $(
                    for located in &self.$field {
                        refs.push((ObjectRef::of::<$ty>(&located.object.metadata), &located.source));
                    }
                )*
                for located in &self.slice_docs {
                    refs.push((
                        ObjectRef::of::<ResourceSlice>(located.object.metadata()),
                        &located.source,
                    ));
                }
                refs
            }
        }

        /// Every supported kind.
        pub fn supported_kinds() -> &'static [KindInfo] {
            const KINDS: &[KindInfo] = &[
                $( KindInfo {
                    api_version: <$ty as Resource>::API_VERSION,
                    kind: <$ty as Resource>::KIND,
                    namespaced: <<$ty as Resource>::Scope as ScopeFlag>::NAMESPACED,
                }, )*
            ];
            KINDS
        }

        /// A decoded object of any supported kind.
        #[derive(Clone, Debug)]
        pub(crate) enum AnyObject {
            $( $variant(Box<$ty>), )*
        }

        impl AnyObject {
            pub(crate) fn metadata(&self) -> &ObjectMeta {
                match self {
                    $( AnyObject::$variant(object) => &object.metadata, )*
                }
            }

            pub(crate) fn metadata_mut(&mut self) -> &mut ObjectMeta {
                match self {
                    $( AnyObject::$variant(object) => &mut object.metadata, )*
                }
            }

            pub(crate) fn info(&self) -> KindInfo {
                match self {
                    $( AnyObject::$variant(_) => KindInfo {
                        api_version: <$ty as Resource>::API_VERSION,
                        kind: <$ty as Resource>::KIND,
                        namespaced: <<$ty as Resource>::Scope as ScopeFlag>::NAMESPACED,
                    }, )*
                }
            }

            /// Makes room in `cluster` for `objects` at once, kind by kind: objects are
            /// large and stored inline, so growing one push at a time would leave up to
            /// half of a large input's memory as slack.
            pub(crate) fn reserve_in<'o>(
                objects: impl Iterator<Item = &'o AnyObject> + Clone,
                cluster: &mut Cluster,
            ) {
                $(
                    let count = objects
                        .clone()
                        .filter(|o| matches!(o, AnyObject::$variant(_)))
                        .count();
                    cluster.$field.reserve(count);
                )*
            }

            pub(crate) fn push_into(self, source: Source, cluster: &mut Cluster) {
                match self {
                    $( AnyObject::$variant(object) => cluster.$field.push(Located::boxed(source, object)), )*
                }
            }
        }

        /// Decodes `value` as the kind named by `api_version`/`kind`; `None` for a kind
        /// this crate does not load.
        pub(crate) fn decode(
            api_version: &str,
            kind: &str,
            value: serde_json::Value,
        ) -> Option<Result<AnyObject, serde_path_to_error::Error<serde_json::Error>>> {
            $(
                if api_version == <$ty as Resource>::API_VERSION && kind == <$ty as Resource>::KIND {
                    // The plain conversion is several times faster; the path-tracking one
                    // runs only to explain an error.
                    if let Ok(object) = <$ty as serde::Deserialize>::deserialize(&value) {
                        return Some(Ok(AnyObject::$variant(Box::new(object))));
                    }
                    return Some(
                        serde_path_to_error::deserialize::<_, $ty>(value)
                            .map(|object| AnyObject::$variant(Box::new(object))),
                    );
                }
            )*
            None
        }

        /// Decodes the JSON text of one document straight into the kind named by
        /// `api_version`/`kind`: `None` for a kind this crate does not load, `Some(None)`
        /// when the text does not decode (then [`decode`] of its `Value` explains why).
        pub(crate) fn decode_json(
            api_version: &str,
            kind: &str,
            text: &str,
        ) -> Option<Option<AnyObject>> {
            $(
                if api_version == <$ty as Resource>::API_VERSION && kind == <$ty as Resource>::KIND {
                    return Some(
                        serde_json::from_str::<$ty>(text)
                            .ok()
                            .map(|object| AnyObject::$variant(Box::new(object))),
                    );
                }
            )*
            None
        }
    };
}

kinds! {
    Node => nodes: Node,
    Pod => pods: Pod,
    Namespace => namespaces: Namespace,
    ServiceAccount => service_accounts: ServiceAccount,
    PriorityClass => priority_classes: PriorityClass,
    DeviceClass => device_classes: DeviceClass,
    ResourceSlice => resource_slices: ResourceSlice,
    ResourceClaim => resource_claims: ResourceClaim,
    ResourceClaimTemplate => resource_claim_templates: ResourceClaimTemplate,
    DeviceTaintRule => device_taint_rules: DeviceTaintRule,
    Deployment => deployments: Deployment,
    StatefulSet => stateful_sets: StatefulSet,
    DaemonSet => daemon_sets: DaemonSet,
    ReplicaSet => replica_sets: ReplicaSet,
    Job => jobs: Job,
    CronJob => cron_jobs: CronJob,
    Role => roles: Role,
    ClusterRole => cluster_roles: ClusterRole,
    RoleBinding => role_bindings: RoleBinding,
    ClusterRoleBinding => cluster_role_bindings: ClusterRoleBinding,
}

/// A ResourceSlice loaded with [`crate::LoadOptions::defer_slices`].
#[derive(Clone, Debug, PartialEq)]
pub enum SliceDoc {
    /// Decoded like every other object (it was not in a JSON stream).
    Object(ResourceSlice),
    /// Not decoded: the document's text, for a caller that decodes it itself.
    Json(SliceJson),
}

/// The JSON text of a ResourceSlice document and its metadata (decoded, for duplicate
/// checks and messages). The loader has not decoded the rest: text that does not decode as a
/// ResourceSlice is reported only by a load without [`crate::LoadOptions::defer_slices`].
#[derive(Clone)]
pub struct SliceJson {
    pub metadata: ObjectMeta,
    text: SliceText,
}

impl SliceJson {
    /// The document at `range` of `source`; `None` when `range` is not a part of it that
    /// starts and ends between characters.
    pub fn new(metadata: ObjectMeta, source: Arc<String>, range: Range<usize>) -> Option<Self> {
        source.get(range.clone())?;
        Some(SliceJson {
            metadata,
            text: SliceText {
                source,
                range,
                end_unchecked: false,
            },
        })
    }

    /// The same document, its end taken from where its line ends (see
    /// [`SliceJson::end_unchecked`]).
    pub(crate) fn with_end_unchecked(mut self) -> Self {
        self.text.end_unchecked = true;
        self
    }

    /// Whether the loader took the document's end from where its line ends, the line's last
    /// brace, without reading the `spec` before it, which was most of reading a slice twice.
    /// Such a text is the document only if it reads as one whole ResourceSlice whose last
    /// member is `spec`; a reader that finds otherwise must answer that the text does not
    /// decode (`dra_alloc::IndexErrorKind::Decode`), and the input be loaded again without
    /// deferring slices, which reads it all.
    pub fn end_unchecked(&self) -> bool {
        self.text.end_unchecked
    }

    /// The document's JSON text.
    pub fn text(&self) -> &str {
        self.text.text()
    }

    /// The document's text as a handle that shares the input it is part of (no copy), for
    /// another thread: what a [`crate::SliceSink`] passes on.
    pub fn shared_text(&self) -> SliceText {
        self.text.clone()
    }
}

/// The text of a slice kept as JSON ([`SliceJson::shared_text`]), owning a share of the input
/// it is part of. Its [`SliceText::text`] is the very `&str` that [`SliceJson::text`] gives
/// (the same address), so that a converter can tell which document it converted.
#[derive(Clone)]
pub struct SliceText {
    /// The whole input the document was read from, shared by its slices: copying each
    /// slice's part out of it was most of a large load's memory traffic.
    source: Arc<String>,
    /// The document within `source`.
    range: Range<usize>,
    /// The loader took the end of `range` from where the document's line ends, without
    /// reading its `spec` (see [`SliceJson::end_unchecked`]).
    end_unchecked: bool,
}

impl SliceText {
    /// The document's JSON text.
    pub fn text(&self) -> &str {
        // Checked by `SliceJson::new`; the source is never changed.
        self.source.get(self.range.clone()).unwrap_or_default()
    }

    /// As [`SliceJson::end_unchecked`].
    pub fn end_unchecked(&self) -> bool {
        self.end_unchecked
    }
}

/// Shows the document, not the whole input it shares.
impl fmt::Debug for SliceText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SliceText")
            .field("text", &self.text())
            .field("end_unchecked", &self.end_unchecked)
            .finish()
    }
}

/// Shows the document, not the whole input it shares.
impl fmt::Debug for SliceJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SliceJson")
            .field("metadata", &self.metadata)
            .field("text", &self.text())
            .finish()
    }
}

/// Equal documents are equal slices, whatever input they were read from.
impl PartialEq for SliceJson {
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata && self.text() == other.text()
    }
}

impl AnyObject {
    /// The kind of a ResourceSlice, also when it is kept as text.
    pub(crate) fn slice_info() -> KindInfo {
        KindInfo {
            api_version: <ResourceSlice as Resource>::API_VERSION,
            kind: <ResourceSlice as Resource>::KIND,
            namespaced: false,
        }
    }
}

impl SliceDoc {
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            SliceDoc::Object(slice) => &slice.metadata,
            SliceDoc::Json(json) => &json.metadata,
        }
    }
}

fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

fn namespace_of(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or_default()
}

fn find_cluster_scoped<'a, T>(
    objects: &'a [Located<T>],
    name: &str,
    meta: impl Fn(&T) -> &ObjectMeta,
) -> Option<&'a Located<T>> {
    objects.iter().find(|o| name_of(meta(&o.object)) == name)
}

fn find_namespaced<'a, T>(
    objects: &'a [Located<T>],
    namespace: &str,
    name: &str,
    meta: impl Fn(&T) -> &ObjectMeta,
) -> Option<&'a Located<T>> {
    objects.iter().find(|o| {
        let m = meta(&o.object);
        namespace_of(m) == namespace && name_of(m) == name
    })
}

impl Cluster {
    /// The first DeviceClass with this name. Linear; use [`Cluster::index`] for many lookups.
    pub fn device_class(&self, name: &str) -> Option<&Located<DeviceClass>> {
        find_cluster_scoped(&self.device_classes, name, |o| &o.metadata)
    }

    pub fn resource_claim(&self, namespace: &str, name: &str) -> Option<&Located<ResourceClaim>> {
        find_namespaced(&self.resource_claims, namespace, name, |o| &o.metadata)
    }

    pub fn resource_claim_template(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<&Located<ResourceClaimTemplate>> {
        find_namespaced(&self.resource_claim_templates, namespace, name, |o| {
            &o.metadata
        })
    }

    pub fn namespace(&self, name: &str) -> Option<&Located<Namespace>> {
        find_cluster_scoped(&self.namespaces, name, |o| &o.metadata)
    }

    pub fn node(&self, name: &str) -> Option<&Located<Node>> {
        find_cluster_scoped(&self.nodes, name, |o| &o.metadata)
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Located<Pod>> {
        find_namespaced(&self.pods, namespace, name, |o| &o.metadata)
    }

    pub fn priority_class(&self, name: &str) -> Option<&Located<PriorityClass>> {
        find_cluster_scoped(&self.priority_classes, name, |o| &o.metadata)
    }

    pub fn service_account(&self, namespace: &str, name: &str) -> Option<&Located<ServiceAccount>> {
        find_namespaced(&self.service_accounts, namespace, name, |o| &o.metadata)
    }

    /// Sorted maps for repeated lookups; the first definition of a name wins.
    pub fn index(&self) -> ClusterIndex<'_> {
        fn by_name<T>(
            objects: &[Located<T>],
            meta: impl Fn(&T) -> &ObjectMeta,
        ) -> BTreeMap<&str, &Located<T>> {
            let mut map = BTreeMap::new();
            for o in objects {
                map.entry(name_of(meta(&o.object))).or_insert(o);
            }
            map
        }
        fn by_namespaced_name<T>(
            objects: &[Located<T>],
            meta: impl Fn(&T) -> &ObjectMeta,
        ) -> BTreeMap<(&str, &str), &Located<T>> {
            let mut map = BTreeMap::new();
            for o in objects {
                let m = meta(&o.object);
                map.entry((namespace_of(m), name_of(m))).or_insert(o);
            }
            map
        }
        ClusterIndex {
            device_classes: by_name(&self.device_classes, |o| &o.metadata),
            nodes: by_name(&self.nodes, |o| &o.metadata),
            namespaces: by_name(&self.namespaces, |o| &o.metadata),
            priority_classes: by_name(&self.priority_classes, |o| &o.metadata),
            resource_claims: by_namespaced_name(&self.resource_claims, |o| &o.metadata),
            resource_claim_templates: by_namespaced_name(&self.resource_claim_templates, |o| {
                &o.metadata
            }),
            pods: by_namespaced_name(&self.pods, |o| &o.metadata),
        }
    }
}

/// Name lookups over a [`Cluster`], built once by [`Cluster::index`]. Iteration order
/// of the maps is by name, so it is deterministic.
#[derive(Clone, Debug)]
pub struct ClusterIndex<'a> {
    pub device_classes: BTreeMap<&'a str, &'a Located<DeviceClass>>,
    pub nodes: BTreeMap<&'a str, &'a Located<Node>>,
    pub namespaces: BTreeMap<&'a str, &'a Located<Namespace>>,
    pub priority_classes: BTreeMap<&'a str, &'a Located<PriorityClass>>,
    /// Keyed by (namespace, name).
    pub resource_claims: BTreeMap<(&'a str, &'a str), &'a Located<ResourceClaim>>,
    /// Keyed by (namespace, name).
    pub resource_claim_templates: BTreeMap<(&'a str, &'a str), &'a Located<ResourceClaimTemplate>>,
    /// Keyed by (namespace, name).
    pub pods: BTreeMap<(&'a str, &'a str), &'a Located<Pod>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_kept_as_text_reads_its_part_of_the_shared_input() {
        let source = Arc::new("{\"a\":1}\n{\"é\":2}".to_string());
        let first = SliceJson::new(ObjectMeta::default(), Arc::clone(&source), 0..7)
            .expect("a whole document");
        assert_eq!(first.text(), "{\"a\":1}");
        let second = SliceJson::new(ObjectMeta::default(), Arc::clone(&source), 8..16)
            .expect("a whole document");
        assert_eq!(second.text(), "{\"é\":2}");
        // Not between characters, or past the end.
        assert!(SliceJson::new(ObjectMeta::default(), Arc::clone(&source), 10..11).is_none());
        assert!(SliceJson::new(ObjectMeta::default(), Arc::clone(&source), 8..17).is_none());
        // The same document read from another input is the same slice, and shows as itself.
        let elsewhere = SliceJson::new(ObjectMeta::default(), Arc::new("x{\"a\":1}".into()), 1..8)
            .expect("a whole document");
        assert_eq!(first, elsewhere);
        assert_ne!(first, second);
        assert!(!format!("{first:?}").contains('é'));
    }
}

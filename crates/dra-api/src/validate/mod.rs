//! What the API server checks when objects are created, for the kinds later stages
//! depend on.
//!
//! Rules and wording follow k8s.io/kubernetes `pkg/apis/resource/validation` (and
//! the declarative tags of k8s.io/api `resource/v1`) for the resource.k8s.io/v1
//! kinds, `pkg/apis/core/validation` for object metadata and the Pod fields the
//! simulator uses, and `pkg/apis/scheduling/validation` for PriorityClass. Rules
//! that Kubernetes documents but the API server does not enforce are reported as
//! warnings and say so. CEL expressions are only checked for length; compiling them
//! is `dra-cel`'s job.

mod core;
mod names;
mod resource;

use std::collections::BTreeMap;
use std::fmt::{self, Display};

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::cluster::{Cluster, ScopeFlag};
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{Located, ObjectRef, Source};

/// Validates every object of `cluster` as the API server would on create, plus the
/// create-time checks that depend on other objects (admin access needs a labelled
/// Namespace when that Namespace is present; one global default PriorityClass).
/// Diagnostics come per kind, then in input order.
pub fn validate(cluster: &Cluster) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let admin_namespaces = AdminNamespaces::new(cluster);

    for o in &cluster.nodes {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    for o in &cluster.namespaces {
        meta_only(&mut out, o, names::dns1123_label);
    }
    for o in &cluster.service_accounts {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    core::priority_classes(&mut out, &cluster.priority_classes);
    for o in &cluster.pods {
        let mut r = Report::new(&mut out, o);
        r.object_meta(&o.object.metadata, names::dns1123_subdomain);
        core::pod(&mut r, &o.object);
    }
    for o in &cluster.device_classes {
        let mut r = Report::new(&mut out, o);
        r.object_meta(&o.object.metadata, names::dns1123_subdomain);
        resource::device_class(&mut r, &o.object);
    }
    for o in &cluster.resource_slices {
        let mut r = Report::new(&mut out, o);
        r.object_meta(&o.object.metadata, names::dns1123_subdomain);
        resource::resource_slice(&mut r, &o.object);
    }
    for o in &cluster.resource_claims {
        let mut r = Report::new(&mut out, o);
        r.object_meta(&o.object.metadata, names::dns1123_subdomain);
        resource::resource_claim(&mut r, &o.object, &admin_namespaces);
    }
    for o in &cluster.resource_claim_templates {
        let mut r = Report::new(&mut out, o);
        r.object_meta(&o.object.metadata, names::dns1123_subdomain);
        resource::resource_claim_template(&mut r, &o.object, &admin_namespaces);
    }
    for o in &cluster.device_taint_rules {
        let mut r = Report::new(&mut out, o);
        r.object_meta(&o.object.metadata, names::dns1123_subdomain);
        resource::device_taint_rule(&mut r, &o.object);
    }
    for o in &cluster.deployments {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    for o in &cluster.stateful_sets {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    for o in &cluster.daemon_sets {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    for o in &cluster.replica_sets {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    for o in &cluster.jobs {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    for o in &cluster.cron_jobs {
        meta_only(&mut out, o, names::dns1123_subdomain);
    }
    for o in &cluster.roles {
        meta_only(&mut out, o, names::path_segment_name);
    }
    for o in &cluster.cluster_roles {
        meta_only(&mut out, o, names::path_segment_name);
    }
    for o in &cluster.role_bindings {
        meta_only(&mut out, o, names::path_segment_name);
    }
    for o in &cluster.cluster_role_bindings {
        meta_only(&mut out, o, names::path_segment_name);
    }
    out
}

/// Objects whose spec is not validated here: metadata only.
fn meta_only<T>(out: &mut Vec<Diagnostic>, o: &Located<T>, name_rule: fn(&str) -> Vec<String>)
where
    T: Resource + k8s_openapi::Metadata<Ty = ObjectMeta>,
    T::Scope: ScopeFlag,
{
    Report::new(out, o).object_meta(o.object.metadata(), name_rule);
}

/// Namespaces present in the input and whether they allow admin access.
pub(crate) struct AdminNamespaces<'a> {
    labelled: BTreeMap<&'a str, bool>,
}

/// The namespace label that allows `adminAccess` requests.
pub const ADMIN_ACCESS_LABEL: &str = "resource.kubernetes.io/admin-access";

impl<'a> AdminNamespaces<'a> {
    fn new(cluster: &'a Cluster) -> Self {
        let mut labelled = BTreeMap::new();
        for ns in &cluster.namespaces {
            let meta = &ns.object.metadata;
            let allowed = meta
                .labels
                .as_ref()
                .and_then(|l| l.get(ADMIN_ACCESS_LABEL))
                .is_some_and(|v| v == "true");
            labelled
                .entry(meta.name.as_deref().unwrap_or_default())
                .or_insert(allowed);
        }
        AdminNamespaces { labelled }
    }

    /// `Some(false)` when the namespace is present without the label; `None` when the
    /// namespace is not part of the input (nothing can be said).
    pub(crate) fn allows(&self, namespace: &str) -> Option<bool> {
        self.labelled.get(namespace).copied()
    }
}

/// A field path in Kubernetes notation, built without allocation: each step borrows
/// its parent, and the text is rendered only for a diagnostic.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FieldPath<'a> {
    Root(&'static str),
    Child(&'a FieldPath<'a>, &'a str),
    Index(&'a FieldPath<'a>, usize),
    /// A map key, shortened in the middle beyond the given length as Kubernetes does.
    Key(&'a FieldPath<'a>, &'a str, usize),
}

impl<'a> FieldPath<'a> {
    pub(crate) fn new(root: &'static str) -> FieldPath<'static> {
        FieldPath::Root(root)
    }

    pub(crate) fn child(&'a self, name: &'a str) -> FieldPath<'a> {
        FieldPath::Child(self, name)
    }

    pub(crate) fn index(&'a self, i: usize) -> FieldPath<'a> {
        FieldPath::Index(self, i)
    }

    pub(crate) fn key(&'a self, key: &'a str) -> FieldPath<'a> {
        FieldPath::Key(self, key, usize::MAX)
    }

    /// A key shown shortened to `max` bytes (at least 16).
    pub(crate) fn key_truncated(&'a self, key: &'a str, max: usize) -> FieldPath<'a> {
        FieldPath::Key(self, key, max.max(16))
    }

    fn render(&self, out: &mut String) {
        match self {
            FieldPath::Root(root) => out.push_str(root),
            FieldPath::Child(parent, name) => {
                parent.render(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            FieldPath::Index(parent, i) => {
                parent.render(out);
                out.push_str(&format!("[{i}]"));
            }
            FieldPath::Key(parent, key, max) => {
                parent.render(out);
                out.push_str(&format!("[{:?}]", truncated(key, *max)));
            }
        }
    }
}

/// `key` shortened in the middle to `max` bytes, as Kubernetes shows long map keys.
fn truncated(key: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if key.len() <= max || !key.is_ascii() {
        return key.into();
    }
    let remaining = max - 3;
    format!(
        "{}...{}",
        &key[..remaining.div_ceil(2)],
        &key[key.len() - remaining / 2..]
    )
    .into()
}

impl Display for FieldPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.render(&mut out);
        f.write_str(&out)
    }
}

/// Collects the diagnostics of one object.
pub(crate) struct Report<'a> {
    out: &'a mut Vec<Diagnostic>,
    source: &'a Source,
    object: ObjectRef,
    pub(crate) namespace: String,
}

impl<'a> Report<'a> {
    pub(crate) fn new<T>(out: &'a mut Vec<Diagnostic>, o: &'a Located<T>) -> Report<'a>
    where
        T: Resource + k8s_openapi::Metadata<Ty = ObjectMeta>,
        T::Scope: ScopeFlag,
    {
        let meta = o.object.metadata();
        Report {
            out,
            source: &o.source,
            object: ObjectRef::of::<T>(meta),
            namespace: meta.namespace.clone().unwrap_or_default(),
        }
    }

    fn push(&mut self, severity: Severity, path: &FieldPath<'_>, message: String) {
        let field = path.to_string();
        self.out.push(Diagnostic {
            severity,
            source: Some(self.source.clone()),
            object: Some(self.object.clone()),
            field: (!field.is_empty()).then_some(field),
            message,
        });
    }

    pub(crate) fn error(&mut self, path: &FieldPath<'_>, message: String) {
        self.push(Severity::Error, path, message);
    }

    pub(crate) fn warning(&mut self, path: &FieldPath<'_>, message: String) {
        self.push(Severity::Warning, path, message);
    }

    /// One `Invalid value` error per message of a name rule.
    pub(crate) fn name_rule(
        &mut self,
        path: &FieldPath<'_>,
        value: &str,
        rule: fn(&str) -> Vec<String>,
    ) {
        for msg in rule(value) {
            self.error(path, invalid(quote(value), &msg));
        }
    }

    pub(crate) fn object_meta(&mut self, meta: &ObjectMeta, name_rule: fn(&str) -> Vec<String>) {
        let path = FieldPath::new("metadata");
        let name = meta.name.as_deref().unwrap_or_default();
        if name.is_empty() {
            if meta.generate_name.as_deref().is_none_or(str::is_empty) {
                self.error(
                    &path.child("name"),
                    required("name or generateName is required"),
                );
            }
        } else {
            self.name_rule(&path.child("name"), name, name_rule);
        }
        if let Some(namespace) = &self.object.namespace {
            let namespace = namespace.clone();
            if namespace.is_empty() {
                self.error(&path.child("namespace"), required(""));
            } else {
                self.name_rule(&path.child("namespace"), &namespace, names::dns1123_label);
            }
        } else if meta.namespace.as_deref().is_some_and(|n| !n.is_empty()) {
            self.error(
                &path.child("namespace"),
                forbidden("not allowed on this type"),
            );
        }
        self.labels(&path.child("labels"), meta.labels.as_ref());
        self.annotations(&path.child("annotations"), meta.annotations.as_ref());
    }

    pub(crate) fn labels(
        &mut self,
        path: &FieldPath<'_>,
        labels: Option<&BTreeMap<String, String>>,
    ) {
        for (key, value) in labels.into_iter().flatten() {
            self.name_rule(path, key, names::qualified_name);
            self.name_rule(path, value, names::label_value);
        }
    }

    pub(crate) fn annotations(
        &mut self,
        path: &FieldPath<'_>,
        annotations: Option<&BTreeMap<String, String>>,
    ) {
        const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
        let mut total = 0usize;
        for (key, value) in annotations.into_iter().flatten() {
            self.name_rule(path, &key.to_lowercase(), names::qualified_name);
            total += key.len() + value.len();
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            self.error(path, too_long(TOTAL_ANNOTATION_SIZE_LIMIT));
        }
    }
}

/// Go's `%q`-like quoting of a string value.
pub(crate) fn quote(s: &str) -> String {
    format!("{s:?}")
}

pub(crate) fn required(detail: &str) -> String {
    if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    }
}

pub(crate) fn invalid(value: impl Display, detail: &str) -> String {
    format!("Invalid value: {value}: {detail}")
}

pub(crate) fn forbidden(detail: &str) -> String {
    format!("Forbidden: {detail}")
}

pub(crate) fn too_long(max: usize) -> String {
    format!("Too long: may not be more than {max} bytes")
}

pub(crate) fn too_many(actual: usize, max: usize) -> String {
    format!("Too many: {actual}: must have at most {max} items")
}

pub(crate) fn duplicate(value: impl Display) -> String {
    format!("Duplicate value: {value}")
}

pub(crate) fn not_supported(value: &str, supported: &[&str]) -> String {
    let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
    format!(
        "Unsupported value: {}: supported values: {}",
        quote(value),
        list.join(", ")
    )
}

pub(crate) fn not_found(value: impl Display) -> String {
    format!("Not found: {value}")
}

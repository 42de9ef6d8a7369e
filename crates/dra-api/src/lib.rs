//! Kubernetes objects for DRA: loading with positions, API-server defaults and
//! API-server validation.
//!
//! * [`load_paths`] / [`load_str`] read files, directories, stdin or text
//!   (multi-document YAML, JSON objects, arrays and streams, `kind: List` and typed
//!   `...List`s) into a [`Cluster`] of k8s-openapi `v1_37` objects, each
//!   [`Located`] at its [`Source`] (file and line), plus [`Diagnostic`]s for what
//!   could not be read (with file, line and field path; unknown kinds are warnings).
//! * [`apply_defaults`] (done by the loader) fills in what the API server defaults
//!   and later stages rely on (`allocationMode`, `count`, toleration `operator`,
//!   `metadata.namespace`).
//! * [`validate`] checks what the API server would check for the resource.k8s.io/v1
//!   kinds (names, limits, one-of rules, references inside a claim, request
//!   policies, admin access) and the Pod and PriorityClass basics the simulator
//!   relies on. CEL expressions are not compiled here (`dra-cel` does that).
//!
//! Key decisions: every document goes through `serde_json::Value` before it is
//! typed, as kubectl converts YAML to JSON, so types are judged as the API server
//! judges them; invalid objects are reported, never dropped or repaired; output is
//! deterministic (documents are parsed in parallel but assembled in input order).
//!
//! ```
//! let loaded = dra_api::load_str("example.yaml", "
//! apiVersion: resource.k8s.io/v1
//! kind: ResourceClaim
//! metadata: {name: gpu}
//! spec:
//!   devices:
//!     requests:
//!     - name: gpu
//!       exactly: {deviceClassName: gpu.example.com}
//! ");
//! assert!(loaded.diagnostics.is_empty());
//! let claim = &loaded.cluster.resource_claims[0];
//! assert_eq!(claim.source.to_string(), "example.yaml:2");
//! assert_eq!(claim.object.metadata.namespace.as_deref(), Some("default"));
//! let exact = claim.object.spec.as_ref().unwrap().devices.as_ref().unwrap().requests.as_ref().unwrap()[0]
//!     .exactly.as_ref().unwrap();
//! assert_eq!((exact.allocation_mode.as_deref(), exact.count), (Some("ExactCount"), Some(1)));
//! assert!(dra_api::validate(&loaded.cluster).is_empty());
//! ```

mod cluster;
pub mod defaults;
mod diagnostic;
pub mod limits;
mod load;
mod source;
mod validate;

pub use cluster::{
    Cluster, ClusterIndex, KindInfo, ScopeFlag, SliceDoc, SliceJson, SliceText, supported_kinds,
};
pub use defaults::apply_defaults;
pub use diagnostic::{Diagnostic, Severity};
pub use load::{
    LoadError, LoadOptions, Loaded, SliceSink, load_paths, load_str, load_str_with,
    load_string_with,
};
pub use source::{Located, ObjectRef, Source};
pub use validate::{ADMIN_ACCESS_LABEL, validate};

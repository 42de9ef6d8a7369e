//! Where an object came from and how to name it.

use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::cluster::ScopeFlag;

/// A position in the input: a file (or `<stdin>`, `<builtin:NAME>`) and a 1-based line.
///
/// For an object in a multi-document file the line is where its document starts;
/// for an item of a `List` it is where the item starts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source {
    /// The path as given by the user, or `<stdin>` / `<builtin:NAME>`.
    pub file: Arc<str>,
    /// 1-based line.
    pub line: u32,
}

impl Source {
    pub fn new(file: impl Into<Arc<str>>, line: u32) -> Source {
        Source {
            file: file.into(),
            line,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// An object together with the place it was read from.
///
/// The object is boxed: Kubernetes objects are large (a `Pod` is 2.5 KB before any of its
/// strings), and the loader decodes each into a box of its own, which is then kept as it is
/// instead of being copied into a vector of such objects.
#[derive(Clone, Debug, PartialEq)]
pub struct Located<T> {
    pub source: Source,
    pub object: Box<T>,
}

impl<T> Located<T> {
    pub fn new(source: Source, object: T) -> Located<T> {
        Located::boxed(source, Box::new(object))
    }

    /// Keeps an object that is boxed already.
    pub fn boxed(source: Source, object: Box<T>) -> Located<T> {
        Located { source, object }
    }
}

/// Identifies an object in messages: `Kind namespace/name` or `Kind name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    pub kind: String,
    /// `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// The reference to an object of kind `T` with metadata `meta`; a namespaced
    /// object without a namespace shows an empty one.
    pub fn of<T>(meta: &ObjectMeta) -> ObjectRef
    where
        T: k8s_openapi::Resource,
        T::Scope: ScopeFlag,
    {
        let namespace = if <T::Scope as ScopeFlag>::NAMESPACED {
            Some(meta.namespace.as_deref().unwrap_or_default())
        } else {
            None
        };
        ObjectRef::new(T::KIND, namespace, meta.name.clone().unwrap_or_default())
    }

    pub fn new(
        kind: impl Into<String>,
        namespace: Option<&str>,
        name: impl Into<String>,
    ) -> ObjectRef {
        ObjectRef {
            kind: kind.into(),
            namespace: namespace.map(str::to_string),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.name.is_empty() {
            "<unnamed>"
        } else {
            &self.name
        };
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{name}", self.kind),
            None => write!(f, "{} {name}", self.kind),
        }
    }
}

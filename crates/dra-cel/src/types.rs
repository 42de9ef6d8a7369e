//! Check-time types, as in cel-go's `common/types.Type`, with its two printed forms.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    Dyn,
    /// `google.protobuf.Any`: the DRA attribute value type of the 1.31 device declaration;
    /// the checker treats it like `dyn`.
    Any,
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// `type` (no parameter) or `type(T)`.
    Meta(Option<Box<Type>>),
    Optional(Box<Type>),
    /// Object types: `kubernetes.DRADevice`, `kubernetes.Quantity`, `kubernetes.Semver`.
    Struct(&'static str),
    Param(String),
}

pub(crate) const DEVICE_TYPE: &str = "kubernetes.DRADevice";
pub(crate) const QUANTITY_TYPE: &str = "kubernetes.Quantity";
pub(crate) const SEMVER_TYPE: &str = "kubernetes.Semver";
pub(crate) const IP_TYPE: &str = "net.IP";
pub(crate) const CIDR_TYPE: &str = "net.CIDR";

impl Type {
    pub(crate) fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }
    pub(crate) fn map(k: Type, v: Type) -> Type {
        Type::Map(Box::new(k), Box::new(v))
    }
    pub(crate) fn optional(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }
    pub(crate) fn param(name: &str) -> Type {
        Type::Param(name.to_string())
    }

    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn | Type::Any)
    }

    pub(crate) fn is_dyn_or_error(&self) -> bool {
        matches!(self, Type::Dyn | Type::Any | Type::Error)
    }

    /// Kind equality ignoring parameters (for cel-go's `kind1 != kind2` checks).
    pub(crate) fn same_kind(&self, other: &Type) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && match (self, other) {
                (Type::Struct(a), Type::Struct(b)) => a == b,
                _ => true,
            }
    }

    pub(crate) fn params(&self) -> Vec<&Type> {
        match self {
            Type::List(e) => vec![e],
            Type::Map(k, v) => vec![k, v],
            Type::Optional(e) => vec![e],
            Type::Meta(Some(t)) => vec![t],
            _ => vec![],
        }
    }

    /// Whether this type is nullable in cel-go's legacy sense (structs, any, wrappers).
    pub(crate) fn is_legacy_nullable(&self) -> bool {
        matches!(
            self,
            Type::Optional(_) | Type::Struct(_) | Type::Any | Type::Duration | Type::Timestamp
        )
    }

    /// The name cel-go's `Type.String()` prints (used by the result-type check).
    pub(crate) fn go_string(&self) -> String {
        match self {
            Type::Param(p) => format!("<{p}>"),
            Type::Any => "google.protobuf.Any".to_string(),
            Type::Duration => "google.protobuf.Duration".to_string(),
            Type::Timestamp => "google.protobuf.Timestamp".to_string(),
            Type::Null => "null_type".to_string(),
            Type::Error => "*error*".to_string(),
            Type::List(e) => format!("list({})", e.go_string()),
            Type::Map(k, v) => format!("map({}, {})", k.go_string(), v.go_string()),
            Type::Optional(e) => format!("optional_type({})", e.go_string()),
            Type::Meta(Some(t)) => format!("type({})", t.go_string()),
            other => other.to_string(),
        }
    }

    /// Whether the type's runtime representation is a scalar of size 1 (cost estimation).
    pub(crate) fn is_scalar(&self) -> bool {
        match self {
            Type::Bool
            | Type::Double
            | Type::Duration
            | Type::Int
            | Type::Timestamp
            | Type::Uint => true,
            Type::Optional(t) => t.is_scalar(),
            _ => false,
        }
    }
}

/// cel-go's `FormatCELType` (used in checker messages).
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Any => f.write_str("any"),
            Type::Error => f.write_str("!error!"),
            Type::Null => f.write_str("null"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Duration => f.write_str("duration"),
            Type::Timestamp => f.write_str("timestamp"),
            Type::List(e) => write!(f, "list({e})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Meta(None) => f.write_str("type"),
            Type::Meta(Some(t)) => write!(f, "type({t})"),
            Type::Optional(e) => write!(f, "optional_type({e})"),
            Type::Struct(name) => f.write_str(name),
            Type::Param(p) => f.write_str(p),
        }
    }
}

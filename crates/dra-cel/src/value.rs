//! Runtime values. Values borrow from the device and the program where they can
//! (`'a`), so the common paths (attribute lookups, constant strings) never allocate.

use std::cmp::Ordering;
use std::rc::Rc;

use dra_types::{Quantity, Semver};

use crate::device::{AttrValue, DeviceInput, Domain};
use crate::error::RuntimeErrorKind;
use crate::types::Type;

/// A string value: borrowed from the device or program, or owned.
#[derive(Clone, Debug)]
pub(crate) enum Str<'a> {
    Borrowed(&'a str),
    Owned(Rc<str>),
}

impl Str<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            Str::Owned(s) => s,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Rc<[u8]>),
}

impl Bytes<'_> {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(b) => b,
            Bytes::Owned(b) => b,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum QuantityRef<'a> {
    Borrowed(&'a Quantity),
    Owned(Rc<Quantity>),
}

impl QuantityRef<'_> {
    pub(crate) fn get(&self) -> &Quantity {
        match self {
            QuantityRef::Borrowed(q) => q,
            QuantityRef::Owned(q) => q,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum SemverRef<'a> {
    Borrowed(&'a Semver),
    Owned(Rc<Semver>),
}

impl SemverRef<'_> {
    pub(crate) fn get(&self) -> &Semver {
        match self {
            SemverRef::Borrowed(v) => v,
            SemverRef::Owned(v) => v,
        }
    }
}

/// A map: a literal (or computed) map, or a view into the device.
#[derive(Clone, Debug)]
pub(crate) enum MapValue<'a> {
    Owned(Rc<Vec<(Value<'a>, Value<'a>)>>),
    /// `device.attributes`: unknown domains read as empty maps.
    Attributes(&'a DeviceInput),
    /// `device.capacity`: unknown domains read as empty maps.
    Capacity(&'a DeviceInput),
    /// One domain of `device.attributes` (possibly the empty one).
    AttrDomain(&'a Domain<AttrValue>),
    /// One domain of `device.capacity`.
    CapDomain(&'a Domain<Quantity>),
    /// The device object, seen as the map it is at runtime upstream.
    Device(&'a DeviceInput),
}

/// A duration in nanoseconds (Go's `time.Duration` range).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Duration(pub i64);

/// A timestamp: seconds since the Unix epoch and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timestamp {
    pub seconds: i64,
    pub nanos: u32,
}

#[derive(Clone, Debug)]
pub(crate) enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Str<'a>),
    Bytes(Bytes<'a>),
    List(Rc<Vec<Value<'a>>>),
    Map(MapValue<'a>),
    Type(Rc<Type>),
    Optional(Option<Rc<Value<'a>>>),
    Quantity(QuantityRef<'a>),
    Semver(SemverRef<'a>),
    Duration(Duration),
    Timestamp(Timestamp),
    /// Kubernetes `net.IP` (IPv4 or IPv6, no zone, not IPv4-mapped).
    Ip(std::net::IpAddr),
    /// Kubernetes `net.CIDR`: address (unmasked, as written) and prefix length.
    Cidr(std::net::IpAddr, u8),
}

/// An evaluation error (errors are values in CEL until the result is produced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EvalError {
    pub kind: RuntimeErrorKind,
    pub message: String,
}

pub(crate) type Err = Box<EvalError>;
pub(crate) type Val<'a> = Result<Value<'a>, Err>;

pub(crate) fn err(kind: RuntimeErrorKind, message: impl Into<String>) -> Err {
    Box::new(EvalError {
        kind,
        message: message.into(),
    })
}

pub(crate) fn other(message: impl Into<String>) -> Err {
    err(RuntimeErrorKind::Other, message)
}

/// The singleton operators' plain "no such overload".
pub(crate) fn no_such_overload() -> Err {
    err(RuntimeErrorKind::NoSuchOverload, "no such overload")
}

/// `no such overload: <fn>(<arg types>)`, as cel-go's overload guards report.
pub(crate) fn no_such_overload_for(function: &str, args: &[&Value<'_>]) -> Err {
    let names: Vec<&str> = args.iter().map(|v| v.type_name()).collect();
    err(
        RuntimeErrorKind::NoSuchOverload,
        format!("no such overload: {function}({})", names.join(", ")),
    )
}

pub(crate) fn no_such_key(key: &Value<'_>) -> Err {
    err(
        RuntimeErrorKind::NoSuchKey,
        format!("no such key: {}", key.display()),
    )
}

impl<'a> Value<'a> {
    pub(crate) fn string(s: impl Into<Rc<str>>) -> Value<'a> {
        Value::Str(Str::Owned(s.into()))
    }

    pub(crate) fn list(items: Vec<Value<'a>>) -> Value<'a> {
        Value::List(Rc::new(items))
    }

    /// The runtime type name cel-go reports (`ref.Type.TypeName()`).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::Str(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Type(_) => "type",
            Value::Optional(_) => "optional_type",
            Value::Quantity(_) => crate::types::QUANTITY_TYPE,
            Value::Semver(_) => crate::types::SEMVER_TYPE,
            Value::Duration(_) => "google.protobuf.Duration",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Ip(_) => crate::types::IP_TYPE,
            Value::Cidr(..) => crate::types::CIDR_TYPE,
        }
    }

    /// Go's `%T` of the value in cel-go, used by a few upstream messages.
    pub(crate) fn go_type(&self) -> &'static str {
        match self {
            Value::Null => "types.Null",
            Value::Bool(_) => "types.Bool",
            Value::Int(_) => "types.Int",
            Value::Uint(_) => "types.Uint",
            Value::Double(_) => "types.Double",
            Value::Str(_) => "types.String",
            Value::Bytes(_) => "types.Bytes",
            Value::List(_) => "*types.baseList",
            Value::Map(_) => "*types.baseMap",
            Value::Type(_) => "*types.Type",
            Value::Optional(_) => "*types.Optional",
            Value::Quantity(_) => "cel.Quantity",
            Value::Semver(_) => "cel.Semver",
            Value::Duration(_) => "types.Duration",
            Value::Timestamp(_) => "types.Timestamp",
            Value::Ip(_) => "cel.IP",
            Value::Cidr(..) => "cel.CIDR",
        }
    }

    /// The CEL type value of `type(x)`.
    pub(crate) fn cel_type(&self) -> Type {
        match self {
            Value::Null => Type::Null,
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Uint(_) => Type::Uint,
            Value::Double(_) => Type::Double,
            Value::Str(_) => Type::String,
            Value::Bytes(_) => Type::Bytes,
            Value::List(_) => Type::list(Type::Dyn),
            Value::Map(_) => Type::map(Type::Dyn, Type::Dyn),
            Value::Type(_) => Type::Meta(None),
            Value::Optional(_) => Type::optional(Type::Dyn),
            Value::Quantity(_) => Type::Struct(crate::types::QUANTITY_TYPE),
            Value::Semver(_) => Type::Struct(crate::types::SEMVER_TYPE),
            Value::Duration(_) => Type::Duration,
            Value::Timestamp(_) => Type::Timestamp,
            Value::Ip(_) => Type::Struct(crate::types::IP_TYPE),
            Value::Cidr(..) => Type::Struct(crate::types::CIDR_TYPE),
        }
    }

    /// Go's `%v` of the value, as used in error messages.
    pub(crate) fn display(&self) -> String {
        match self {
            Value::Null => "NULL_VALUE".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Uint(u) => u.to_string(),
            Value::Double(d) => crate::functions::format_go_float(*d),
            Value::Str(s) => s.as_str().to_string(),
            Value::Bytes(b) => String::from_utf8_lossy(b.as_bytes()).into_owned(),
            Value::List(items) => {
                let parts: Vec<String> = items.iter().map(Value::display).collect();
                format!("[{}]", parts.join(", "))
            }
            Value::Map(_) => "map".to_string(),
            Value::Type(t) => t.go_string(),
            Value::Optional(Some(v)) => format!("optional({})", v.display()),
            Value::Optional(None) => "optional.none()".to_string(),
            Value::Quantity(q) => q.get().to_canonical_string(),
            Value::Semver(v) => v.get().to_string(),
            Value::Duration(d) => format!("{}s", d.0 as f64 / 1e9),
            Value::Timestamp(t) => format!("{}", t.seconds),
            Value::Ip(ip) => ip.to_string(),
            Value::Cidr(ip, bits) => format!("{ip}/{bits}"),
        }
    }

    /// Size as cel-go's `traits.Sizer` (strings in code points), or 1.
    pub(crate) fn actual_size(&self) -> u64 {
        match self {
            Value::Str(s) => s.as_str().chars().count() as u64,
            Value::Bytes(b) => b.as_bytes().len() as u64,
            Value::List(l) => l.len() as u64,
            Value::Map(m) => m.len() as u64,
            Value::Optional(Some(v)) => v.actual_size(),
            _ => 1,
        }
    }
}

impl<'a> MapValue<'a> {
    pub(crate) fn len(&self) -> usize {
        match self {
            MapValue::Owned(entries) => entries.len(),
            MapValue::Attributes(d) => d.attributes.len(),
            MapValue::Capacity(d) => d.capacity.len(),
            MapValue::AttrDomain(dom) => dom.len(),
            MapValue::CapDomain(dom) => dom.len(),
            MapValue::Device(_) => 4,
        }
    }

    /// Looks up a key; `Ok(None)` when absent.
    pub(crate) fn find(&self, key: &Value<'_>) -> Result<Option<Value<'a>>, Err> {
        match self {
            MapValue::Owned(entries) => {
                for (k, v) in entries.iter() {
                    if keys_equal(k, key) {
                        return Ok(Some(v.clone()));
                    }
                }
                Ok(None)
            }
            MapValue::Attributes(d) => Ok(Some(match key {
                Value::Str(s) => Value::Map(MapValue::AttrDomain(d.attribute_domain(s.as_str()))),
                _ => Value::Map(MapValue::AttrDomain(Domain::empty_attrs())),
            })),
            MapValue::Capacity(d) => Ok(Some(match key {
                Value::Str(s) => Value::Map(MapValue::CapDomain(d.capacity_domain(s.as_str()))),
                _ => Value::Map(MapValue::CapDomain(Domain::empty_caps())),
            })),
            MapValue::AttrDomain(dom) => match key {
                Value::Str(s) => match dom.get(s.as_str()) {
                    Some(v) => v.to_value().map(Some),
                    None => Ok(None),
                },
                _ => Ok(None),
            },
            MapValue::CapDomain(dom) => match key {
                Value::Str(s) => Ok(dom
                    .get(s.as_str())
                    .map(|q| Value::Quantity(QuantityRef::Borrowed(q)))),
                _ => Ok(None),
            },
            MapValue::Device(d) => match key {
                Value::Str(s) => Ok(d.field(s.as_str())),
                _ => Ok(None),
            },
        }
    }

    /// Key presence as `in` sees it (`Contains`): the device's outer maps hold only the
    /// domains that exist, although lookups of other domains yield empty maps.
    pub(crate) fn contains(&self, key: &Value<'_>) -> Result<bool, Err> {
        match (self, key) {
            (MapValue::Attributes(d), Value::Str(s)) => {
                Ok(d.attributes.iter().any(|(k, _)| k == s.as_str()))
            }
            (MapValue::Capacity(d), Value::Str(s)) => {
                Ok(d.capacity.iter().any(|(k, _)| k == s.as_str()))
            }
            (MapValue::Attributes(_) | MapValue::Capacity(_), _) => Ok(false),
            _ => Ok(self.find(key)?.is_some()),
        }
    }

    /// The keys, in iteration order.
    pub(crate) fn keys(&self) -> Vec<Value<'a>> {
        match self {
            MapValue::Owned(entries) => entries.iter().map(|(k, _)| k.clone()).collect(),
            MapValue::Attributes(d) => d
                .attributes
                .iter()
                .map(|(k, _)| Value::Str(Str::Borrowed(k.as_str())))
                .collect(),
            MapValue::Capacity(d) => d
                .capacity
                .iter()
                .map(|(k, _)| Value::Str(Str::Borrowed(k.as_str())))
                .collect(),
            MapValue::AttrDomain(dom) => dom
                .entries()
                .map(|(k, _)| Value::Str(Str::Borrowed(k)))
                .collect(),
            MapValue::CapDomain(dom) => dom
                .entries()
                .map(|(k, _)| Value::Str(Str::Borrowed(k)))
                .collect(),
            MapValue::Device(d) => d
                .field_names()
                .iter()
                .map(|k| Value::Str(Str::Borrowed(k)))
                .collect(),
        }
    }
}

/// Map key equality: numeric keys compare across int/uint/double.
fn keys_equal(a: &Value<'_>, b: &Value<'_>) -> bool {
    matches!(equals(a, b), Ok(true))
}

/// Orders two doubles; NaN compares equal here (callers reject NaN first where cel-go does).
fn double_cmp(a: f64, b: f64) -> Ordering {
    if a < b {
        Ordering::Less
    } else if a > b {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// cel-go's `compareDoubleInt`: out-of-range doubles order outside every int; otherwise
/// the int is converted to a double (lossy, as upstream).
fn double_int_cmp(d: f64, i: i64) -> Ordering {
    if d < i64::MIN as f64 {
        Ordering::Less
    } else if d > i64::MAX as f64 {
        Ordering::Greater
    } else {
        double_cmp(d, i as f64)
    }
}

fn int_double_cmp(i: i64, d: f64) -> Ordering {
    double_int_cmp(d, i).reverse()
}

/// cel-go's `compareDoubleUint`.
fn double_uint_cmp(d: f64, u: u64) -> Ordering {
    if d < 0.0 {
        Ordering::Less
    } else if d > u64::MAX as f64 {
        Ordering::Greater
    } else {
        double_cmp(d, u as f64)
    }
}

fn uint_double_cmp(u: u64, d: f64) -> Ordering {
    double_uint_cmp(d, u).reverse()
}

fn int_uint_cmp(i: i64, u: u64) -> Ordering {
    if i < 0 {
        Ordering::Less
    } else {
        (i as u64).cmp(&u)
    }
}

/// Heterogeneous equality (`types.Equal`): null only equals null; numbers compare across
/// types; otherwise the left value's `Equal` decides, which for Quantity and Semver is an
/// error when the right side is another type.
pub(crate) fn equals(a: &Value<'_>, b: &Value<'_>) -> Result<bool, Err> {
    use Value::*;
    if matches!(a, Null) || matches!(b, Null) {
        return Ok(matches!(a, Null) && matches!(b, Null));
    }
    Ok(match (a, b) {
        (Bool(x), Bool(y)) => x == y,
        (Int(x), Int(y)) => x == y,
        (Uint(x), Uint(y)) => x == y,
        (Double(x), Double(y)) => x == y,
        (Int(x), Uint(y)) | (Uint(y), Int(x)) => int_uint_cmp(*x, *y) == Ordering::Equal,
        (Int(x), Double(y)) | (Double(y), Int(x)) => {
            !y.is_nan() && int_double_cmp(*x, *y) == Ordering::Equal
        }
        (Uint(x), Double(y)) | (Double(y), Uint(x)) => {
            !y.is_nan() && uint_double_cmp(*x, *y) == Ordering::Equal
        }
        (Str(x), Str(y)) => x.as_str() == y.as_str(),
        (Bytes(x), Bytes(y)) => x.as_bytes() == y.as_bytes(),
        (List(x), List(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            // As cel-go: only an element comparison that is false makes the lists
            // differ; an error in one is ignored.
            for (p, q) in x.iter().zip(y.iter()) {
                if let Ok(false) = equals(p, q) {
                    return Ok(false);
                }
            }
            true
        }
        (Map(x), Map(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for k in x.keys() {
                let xv = x.find(&k)?;
                match (xv, y.find(&k)?) {
                    (Some(p), Some(q)) => {
                        if let Ok(false) = equals(&p, &q) {
                            return Ok(false);
                        }
                    }
                    _ => return Ok(false),
                }
            }
            true
        }
        (Type(x), Type(y)) => type_value_name(x) == type_value_name(y),
        (Optional(x), Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(p), Some(q)) => equals(p, q)?,
            _ => false,
        },
        (Quantity(x), Quantity(y)) => x.get().cmp_value(y.get()) == Ordering::Equal,
        (Semver(x), Semver(y)) => x.get().cmp(y.get()) == Ordering::Equal,
        (Ip(x), Ip(y)) => x == y,
        (Cidr(x, a), Cidr(y, b)) => x == y && a == b,
        (Quantity(_) | Semver(_) | Ip(_) | Cidr(..), _) => return Err(no_such_overload()),
        (Duration(x), Duration(y)) => x == y,
        (Timestamp(x), Timestamp(y)) => x == y,
        _ => false,
    })
}

/// The name a type value compares by (runtime types are unparameterized).
pub(crate) fn type_value_name(t: &Type) -> String {
    match t {
        Type::List(_) => "list".to_string(),
        Type::Map(..) => "map".to_string(),
        Type::Optional(_) => "optional_type".to_string(),
        Type::Meta(_) => "type".to_string(),
        Type::Null => "null_type".to_string(),
        Type::Dyn => "dyn".to_string(),
        Type::Duration => "google.protobuf.Duration".to_string(),
        Type::Timestamp => "google.protobuf.Timestamp".to_string(),
        other => other.to_string(),
    }
}

/// Whether the value supports ordering (`traits.Comparer`).
pub(crate) fn is_comparer(v: &Value<'_>) -> bool {
    matches!(
        v,
        Value::Bool(_)
            | Value::Int(_)
            | Value::Uint(_)
            | Value::Double(_)
            | Value::Str(_)
            | Value::Bytes(_)
            | Value::Duration(_)
            | Value::Timestamp(_)
    )
}

/// Ordering of two comparable values (`Compare`), with cross-type numerics.
pub(crate) fn compare(a: &Value<'_>, b: &Value<'_>) -> Result<Ordering, Err> {
    use Value::*;
    Ok(match (a, b) {
        (Bool(x), Bool(y)) => x.cmp(y),
        (Int(x), Int(y)) => x.cmp(y),
        (Uint(x), Uint(y)) => x.cmp(y),
        (Int(x), Uint(y)) => int_uint_cmp(*x, *y),
        (Uint(x), Int(y)) => int_uint_cmp(*y, *x).reverse(),
        (Double(x), Double(y)) => {
            if x.is_nan() || y.is_nan() {
                return Err(other("NaN values cannot be ordered"));
            }
            x.partial_cmp(y).unwrap_or(Ordering::Equal)
        }
        (Int(x), Double(y)) => {
            if y.is_nan() {
                return Err(other("NaN values cannot be ordered"));
            }
            int_double_cmp(*x, *y)
        }
        (Double(x), Int(y)) => {
            if x.is_nan() {
                return Err(other("NaN values cannot be ordered"));
            }
            int_double_cmp(*y, *x).reverse()
        }
        (Uint(x), Double(y)) => {
            if y.is_nan() {
                return Err(other("NaN values cannot be ordered"));
            }
            uint_double_cmp(*x, *y)
        }
        (Double(x), Uint(y)) => {
            if x.is_nan() {
                return Err(other("NaN values cannot be ordered"));
            }
            uint_double_cmp(*y, *x).reverse()
        }
        (Str(x), Str(y)) => x.as_str().cmp(y.as_str()),
        (Bytes(x), Bytes(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Duration(x), Duration(y)) => x.cmp(y),
        (Timestamp(x), Timestamp(y)) => x.cmp(y),
        _ => return Err(no_such_overload()),
    })
}

//! The selector input: one device, converted once by the caller and then shared by every
//! selector evaluated against it.

use dra_types::{Quantity, Semver};

use crate::value::{QuantityRef, SemverRef, Str, Val, Value};

/// One attribute value of a device, as in `resource.k8s.io/v1` `DeviceAttribute`.
///
/// Versions stay raw strings; they are parsed with strict semver rules when the device
/// input is built, and a bad one becomes the runtime error upstream reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttributeValue {
    /// `int`.
    Int(i64),
    /// `bool`.
    Bool(bool),
    /// `string`.
    String(String),
    /// `version` (semantic version, raw).
    Version(String),
    /// `ints` (alpha, DRAListTypeAttributes).
    IntList(Vec<i64>),
    /// `bools` (alpha).
    BoolList(Vec<bool>),
    /// `strings` (alpha).
    StringList(Vec<String>),
    /// `versions` (alpha), raw.
    VersionList(Vec<String>),
    /// No value field set: upstream fails every evaluation on the device with
    /// `attribute <name>: unsupported attribute value`.
    Unset,
}

#[derive(Debug)]
pub(crate) enum AttrValue {
    Int(i64),
    Bool(bool),
    Str(String),
    Version(Semver),
    IntList(Vec<i64>),
    BoolList(Vec<bool>),
    StrList(Vec<String>),
    VersionList(Vec<Semver>),
}

impl AttrValue {
    pub(crate) fn to_value(&self) -> Val<'_> {
        Ok(match self {
            AttrValue::Int(i) => Value::Int(*i),
            AttrValue::Bool(b) => Value::Bool(*b),
            AttrValue::Str(s) => Value::Str(Str::Borrowed(s)),
            AttrValue::Version(v) => Value::Semver(SemverRef::Borrowed(v)),
            AttrValue::IntList(l) => Value::list(l.iter().map(|i| Value::Int(*i)).collect()),
            AttrValue::BoolList(l) => Value::list(l.iter().map(|b| Value::Bool(*b)).collect()),
            AttrValue::StrList(l) => {
                Value::list(l.iter().map(|s| Value::Str(Str::Borrowed(s))).collect())
            }
            AttrValue::VersionList(l) => Value::list(
                l.iter()
                    .map(|v| Value::Semver(SemverRef::Borrowed(v)))
                    .collect(),
            ),
        })
    }
}

/// Whether a `version` attribute value converts for CEL (strict semantic version), as
/// [`DeviceInput::new`] converts it; a value that does not fails every evaluation on its device.
pub fn version_converts(raw: &str) -> bool {
    Semver::parse(raw).is_ok()
}

/// The attributes or capacities of one domain, sorted by id.
#[derive(Debug)]
pub(crate) struct Domain<T> {
    entries: Vec<(String, T)>,
}

static EMPTY_ATTRS: Domain<AttrValue> = Domain {
    entries: Vec::new(),
};
static EMPTY_CAPS: Domain<Quantity> = Domain {
    entries: Vec::new(),
};

impl<T> Domain<T> {
    pub(crate) fn get(&self, id: &str) -> Option<&T> {
        if self.entries.len() <= 8 {
            return self.entries.iter().find(|(k, _)| k == id).map(|(_, v)| v);
        }
        self.entries
            .binary_search_by(|(k, _)| k.as_str().cmp(id))
            .ok()
            .map(|i| &self.entries[i].1)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, &T)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl Domain<AttrValue> {
    pub(crate) fn empty_attrs() -> &'static Domain<AttrValue> {
        &EMPTY_ATTRS
    }
}

impl Domain<Quantity> {
    pub(crate) fn empty_caps() -> &'static Domain<Quantity> {
        &EMPTY_CAPS
    }
}

/// The `device` variable for one device: driver, attributes and capacity by domain, and
/// `allowMultipleAllocations`.
///
/// Keys without a `/` are placed in the driver's domain (upstream `parseQualifiedName`).
/// If a device has both `model` and `<driver>/model`, upstream's winner depends on Go map
/// order; here the fully qualified key always wins.
#[derive(Debug)]
pub struct DeviceInput {
    pub(crate) driver: String,
    pub(crate) allow_multiple_allocations: bool,
    pub(crate) attributes: Vec<(String, Domain<AttrValue>)>,
    pub(crate) capacity: Vec<(String, Domain<Quantity>)>,
    /// Upstream converts every attribute before evaluating; the first failure (in key
    /// order) fails every evaluation on this device.
    pub(crate) conversion_error: Option<String>,
}

fn split_name<'n>(name: &'n str, driver: &'n str) -> (&'n str, &'n str, bool) {
    match name.find('/') {
        Some(i) => (&name[..i], &name[i + 1..], true),
        None => (driver, name, false),
    }
}

/// Domains under construction: (domain, [(id, value, key was fully qualified)]).
type Building<T> = Vec<(String, Vec<(String, T, bool)>)>;

fn insert<T>(domains: &mut Building<T>, domain: &str, id: &str, value: T, qualified: bool) {
    let entries = match domains.iter().position(|(d, _)| d == domain) {
        Some(i) => &mut domains[i].1,
        None => {
            domains.push((domain.to_string(), Vec::new()));
            let last = domains.len() - 1;
            &mut domains[last].1
        }
    };
    match entries.iter().position(|(k, _, _)| k == id) {
        Some(i) => {
            // A fully qualified key beats a short one; otherwise the later one wins.
            if qualified || !entries[i].2 {
                entries[i] = (id.to_string(), value, qualified);
            }
        }
        None => entries.push((id.to_string(), value, qualified)),
    }
}

fn finish<T>(domains: Building<T>) -> Vec<(String, Domain<T>)> {
    let mut out: Vec<(String, Domain<T>)> = domains
        .into_iter()
        .map(|(d, entries)| {
            let mut entries: Vec<(String, T)> =
                entries.into_iter().map(|(k, v, _)| (k, v)).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            (d, Domain { entries })
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

impl DeviceInput {
    /// Builds the input for one device. `attributes` and `capacity` are keyed by the
    /// names used in the ResourceSlice (short, or `domain/id`).
    pub fn new<'k>(
        driver: &str,
        attributes: impl IntoIterator<Item = (&'k str, AttributeValue)>,
        capacity: impl IntoIterator<Item = (&'k str, Quantity)>,
        allow_multiple_allocations: bool,
    ) -> DeviceInput {
        let mut attrs: Building<AttrValue> = Vec::new();
        let mut errors: Vec<(String, String)> = Vec::new();
        for (name, value) in attributes {
            let converted = match value {
                AttributeValue::Int(i) => Ok(AttrValue::Int(i)),
                AttributeValue::Bool(b) => Ok(AttrValue::Bool(b)),
                AttributeValue::String(s) => Ok(AttrValue::Str(s)),
                AttributeValue::Version(v) => Semver::parse(&v)
                    .map(AttrValue::Version)
                    .map_err(|e| format!("parse semantic version: {e}")),
                AttributeValue::IntList(l) => Ok(AttrValue::IntList(l)),
                AttributeValue::BoolList(l) => Ok(AttrValue::BoolList(l)),
                AttributeValue::StringList(l) => Ok(AttrValue::StrList(l)),
                AttributeValue::VersionList(l) => l
                    .iter()
                    .map(|v| Semver::parse(v))
                    .collect::<Result<Vec<_>, _>>()
                    .map(AttrValue::VersionList)
                    .map_err(|e| format!("parse semantic version: {e}")),
                AttributeValue::Unset => Err("unsupported attribute value".to_string()),
            };
            match converted {
                Ok(v) => {
                    let (domain, id, qualified) = split_name(name, driver);
                    insert(&mut attrs, domain, id, v, qualified);
                }
                Err(e) => errors.push((name.to_string(), e)),
            }
        }
        let mut caps: Building<Quantity> = Vec::new();
        for (name, q) in capacity {
            let (domain, id, qualified) = split_name(name, driver);
            insert(&mut caps, domain, id, q, qualified);
        }
        errors.sort();
        DeviceInput {
            driver: driver.to_string(),
            allow_multiple_allocations,
            attributes: finish(attrs),
            capacity: finish(caps),
            conversion_error: errors
                .into_iter()
                .next()
                .map(|(name, e)| format!("attribute {name}: {e}")),
        }
    }

    /// The driver name.
    pub fn driver(&self) -> &str {
        &self.driver
    }

    pub(crate) fn attribute_domain(&self, domain: &str) -> &Domain<AttrValue> {
        self.attributes
            .iter()
            .find(|(d, _)| d == domain)
            .map_or(Domain::empty_attrs(), |(_, dom)| dom)
    }

    pub(crate) fn capacity_domain(&self, domain: &str) -> &Domain<Quantity> {
        self.capacity
            .iter()
            .find(|(d, _)| d == domain)
            .map_or(Domain::empty_caps(), |(_, dom)| dom)
    }

    pub(crate) fn field_names(&self) -> [&'static str; 4] {
        [
            "allowMultipleAllocations",
            "attributes",
            "capacity",
            "driver",
        ]
    }

    pub(crate) fn field(&self, name: &str) -> Option<Value<'_>> {
        use crate::value::MapValue;
        Some(match name {
            "driver" => Value::Str(Str::Borrowed(&self.driver)),
            "allowMultipleAllocations" => Value::Bool(self.allow_multiple_allocations),
            "attributes" => Value::Map(MapValue::Attributes(self)),
            "capacity" => Value::Map(MapValue::Capacity(self)),
            _ => return None,
        })
    }

    pub(crate) fn capacity_value(&self, domain: &str, id: &str) -> Option<Value<'_>> {
        self.capacity_domain(domain)
            .get(id)
            .map(|q| Value::Quantity(QuantityRef::Borrowed(q)))
    }
}

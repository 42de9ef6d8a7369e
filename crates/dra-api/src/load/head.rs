//! A first look at a JSON document without building its data.
//!
//! The JSON path of the loader reads each document twice: once for its head, and then
//! straight into its type. The head comes from the byte scanner of [`super::scan`] where
//! the document is within the subset it reads, and otherwise from [`Head`], which
//! accepts exactly what a `serde_json::Value` accepts (same grammar, same nesting limit,
//! because it asks the deserializer for every node the way `Value` does) but keeps only
//! what dispatch needs; the type is the k8s-openapi one named by its `apiVersion` and
//! `kind`. That avoids building (and freeing) a `Value` tree per
//! object, which dominated the time and transient memory of large inputs. Anything the
//! direct route cannot decode goes the generic way, so answers and messages do not change.
//! For a ResourceSlice it also finds the text of its `metadata` on the way, which spares a
//! deferred slice (kept as text with only its metadata decoded) a pass of its own.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::cluster::AnyObject;

/// What dispatch needs from a document, with `Value` semantics: a later duplicate key
/// replaces an earlier one, and a non-string `apiVersion`/`kind` counts as absent.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Head<'a> {
    /// The document is a mapping (otherwise a list or a scalar).
    pub(crate) is_object: bool,
    pub(crate) api_version: Option<String>,
    pub(crate) kind: Option<String>,
    /// A top-level array, or a mapping whose `items` is a list: documents whose entries
    /// need their own lines.
    pub(crate) has_items: bool,
    /// The text of a ResourceSlice's `metadata` value, found in the same pass when
    /// `apiVersion` and `kind` came before it (as in every object the API server writes) and
    /// no later `metadata` key was skipped; `None` otherwise, and then [`MetadataOnly`] reads
    /// the whole document. The loader keeps deferred slices as text with their metadata, and
    /// reading a slice's text a second time only for it was a visible part of loading.
    pub(crate) slice_metadata: Option<&'a str>,
}

impl Head<'_> {
    /// Whether `apiVersion` and `kind` read so far name a ResourceSlice (of the current
    /// version).
    pub(crate) fn names_a_slice(&self) -> bool {
        let info = AnyObject::slice_info();
        self.api_version.as_deref() == Some(info.api_version)
            && self.kind.as_deref() == Some(info.kind)
    }

    /// Whether `apiVersion` and `kind` read so far name a kind whose documents of the
    /// common shape are read straight from their text in full
    /// ([`common_shapes::READ_IN_FULL`](super::common_shapes::READ_IN_FULL)).
    pub(crate) fn names_read_in_full(&self) -> bool {
        let (Some(api_version), Some(kind)) = (self.api_version.as_deref(), self.kind.as_deref())
        else {
            return false;
        };
        super::common_shapes::READ_IN_FULL.contains(&(api_version, kind))
    }
}

impl<'de> Deserialize<'de> for Head<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(HeadVisitor)
    }
}

/// The visitor methods for values without parts (booleans, numbers, `null`), all answering
/// `$answer`, and for an optional value, which is looked at like the value itself. Strings,
/// lists and mappings are each visitor's own.
macro_rules! plain_values_give {
    ($value:ty, $answer:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_none<E: de::Error>(self) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<$value, D::Error> {
            deserializer.deserialize_any(self)
        }
    };
}

struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = Head<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON document")
    }

    plain_values_give!(Head<'de>, Head::default());

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Head<'de>, E> {
        Ok(Head::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Head<'de>, A::Error> {
        ShapeVisitor::<false>.visit_seq(seq)?;
        Ok(Head {
            has_items: true,
            ..Head::default()
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Head<'de>, A::Error> {
        let mut head = Head {
            is_object: true,
            ..Head::default()
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => head.api_version = map.next_value::<StringOrSkip>()?.0,
                "kind" => head.kind = map.next_value::<StringOrSkip>()?.0,
                "items" => head.has_items = map.next_value::<Shape>()? == Shape::List,
                "metadata" if head.names_a_slice() => {
                    // A raw value is skipped more leniently than `Value` reads (it lets lone
                    // surrogates and out-of-range numbers through); the value's own text is
                    // read again the `Value` way, so what the head accepts does not change.
                    let raw = map.next_value::<&'de RawValue>()?.get();
                    serde_json::from_str::<Shape>(raw).map_err(de::Error::custom)?;
                    head.slice_metadata = Some(raw);
                }
                "metadata" => {
                    map.next_value::<Shape>()?;
                    head.slice_metadata = None;
                }
                _ => {
                    map.next_value::<Shape>()?;
                }
            }
        }
        Ok(head)
    }
}

/// What kind of value was read (and dropped): a string (its text kept only where asked for),
/// a list, or anything else.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    String(Option<String>),
    List,
    Other,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor::<false>)
    }
}

/// A string value, or `None` for any other value (read and dropped).
struct StringOrSkip(Option<String>);

impl<'de> Deserialize<'de> for StringOrSkip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(StringOrSkip(
            match deserializer.deserialize_any(ShapeVisitor::<true>)? {
                Shape::String(text) => text,
                Shape::List | Shape::Other => None,
            },
        ))
    }
}

/// Reads any value into its [`Shape`], asking the deserializer for every node as `Value`
/// does; keeps a string's text when `KEEP_STRING`.
struct ShapeVisitor<const KEEP_STRING: bool>;

impl<'de, const KEEP_STRING: bool> Visitor<'de> for ShapeVisitor<KEEP_STRING> {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    plain_values_give!(Shape, Shape::Other);

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Shape, E> {
        Ok(Shape::String(KEEP_STRING.then(|| v.to_string())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        while seq.next_element::<Shape>()?.is_some() {}
        Ok(Shape::List)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        while map.next_key::<Shape>()?.is_some() {
            map.next_value::<Shape>()?;
        }
        Ok(Shape::Other)
    }
}

/// The `metadata` of an object document, decoded as k8s-openapi decodes it (a later
/// `metadata` key replaces an earlier one, `null` is none); everything else is skipped.
/// The loader keeps deferred ResourceSlices as text with this metadata
/// ([`crate::LoadOptions::defer_slices`]).
#[derive(Debug, Default)]
pub(crate) struct MetadataOnly(pub(crate) Option<ObjectMeta>);

impl<'de> Deserialize<'de> for MetadataOnly {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MetadataOnlyVisitor)
    }
}

struct MetadataOnlyVisitor;

impl<'de> Visitor<'de> for MetadataOnlyVisitor {
    type Value = MetadataOnly;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetadataOnly, A::Error> {
        let mut metadata = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "metadata" {
                metadata = map.next_value::<Option<ObjectMeta>>()?;
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(MetadataOnly(metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::Value;

    fn head(text: &str) -> Head<'_> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn reads_dispatch_fields_like_a_value() {
        let h = head(r#"{"kind":"Pod","apiVersion":"v1","spec":{"a":[1,{"b":null}]}}"#);
        assert!(h.is_object && !h.has_items);
        assert_eq!(h.api_version.as_deref(), Some("v1"));
        assert_eq!(h.kind.as_deref(), Some("Pod"));
        // a later duplicate replaces an earlier one; non-strings count as absent
        let h = head(r#"{"kind":"Pod","kind":5,"apiVersion":"v1","apiVersion":"x"}"#);
        assert_eq!((h.api_version.as_deref(), h.kind), (Some("x"), None));
        assert!(head(r#"{"items":[]}"#).has_items);
        assert!(!head(r#"{"items":{}}"#).has_items);
        assert!(head("[1]").has_items);
        assert!(!head("7").is_object);
    }

    #[test]
    fn finds_slice_metadata_read_after_the_kind() {
        let slice = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","#;
        let text = format!(r#"{slice}"metadata": {{"name":"a"}} ,"spec":{{}}}}"#);
        assert_eq!(head(&text).slice_metadata, Some(r#"{"name":"a"}"#));
        // a later metadata replaces an earlier one
        let text = format!(r#"{slice}"metadata":{{"name":"a"}},"metadata":null}}"#);
        assert_eq!(head(&text).slice_metadata, Some("null"));
        // not found: metadata before the kind, another kind, a later one skipped
        let late =
            r#"{"metadata":{"name":"a"},"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice"}"#;
        assert_eq!(head(late).slice_metadata, None);
        let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#;
        assert_eq!(head(pod).slice_metadata, None);
        let skipped = format!(
            r#"{slice}"metadata":{{"name":"a"}},"kind":"Pod","metadata":{{"name":"b"}},"kind":"ResourceSlice"}}"#
        );
        assert_eq!(head(&skipped).slice_metadata, None);
        // a metadata that does not decode is still found (its decoding is the loader's)
        let text = format!(r#"{slice}"metadata":{{"name":7}}}}"#);
        assert_eq!(head(&text).slice_metadata, Some(r#"{"name":7}"#));
        // what a Value rejects is rejected inside a slice's metadata too
        for bad in [r#""\ud800""#, "1e999"] {
            let text = format!(r#"{slice}"metadata":{{"name":{bad}}}}}"#);
            assert!(serde_json::from_str::<Value>(&text).is_err(), "{bad}");
            assert!(serde_json::from_str::<Head>(&text).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_what_a_value_rejects() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        assert!(serde_json::from_str::<serde_json::Value>(&deep).is_err());
        assert!(serde_json::from_str::<Head>(&deep).is_err());
        for bad in [r#"{"a":"\ud800"}"#, r#"{"a":1e999}"#, r#"{"a":tru}"#] {
            assert!(
                serde_json::from_str::<serde_json::Value>(bad).is_err(),
                "{bad}"
            );
            assert!(serde_json::from_str::<Head>(bad).is_err(), "{bad}");
        }
    }
}

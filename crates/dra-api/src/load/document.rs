//! Generic document data with the positions the loader reports.
//!
//! A document is read into a `serde_json::Value`, as kubectl converts YAML to JSON
//! before the API server decodes it, so that numbers, booleans and strings are
//! typed the same way (`count: "5"` is a string, `name: 123` a number). Only the
//! positions needed later are kept: the document's line, the lines of the entries of
//! a top-level `items` list or array, and on demand ([`LineTree`]) the line of every
//! node, to place a typed-conversion error.

use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use serde_saphyr::Spanned;

/// One document: its data and the lines of the entries of its `items` (for a
/// `List`) or of its elements (for a top-level array).
#[derive(Debug)]
pub(crate) struct DocRoot {
    pub(crate) value: Value,
    pub(crate) item_lines: Vec<u32>,
}

fn line_of<T>(spanned: &Spanned<T>) -> u32 {
    u32::try_from(spanned.referenced.line()).unwrap_or(u32::MAX)
}

impl<'de> Deserialize<'de> for DocRoot {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RootVisitor { top_level: true })
    }
}

/// Builds a `Value`, recording the lines of list elements at the top level and of
/// the entries of a top-level `items` key.
struct RootVisitor {
    top_level: bool,
}

fn plain(value: Value) -> DocRoot {
    DocRoot {
        value,
        item_lines: Vec::new(),
    }
}

impl<'de> Visitor<'de> for RootVisitor {
    type Value = DocRoot;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML or JSON document")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<DocRoot, E> {
        Ok(plain(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<DocRoot, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<DocRoot, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<DocRoot, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DocRoot, E> {
        Ok(plain(Value::String(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<DocRoot, E> {
        Ok(plain(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<DocRoot, E> {
        Ok(plain(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<DocRoot, E> {
        Ok(plain(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<DocRoot, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DocRoot, A::Error> {
        if !self.top_level {
            return Value::deserialize(SeqAccessDeserializer::new(seq)).map(plain);
        }
        let mut values = Vec::new();
        let mut item_lines = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Value>>()? {
            item_lines.push(line_of(&item));
            values.push(item.value);
        }
        Ok(DocRoot {
            value: Value::Array(values),
            item_lines,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DocRoot, A::Error> {
        if !self.top_level {
            return Value::deserialize(MapAccessDeserializer::new(map)).map(plain);
        }
        let mut object = Map::new();
        let mut item_lines = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "items" {
                let items: DocRoot = map.next_value_seed(ItemsSeed)?;
                item_lines = items.item_lines;
                items.value
            } else {
                map.next_value::<Value>()?
            };
            object.insert(key, value);
        }
        Ok(DocRoot {
            value: Value::Object(object),
            item_lines,
        })
    }
}

/// The value of a top-level `items` key: element lines are recorded when it is a
/// sequence; anything else is plain data.
struct ItemsSeed;

impl<'de> de::DeserializeSeed<'de> for ItemsSeed {
    type Value = DocRoot;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<DocRoot, D::Error> {
        deserializer.deserialize_any(ItemsVisitor)
    }
}

struct ItemsVisitor;

impl<'de> Visitor<'de> for ItemsVisitor {
    type Value = DocRoot;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<DocRoot, E> {
        Ok(plain(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<DocRoot, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<DocRoot, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<DocRoot, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DocRoot, E> {
        Ok(plain(Value::String(v.to_string())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<DocRoot, E> {
        Ok(plain(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<DocRoot, E> {
        Ok(plain(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<DocRoot, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<DocRoot, A::Error> {
        RootVisitor { top_level: true }.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DocRoot, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(plain)
    }
}

/// The line of every node of a document, used only to place conversion errors.
#[derive(Debug)]
pub(crate) struct LineTree {
    pub(crate) line: u32,
    pub(crate) node: LineNode,
}

#[derive(Debug)]
pub(crate) enum LineNode {
    Map(Vec<(String, LineTree)>),
    Seq(Vec<LineTree>),
    Leaf,
}

impl<'de> Deserialize<'de> for LineNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LineNodeVisitor)
    }
}

impl<'de> Deserialize<'de> for LineTree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<LineNode>::deserialize(deserializer)?;
        Ok(LineTree {
            line: line_of(&spanned),
            node: spanned.value,
        })
    }
}

struct LineNodeVisitor;

impl<'de> Visitor<'de> for LineNodeVisitor {
    type Value = LineNode;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_unit<E: de::Error>(self) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_none<E: de::Error>(self) -> Result<LineNode, E> {
        Ok(LineNode::Leaf)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<LineNode, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LineNode, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<LineTree>()? {
            items.push(item);
        }
        Ok(LineNode::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LineNode, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            entries.push((key, map.next_value::<LineTree>()?));
        }
        Ok(LineNode::Map(entries))
    }
}

/// One step of a path into a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

impl LineTree {
    /// The line of the deepest node along `path` that exists.
    pub(crate) fn line_at(&self, path: &[Step]) -> u32 {
        let mut node = self;
        for step in path {
            let next = match (&node.node, step) {
                (LineNode::Map(entries), Step::Key(key)) => {
                    entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
                }
                (LineNode::Seq(items), Step::Index(i)) => items.get(*i),
                _ => None,
            };
            match next {
                Some(next) => node = next,
                None => break,
            }
        }
        node.line
    }
}

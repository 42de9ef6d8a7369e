//! The JSON `dra` prints: serde_json's pretty format (two-space indent, `": "` after keys),
//! byte for byte, from a serializer of our own ([`PrettyWriter`]).
//!
//! A simulation's document is as large as its input, millions of short lines of short
//! strings, written by the helper thread while the loop runs (`dra simulate`): its writing
//! is on the run's critical path once the loop is done. serde_json's serializer looks up
//! every byte of every string in its escape table and hands each string to its writer in
//! three writes (quote, text, quote), each a call and a check of the buffer's room; its
//! pretty formatter writes the indentation a level at a time. Here a string is checked eight
//! bytes at a time and copied in one go, each line break and its indentation is one copy, and
//! everything goes into one buffer that is handed to the writer when it fills. Numbers are
//! written by serde_json's own formatter, so they are its digits; what goes the rare ways
//! (escapes, map keys that are not strings, errors) does what serde_json does, and the
//! tests hold the two to the same bytes.

use std::fmt::Display;
use std::io::{self, Write};

use serde::Serialize;
use serde::ser::{self, Impossible};
use serde_json::ser::{CompactFormatter, Formatter};

/// What a [`PrettyWriter`] can fail with: its writer, or a value JSON cannot hold (as
/// serde_json would fail on it).
#[derive(Debug)]
pub enum JsonError {
    Io(io::Error),
    Message(String),
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Io(error) => error.fmt(f),
            JsonError::Message(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for JsonError {}

impl ser::Error for JsonError {
    fn custom<T: Display>(message: T) -> Self {
        JsonError::Message(message.to_string())
    }
}

impl From<io::Error> for JsonError {
    fn from(error: io::Error) -> Self {
        JsonError::Io(error)
    }
}

type Result<T = ()> = std::result::Result<T, JsonError>;

/// serde_json's message for a map key it cannot write.
fn key_must_be_a_string() -> JsonError {
    JsonError::Message("key must be a string".to_string())
}

/// The name serde_json's `RawValue` serialises under: text to write as it is, which this
/// writer does not take (no `dra` output holds one).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A line break followed by the indentation of [`INDENT_AT_ONCE`] levels.
const NEWLINE_AND_SPACES: &[u8; 1 + 2 * INDENT_AT_ONCE] = &{
    let mut bytes = [b' '; 1 + 2 * INDENT_AT_ONCE];
    bytes[0] = b'\n';
    bytes
};
/// Deeper documents are indented a level at a time beyond this.
const INDENT_AT_ONCE: usize = 32;

/// Serialises values as serde_json's pretty format into a buffer of `capacity` bytes, handed
/// to `writer` whenever it is seven eighths full (and by [`PrettyWriter::finish`]).
#[derive(Debug)]
pub struct PrettyWriter<W: Write> {
    buffer: Vec<u8>,
    /// The buffer is handed over once it holds this much (at the end of a value).
    hand_over_at: usize,
    writer: W,
    depth: usize,
    /// Whether the list or mapping open at `depth` has an entry yet.
    has_value: bool,
}

impl<W: Write> PrettyWriter<W> {
    pub fn with_capacity(capacity: usize, writer: W) -> PrettyWriter<W> {
        PrettyWriter {
            buffer: Vec::with_capacity(capacity),
            hand_over_at: capacity - capacity / 8,
            writer,
            depth: 0,
            has_value: false,
        }
    }

    /// Writes what is buffered and flushes the writer; gives the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.writer.write_all(&self.buffer)?;
        self.buffer.clear();
        self.writer.flush()?;
        Ok(self.writer)
    }

    /// Appends `bytes` as they are (text the caller knows to be JSON).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// A float as serde_json writes it: `null` where it is not finite.
    fn float(
        &mut self,
        finite: bool,
        write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result {
        if finite {
            write(&mut self.buffer)?;
        } else {
            self.raw(b"null");
        }
        Ok(())
    }

    fn hand_over_when_full(&mut self) -> io::Result<()> {
        if self.buffer.len() >= self.hand_over_at {
            self.writer.write_all(&self.buffer)?;
            self.buffer.clear();
        }
        Ok(())
    }

    fn new_line(&mut self) {
        let at_once = self.depth.min(INDENT_AT_ONCE);
        self.buffer
            .extend_from_slice(&NEWLINE_AND_SPACES[..1 + 2 * at_once]);
        for _ in at_once..self.depth {
            self.buffer.extend_from_slice(b"  ");
        }
    }

    fn open(&mut self, bracket: u8) {
        self.depth += 1;
        self.has_value = false;
        self.buffer.push(bracket);
    }

    /// Closes a list or a mapping, on a line of its own unless it was empty.
    fn close(&mut self, bracket: u8) {
        self.depth -= 1;
        if self.has_value {
            self.new_line();
        }
        self.buffer.push(bracket);
    }

    /// Starts an entry of a list or a mapping on a new line.
    fn entry(&mut self, first: bool) {
        if !first {
            self.buffer.push(b',');
        }
        self.new_line();
    }

    /// The end of an entry: the open list or mapping has one now.
    fn entry_done(&mut self) -> io::Result<()> {
        self.has_value = true;
        self.hand_over_when_full()
    }

    fn string(&mut self, text: &str) {
        let bytes = text.as_bytes();
        if needs_escape(bytes) {
            self.escaped_string(bytes);
        } else {
            self.buffer.reserve(bytes.len() + 2);
            self.buffer.push(b'"');
            self.buffer.extend_from_slice(bytes);
            self.buffer.push(b'"');
        }
    }

    /// A string with characters to escape, escaped as serde_json escapes them.
    fn escaped_string(&mut self, bytes: &[u8]) {
        const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
        self.buffer.push(b'"');
        let mut run_start = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            let short = match byte {
                b'"' => b'"',
                b'\\' => b'\\',
                0x08 => b'b',
                0x0c => b'f',
                b'\n' => b'n',
                b'\r' => b'r',
                b'\t' => b't',
                0..0x20 => b'u',
                _ => continue,
            };
            self.buffer.extend_from_slice(&bytes[run_start..at]);
            run_start = at + 1;
            if short == b'u' {
                self.buffer.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX_DIGITS[usize::from(byte >> 4)],
                    HEX_DIGITS[usize::from(byte & 0xf)],
                ]);
            } else {
                self.buffer.extend_from_slice(&[b'\\', short]);
            }
        }
        self.buffer.extend_from_slice(&bytes[run_start..]);
        self.buffer.push(b'"');
    }

    /// `"<key>": ` of a variant's mapping (externally tagged enums), opened before it.
    fn variant_key(&mut self, variant: &str) {
        self.open(b'{');
        self.entry(true);
        self.string(variant);
        self.buffer.extend_from_slice(b": ");
    }

    /// Closes what [`PrettyWriter::variant_key`] opened.
    fn variant_done(&mut self) {
        self.has_value = true;
        self.close(b'}');
    }
}

/// Whether `bytes` hold a byte JSON strings escape (a control character, `"` or `\`):
/// looked for eight bytes at a time, the last eight overlapping the ones before; a string
/// shorter than that (keys, mostly) byte by byte.
fn needs_escape(bytes: &[u8]) -> bool {
    fn word_at(bytes: &[u8], at: usize) -> u64 {
        let mut eight = [0; 8];
        eight.copy_from_slice(&bytes[at..at + 8]);
        u64::from_ne_bytes(eight)
    }
    let Some(last) = bytes.len().checked_sub(8) else {
        return bytes.iter().any(|&byte| ESCAPED[usize::from(byte)]);
    };
    let mut at = 0;
    while at < last {
        if word_needs_escape(word_at(bytes, at)) {
            return true;
        }
        at += 8;
    }
    word_needs_escape(word_at(bytes, last))
}

/// Whether a byte of `word` is one JSON strings escape.
fn word_needs_escape(word: u64) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH_BITS: u64 = u64::from_ne_bytes([0x80; 8]);
    // A byte below n (at most 0x80) borrows into a high bit it did not have when n is
    // subtracted; a byte equal to b is below 1 once xored with b.
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word;
    let control = below(word, 0x20);
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    (control | quote | backslash) & HIGH_BITS != 0
}

/// The bytes JSON strings escape.
static ESCAPED: [bool; 256] = {
    let mut escaped = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        escaped[byte] = true;
        byte += 1;
    }
    escaped[b'"' as usize] = true;
    escaped[b'\\' as usize] = true;
    escaped
};

/// `$then!` of serde's integer methods, each with its type and serde_json's formatter's method.
macro_rules! for_each_integer {
    ($then:ident) => {
        $then! {
            serialize_i8: i8 => write_i8,
            serialize_i16: i16 => write_i16,
            serialize_i32: i32 => write_i32,
            serialize_i64: i64 => write_i64,
            serialize_i128: i128 => write_i128,
            serialize_u8: u8 => write_u8,
            serialize_u16: u16 => write_u16,
            serialize_u32: u32 => write_u32,
            serialize_u64: u64 => write_u64,
            serialize_u128: u128 => write_u128,
        }
    };
}

/// `serialize_f32` and `serialize_f64` through the serializer's own `float`, with serde_json's
/// formatter's digits.
macro_rules! floats {
    () => {
        fn serialize_f32(self, value: f32) -> Result {
            self.float(value.is_finite(), |buffer| {
                CompactFormatter.write_f32(buffer, value)
            })
        }

        fn serialize_f64(self, value: f64) -> Result {
            self.float(value.is_finite(), |buffer| {
                CompactFormatter.write_f64(buffer, value)
            })
        }
    };
}

/// A number as serde_json's formatter writes it.
macro_rules! number {
    ($($method:ident: $type:ty => $write:ident,)*) => {$(
        fn $method(self, value: $type) -> Result {
            CompactFormatter.$write(&mut self.buffer, value)?;
            Ok(())
        }
    )*};
}

impl<'a, W: Write> ser::Serializer for &'a mut PrettyWriter<W> {
    type Ok = ();
    type Error = JsonError;
    type SerializeSeq = Compound<'a, W>;
    type SerializeTuple = Compound<'a, W>;
    type SerializeTupleStruct = Compound<'a, W>;
    type SerializeTupleVariant = Compound<'a, W>;
    type SerializeMap = Compound<'a, W>;
    type SerializeStruct = Compound<'a, W>;
    type SerializeStructVariant = Compound<'a, W>;

    fn serialize_bool(self, value: bool) -> Result {
        self.raw(if value { b"true" } else { b"false" });
        Ok(())
    }

    for_each_integer!(number);

    floats!();

    fn serialize_char(self, value: char) -> Result {
        self.string(value.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result {
        self.string(value);
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result {
        let mut list = ser::Serializer::serialize_seq(self, Some(value.len()))?;
        for byte in value {
            ser::SerializeSeq::serialize_element(&mut list, byte)?;
        }
        ser::SerializeSeq::end(list)
    }

    fn serialize_none(self) -> Result {
        self.raw(b"null");
        Ok(())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result {
        self.raw(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
    ) -> Result {
        self.string(variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result {
        if name == RAW_VALUE_TOKEN {
            return Err(JsonError::Message("raw JSON values are not written".into()));
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        self.variant_key(variant);
        value.serialize(&mut *self)?;
        self.variant_done();
        Ok(())
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a, W>> {
        Ok(Compound::open(self, b'[', len, false))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, W>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a, W>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a, W>> {
        self.variant_key(variant);
        Ok(Compound::open(self, b'[', Some(len), true))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'a, W>> {
        Ok(Compound::open(self, b'{', len, false))
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a, W>> {
        if name == RAW_VALUE_TOKEN {
            return Err(JsonError::Message("raw JSON values are not written".into()));
        }
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a, W>> {
        self.variant_key(variant);
        Ok(Compound::open(self, b'{', Some(len), true))
    }

    fn collect_str<T: ?Sized + Display>(self, value: &T) -> Result {
        self.string(&value.to_string());
        Ok(())
    }
}

/// Where a list or mapping stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Announced empty, and closed at once (as serde_json does for a length of zero).
    Empty,
    First,
    Rest,
}

/// A list or mapping being written.
#[derive(Debug)]
pub struct Compound<'a, W: Write> {
    writer: &'a mut PrettyWriter<W>,
    state: State,
    close: u8,
    /// Inside a variant's mapping, closed after it.
    in_variant: bool,
}

impl<'a, W: Write> Compound<'a, W> {
    fn open(
        writer: &'a mut PrettyWriter<W>,
        bracket: u8,
        len: Option<usize>,
        in_variant: bool,
    ) -> Compound<'a, W> {
        let close = if bracket == b'[' { b']' } else { b'}' };
        writer.open(bracket);
        let state = if len == Some(0) {
            writer.close(close);
            State::Empty
        } else {
            State::First
        };
        Compound {
            writer,
            state,
            close,
            in_variant,
        }
    }

    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
        self.writer.entry(self.state == State::First);
        self.state = State::Rest;
        value.serialize(&mut *self.writer)?;
        Ok(self.writer.entry_done()?)
    }

    fn key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result {
        self.writer.entry(self.state == State::First);
        self.state = State::Rest;
        key.serialize(MapKey(&mut *self.writer))?;
        self.writer.raw(b": ");
        Ok(())
    }

    fn value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
        value.serialize(&mut *self.writer)?;
        Ok(self.writer.entry_done()?)
    }

    fn end(self) -> Result {
        if self.state != State::Empty {
            self.writer.close(self.close);
        }
        if self.in_variant {
            self.writer.variant_done();
        }
        Ok(())
    }
}

/// The traits of lists serde has (sequences, tuples, tuple structs and variants): entries
/// one after the other.
macro_rules! list_of_entries {
    ($($trait:ident :: $method:ident,)*) => {$(
        impl<W: Write> ser::$trait for Compound<'_, W> {
            type Ok = ();
            type Error = JsonError;

            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
                self.element(value)
            }

            fn end(self) -> Result {
                Compound::end(self)
            }
        }
    )*};
}

list_of_entries! {
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
}

impl<W: Write> ser::SerializeMap for Compound<'_, W> {
    type Ok = ();
    type Error = JsonError;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result {
        self.key(key)
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
        self.value(value)
    }

    fn end(self) -> Result {
        Compound::end(self)
    }
}

/// The traits of structs serde has (structs and struct variants): named fields.
macro_rules! named_fields {
    ($($trait:ident,)*) => {$(
        impl<W: Write> ser::$trait for Compound<'_, W> {
            type Ok = ();
            type Error = JsonError;

            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result {
                self.key(key)?;
                self.value(value)
            }

            fn end(self) -> Result {
                Compound::end(self)
            }
        }
    )*};
}

named_fields! {
    SerializeStruct,
    SerializeStructVariant,
}

/// A map key: a string, or what serde_json writes as one (numbers and booleans in quotes).
struct MapKey<'a, W: Write>(&'a mut PrettyWriter<W>);

impl<W: Write> MapKey<'_, W> {
    /// A float key as serde_json writes it: quoted, and refused where it is not finite.
    fn float(self, finite: bool, write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> Result {
        if !finite {
            return Err(JsonError::Message("float key must be finite".into()));
        }
        self.0.buffer.push(b'"');
        write(&mut self.0.buffer)?;
        self.0.buffer.push(b'"');
        Ok(())
    }
}

/// A number key, quoted.
macro_rules! number_key {
    ($($method:ident: $type:ty => $write:ident,)*) => {$(
        fn $method(self, value: $type) -> Result {
            self.0.buffer.push(b'"');
            CompactFormatter.$write(&mut self.0.buffer, value)?;
            self.0.buffer.push(b'"');
            Ok(())
        }
    )*};
}

impl<W: Write> ser::Serializer for MapKey<'_, W> {
    type Ok = ();
    type Error = JsonError;
    type SerializeSeq = Impossible<(), JsonError>;
    type SerializeTuple = Impossible<(), JsonError>;
    type SerializeTupleStruct = Impossible<(), JsonError>;
    type SerializeTupleVariant = Impossible<(), JsonError>;
    type SerializeMap = Impossible<(), JsonError>;
    type SerializeStruct = Impossible<(), JsonError>;
    type SerializeStructVariant = Impossible<(), JsonError>;

    fn serialize_str(self, value: &str) -> Result {
        self.0.string(value);
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result {
        self.0.string(value.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_bool(self, value: bool) -> Result {
        self.0.raw(if value { b"\"true\"" } else { b"\"false\"" });
        Ok(())
    }

    for_each_integer!(number_key);

    floats!();

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
    ) -> Result {
        self.0.string(variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result {
        value.serialize(self)
    }

    fn serialize_bytes(self, _value: &[u8]) -> Result {
        Err(key_must_be_a_string())
    }

    fn serialize_none(self) -> Result {
        Err(key_must_be_a_string())
    }

    fn serialize_unit(self) -> Result {
        Err(key_must_be_a_string())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        Err(key_must_be_a_string())
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _variant_index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result {
        Err(key_must_be_a_string())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(key_must_be_a_string())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(key_must_be_a_string())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(key_must_be_a_string())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::*;

    fn ours<T: Serialize + ?Sized>(value: &T) -> String {
        let mut writer = PrettyWriter::with_capacity(16, Vec::new());
        value.serialize(&mut writer).expect("serialises");
        String::from_utf8(writer.finish().expect("writes")).expect("UTF-8")
    }

    fn same_as_serde_json<T: Serialize + ?Sized>(value: &T) {
        let theirs = serde_json::to_string_pretty(value).expect("serialises");
        assert_eq!(ours(value), theirs);
    }

    #[derive(Serialize)]
    enum Shapes {
        Unit,
        Newtype(u8),
        Tuple(i32, String),
        EmptyTuple(),
        Struct { a: Option<f64>, b: Vec<u8> },
        EmptyStruct {},
    }

    #[derive(Serialize)]
    struct Everything {
        flag: bool,
        small: i8,
        big: u128,
        negative: i128,
        float: f32,
        double: f64,
        not_a_number: f64,
        letter: char,
        #[serde(with = "serde_bytes_as_slice")]
        bytes: Vec<u8>,
        nothing: Option<String>,
        unit: (),
        shapes: Vec<Shapes>,
        numbered: BTreeMap<i64, bool>,
        flags: BTreeMap<bool, ()>,
        tuple: (u8, &'static str, [u16; 0]),
    }

    mod serde_bytes_as_slice {
        pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(bytes)
        }
    }

    /// Every kind of value serde knows, and strings with every byte JSON escapes (and some it
    /// does not) at every position of an eight-byte word, come out as serde_json writes them.
    #[test]
    fn the_pretty_format_is_serde_jsons_byte_for_byte() {
        let everything = Everything {
            flag: true,
            small: -8,
            big: u128::MAX,
            negative: i128::MIN,
            float: 0.1,
            double: -1.5e300,
            not_a_number: f64::NAN,
            letter: '"',
            bytes: vec![0, 255, 7],
            nothing: None,
            unit: (),
            shapes: vec![
                Shapes::Unit,
                Shapes::Newtype(3),
                Shapes::Tuple(-1, "t".into()),
                Shapes::EmptyTuple(),
                Shapes::Struct {
                    a: Some(2.0),
                    b: vec![],
                },
                Shapes::EmptyStruct {},
            ],
            numbered: BTreeMap::from([(-3, true), (40, false)]),
            flags: BTreeMap::from([(false, ()), (true, ())]),
            tuple: (1, "x", []),
        };
        same_as_serde_json(&everything);

        let mut deep = serde_json::json!({"leaf": [1, {"x": null}], "empty": {}, "list": []});
        for level in 0..(INDENT_AT_ONCE + 5) {
            deep = if level % 2 == 0 {
                serde_json::json!({"k": deep, "n": level, "s": "a \"quoted\"\nline"})
            } else {
                serde_json::json!([deep, [], {}, true, 1.5, u64::MAX, i64::MIN])
            };
        }
        same_as_serde_json(&deep);

        let specials: Vec<u8> = (0u8..0x20).chain(*b"\"\\/\x7f").collect();
        let mut strings = Vec::new();
        for &special in &specials {
            for at in 0..17 {
                let mut text = "abcdefghijklmnopq-é".to_string().into_bytes();
                text.insert(at, special);
                strings.push(String::from_utf8(text).expect("UTF-8"));
            }
        }
        strings.push(String::new());
        strings.push("plain ascii of some length, no escapes at all".into());
        strings.push("日本語のテキスト".into());
        same_as_serde_json(&strings);
        let keyed: BTreeMap<&str, &str> =
            strings.iter().map(|s| (s.as_str(), s.as_str())).collect();
        same_as_serde_json(&keyed);
    }

    /// What serde_json refuses, this writer refuses: keys that are not strings, numbers or
    /// booleans, and float keys that are not finite.
    #[test]
    fn keys_serde_json_refuses_are_refused() {
        struct KeyedBy<K>(K);
        impl<K: Serialize> Serialize for KeyedBy<K> {
            fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                use ser::SerializeMap;
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(&self.0, &1)?;
                map.end()
            }
        }
        fn refused<K: Serialize>(key: K) {
            let value = KeyedBy(key);
            assert!(serde_json::to_string_pretty(&value).is_err());
            let mut writer = PrettyWriter::with_capacity(16, Vec::new());
            assert!(value.serialize(&mut writer).is_err());
        }
        refused(vec![1]);
        refused(f64::NAN);
        refused(None::<u8>);
        refused(());
        // And what it takes, it writes as serde_json does.
        same_as_serde_json(&KeyedBy(1.5f64));
        same_as_serde_json(&KeyedBy('k'));
        same_as_serde_json(&KeyedBy(Some("some")));
        same_as_serde_json(&KeyedBy(-7i128));
    }

    /// The buffer goes to the writer when it fills and at the end; the text is the same
    /// whatever the buffer's size.
    #[test]
    fn the_buffer_is_handed_over_as_it_fills() {
        struct Counting(Vec<u8>, usize);
        impl Write for Counting {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.1 += 1;
                self.0.extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let value: Vec<BTreeMap<String, u32>> = (0..200)
            .map(|i| BTreeMap::from([(format!("key-{i}"), i)]))
            .collect();
        let mut writer = PrettyWriter::with_capacity(1024, Counting(Vec::new(), 0));
        value.serialize(&mut writer).expect("serialises");
        let counting = writer.finish().expect("writes");
        let expected = serde_json::to_string_pretty(&value).expect("serialises");
        assert_eq!(String::from_utf8(counting.0).expect("UTF-8"), expected);
        assert!(
            counting.1 >= expected.len() / 1024,
            "{} writes for {} bytes",
            counting.1,
            expected.len()
        );
        assert_eq!(ours(&value), expected);
    }
}

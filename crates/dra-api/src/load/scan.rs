//! The [`Head`] of a JSON object document in one pass over its bytes, for the JSON that
//! Kubernetes objects are made of.
//!
//! The serde route to a head ([`Head`]'s `Deserialize`) goes through a visitor call per
//! node and was a fifth of a small run's instructions. This scanner reads the same text
//! byte by byte, but only within a subset of JSON where acceptance is a matter of grammar
//! alone:
//!
//! - strings without `\u` escapes or control characters (a `\u` escape may encode a lone
//!   surrogate, which `serde_json::Value` rejects);
//! - numbers that are integers of at most [`MAX_INTEGER_DIGITS`] digits (a fraction, an
//!   exponent or a longer integer may fall outside `f64`, which `Value` rejects);
//! - at most [`MAX_DEPTH`] nested lists and mappings (`Value`'s limit is 127).
//!
//! On anything else, grammar errors included, [`scan_object`] answers `None` and the caller
//! asks serde, which decides and reports as before. Where the scanner does answer, the
//! answer is the serde head's and the document ends at the same byte (the tests compare the
//! two on generated and mutated documents).

use std::ops::Range;

use super::head::Head;

/// Deepest nesting the scanner follows; deeper documents are left to serde.
const MAX_DEPTH: usize = 64;

/// Longest integer the scanner accepts: any integer of 18 digits fits an `i64`.
const MAX_INTEGER_DIGITS: usize = 18;

/// The head of the object document at the start of `text` and the offset just after its
/// closing brace; `None` when the document is not within the subset (see the module
/// overview) or is not a well-formed object.
pub(crate) fn scan_object(text: &str) -> Option<(Head<'_>, usize)> {
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let head = scanner.top_object(text)?;
    Some((head, scanner.pos))
}

/// JSON's white space, the only kind serde_json skips between tokens and between the values
/// of a stream.
pub(crate) fn is_json_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\t' | b'\r')
}

/// What a scanned value was, as far as the head cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A string: the byte range of its contents, and whether it holds an escape (its
    /// decoded text then differs from the range).
    String {
        start: usize,
        end: usize,
        escaped: bool,
    },
    List,
    Other,
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> Option<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(is_json_whitespace) {
            self.pos += 1;
        }
    }

    /// The mapping at `pos`, the document's root, with the fields [`Head`] keeps: the last
    /// string `apiVersion` and `kind`, whether the last `items` is a list, and a
    /// ResourceSlice's `metadata` text when that key follows `apiVersion` and `kind`.
    fn top_object(&mut self, text: &'a str) -> Option<Head<'a>> {
        let mut head = Head {
            is_object: true,
            ..Head::default()
        };
        self.object(1, |key, value, value_text| {
            // A key with an escape decodes to text with a quote, a backslash, a slash or a
            // control character in it: none of the keys below.
            let key = match key {
                Kind::String {
                    start,
                    end,
                    escaped: false,
                } => &text[start..end],
                _ => "",
            };
            match key {
                "apiVersion" => head.api_version = plain_string(text, value)?,
                "kind" => head.kind = plain_string(text, value)?,
                "items" => head.has_items = value == Kind::List,
                "metadata" if head.names_a_slice() => {
                    head.slice_metadata = Some(&text[value_text]);
                }
                "metadata" => head.slice_metadata = None,
                _ => {}
            }
            Some(())
        })?;
        Some(head)
    }

    /// The opening `open` of a container `depth` deep, and the white space after it; `true`
    /// when `close` follows at once (an empty container, read to its end).
    fn open(&mut self, depth: usize, open: u8, close: u8) -> Option<bool> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(open)?;
        self.skip_whitespace();
        Some(self.eat(close).is_some())
    }

    /// After a member of a mapping or list: white space, then a comma (`true`, more to come)
    /// or the closing `close` (`false`).
    fn after_member(&mut self, close: u8) -> Option<bool> {
        self.skip_whitespace();
        match self.peek()? {
            b',' => {
                self.pos += 1;
                self.skip_whitespace();
                Some(true)
            }
            byte if byte == close => {
                self.pos += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Any value at `pos`, nested `depth` containers deep.
    fn value(&mut self, depth: usize) -> Option<Kind> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' => self
                .object(depth + 1, |_, _, _| Some(()))
                .map(|()| Kind::Other),
            b'[' => self.list(depth + 1).map(|()| Kind::List),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    /// The mapping at `pos`, `depth` containers deep, handing each member to `member`: its
    /// key, its value and the value's byte range (`None` from `member` gives up).
    fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(Kind, Kind, Range<usize>) -> Option<()>,
    ) -> Option<()> {
        if self.open(depth, b'{', b'}')? {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.skip_whitespace();
            self.eat(b':')?;
            self.skip_whitespace();
            let value_start = self.pos;
            let value = self.value(depth)?;
            member(key, value, value_start..self.pos)?;
            if !self.after_member(b'}')? {
                return Some(());
            }
        }
    }

    fn list(&mut self, depth: usize) -> Option<()> {
        if self.open(depth, b'[', b']')? {
            return Some(());
        }
        loop {
            self.value(depth)?;
            if !self.after_member(b']')? {
                return Some(());
            }
        }
    }

    /// A string without `\u` escapes or control characters.
    fn string(&mut self) -> Option<Kind> {
        self.eat(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.pos += find_string_stop(&self.bytes[self.pos..])?;
            match self.bytes[self.pos] {
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    return Some(Kind::String {
                        start,
                        end,
                        escaped,
                    });
                }
                b'\\' => match self.bytes.get(self.pos + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        self.pos += 2;
                        escaped = true;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<Kind> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Some(Kind::Other)
        } else {
            None
        }
    }

    /// An integer of at most [`MAX_INTEGER_DIGITS`] digits, without leading zeros.
    fn integer(&mut self) -> Option<Kind> {
        let _ = self.eat(b'-');
        let digits = self.pos;
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.peek() {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        // A fraction, an exponent or a digit after a leading zero: not in the subset.
        if self.pos - digits > MAX_INTEGER_DIGITS
            || matches!(self.peek(), Some(b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            return None;
        }
        Some(Kind::Other)
    }
}

/// The offset of the first quote, backslash or control character in `bytes`: where a
/// string's plain run of text stops.
///
/// Eight bytes at a time (strings are most of a document's bytes, and a byte-wise loop made
/// this scan cost more than serde's): `x.wrapping_sub(ONES * n) & !x & HIGH_BITS` marks the
/// bytes of `x` below `n`; the lowest mark is always exact (a borrow only runs upwards).
fn find_string_stop(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH_BITS: u64 = ONES << 7;
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in words.by_ref() {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let marks = (below(word, 0x20)
            | below(word ^ (ONES * u64::from(b'"')), 1)
            | below(word ^ (ONES * u64::from(b'\\')), 1))
            & HIGH_BITS;
        if marks != 0 {
            return Some(offset + marks.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    let tail = words.remainder();
    let stop = tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(offset + stop)
}

/// The value of `apiVersion` or `kind` as [`Head`] keeps it: the text of a string, nothing
/// for any other value, and `None` (outside the subset) for a string with an escape, whose
/// decoded text the scanner does not build.
fn plain_string(text: &str, value: Kind) -> Option<Option<String>> {
    match value {
        Kind::String {
            start,
            end,
            escaped: false,
        } => Some(Some(text[start..end].to_string())),
        Kind::String { escaped: true, .. } => None,
        Kind::List | Kind::Other => Some(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// The serde head of the document at the start of `text` and where it ends, read the
    /// way the loader reads a stream.
    fn serde_head(text: &str) -> Option<(Head<'_>, usize)> {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Head>();
        let head = stream.next()?.ok()?;
        Some((head, stream.byte_offset()))
    }

    /// Whenever the scanner answers, serde answers the same.
    fn agrees(text: &str) -> Result<(), TestCaseError> {
        if let Some(scanned) = scan_object(text) {
            prop_assert_eq!(Some(scanned), serde_head(text), "{}", text);
        }
        Ok(())
    }

    #[test]
    fn reads_what_serde_reads() {
        let slice = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","#;
        let cases = [
            r#"{"kind":"Pod","apiVersion":"v1","spec":{"a":[1,{"b":null}],"c":-0}}"#.to_string(),
            r#"{"kind":"Pod","kind":5,"apiVersion":"v1","apiVersion":"x"}"#.to_string(),
            r#" {"items":[]}"#.trim().to_string(),
            r#"{"items":{}}"#.to_string(),
            "{}".to_string(),
            "{ \"a\" :\t[ ] ,\r\n\"b\":{ } }  {\"next\":1}".to_string(),
            format!(r#"{slice}"metadata": {{"name":"a"}} ,"spec":{{}}}}"#),
            format!(r#"{slice}"metadata":{{"name":"a"}},"metadata":null}}"#),
            format!(r#"{slice}"metadata":{{"name":"a"}},"kind":"Pod","metadata":{{}}}}"#),
            r#"{"metadata":{"name":"a"},"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice"}"#
                .to_string(),
            r#"{"a\"b":"c\\d\/e\n","é":"ü"}"#.to_string(),
        ];
        for text in &cases {
            let scanned = scan_object(text);
            assert!(scanned.is_some(), "{text}");
            assert_eq!(scanned, serde_head(text), "{text}");
        }
    }

    #[test]
    fn finds_where_a_plain_run_of_string_text_stops() {
        // every stop byte at every position of runs longer than a word, and none at all
        for len in 0..20 {
            let plain = "aé~\u{7f}".repeat(len).into_bytes();
            assert_eq!(find_string_stop(&plain), None);
            for at in 0..=plain.len() {
                for stop in [b'"', b'\\', 0x00, 0x1f] {
                    let mut text = plain.clone();
                    text.insert(at, stop);
                    // a later stop of another kind does not hide the first
                    text.push(b'"');
                    assert_eq!(find_string_stop(&text), Some(at), "{stop} at {at}");
                }
            }
        }
    }

    #[test]
    fn leaves_what_is_outside_the_subset_to_serde() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        let outside = [
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":1e999}"#,
            r#"{"a":1.5}"#,
            r#"{"a":12345678901234567890}"#,
            r#"{"a":01}"#,
            r#"{"a":tru}"#,
            r#"{"a":1,}"#,
            r#"{"a":[1,]}"#,
            r#"{"a" 1}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"kind":"P\/d"}"#,
            r#"{"a":"\x"}"#,
            deep.as_str(),
        ];
        for text in outside {
            assert_eq!(scan_object(text), None, "{text}");
        }
    }

    /// Pieces of JSON text, mostly within the subset, some outside it or invalid.
    fn scalar() -> impl Strategy<Value = String> {
        let within = prop::sample::select(vec![
            "0",
            "-0",
            "7",
            "-12",
            "123456789012345678",
            "true",
            "false",
            "null",
            r#""""#,
            r#""v1""#,
            r#""Pod""#,
            r#""ResourceSlice""#,
            r#""resource.k8s.io/v1""#,
            r#""a\"b""#,
            r#""é""#,
        ]);
        let outside = prop::sample::select(vec![
            "1234567890123456789",
            "01",
            "1.5",
            "1e999",
            "-",
            "nul",
            "tru",
            r#""\u0041""#,
            r#""\ud800""#,
            r#""\x""#,
            "\"\t\"",
        ]);
        prop_oneof![6 => within, 1 => outside].prop_map(str::to_string)
    }

    fn key() -> impl Strategy<Value = String> {
        let within =
            prop::sample::select(vec!["apiVersion", "kind", "items", "metadata", "spec", "a"]);
        let outside = prop::sample::select(vec!["kin\\u0064", "a\\\""]);
        prop_oneof![8 => within, 1 => outside].prop_map(|key| format!("\"{key}\""))
    }

    fn space() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["", "", "", "", " ", "\n", "\t ", "\r\n", "\u{a0}"])
    }

    fn value() -> impl Strategy<Value = String> {
        scalar().prop_recursive(4, 24, 4, |inner| {
            let member = (space(), key(), space(), inner.clone(), space());
            prop_oneof![
                prop::collection::vec(member, 0..5).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(a, k, b, v, c)| format!("{a}{k}{b}:{v}{c}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
                prop::collection::vec((space(), inner), 0..4).prop_map(|items| {
                    let items: Vec<String> =
                        items.into_iter().map(|(s, v)| format!("{s}{v}")).collect();
                    format!("[{}]", items.join(","))
                }),
            ]
        })
    }

    /// An object document, possibly cut, extended or with one byte replaced.
    fn document() -> impl Strategy<Value = String> {
        let members = prop::collection::vec((key(), value()), 0..6);
        (
            members,
            0..8usize,
            any::<prop::sample::Index>(),
            any::<u8>(),
        )
            .prop_map(|(members, mutation, at, byte)| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect();
                let mut text = format!("{{{}}}", members.join(","));
                let at = at.index(text.len());
                match mutation {
                    0 if text.is_char_boundary(at) => text.truncate(at),
                    1 => text.push_str(" {}"),
                    2 if byte.is_ascii() && text.is_char_boundary(at) => {
                        text.insert(at, char::from(byte));
                    }
                    _ => {}
                }
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn answers_only_what_serde_answers(text in document()) {
            agrees(&text)?;
        }
    }

    /// The comparison above is not vacuous: the scanner answers for a good part of the
    /// generated documents, mutated ones among them.
    #[test]
    fn the_scanner_answers_for_many_generated_documents() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;

        let mut runner = TestRunner::deterministic();
        let strategy = document();
        let total = 3000;
        let mut answered = 0;
        for _ in 0..total {
            let text = strategy.new_tree(&mut runner).unwrap().current();
            if scan_object(&text).is_some() {
                answered += 1;
            }
        }
        assert!(answered * 5 > total, "{answered} of {total}");
    }
}

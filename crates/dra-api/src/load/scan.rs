//! The [`Head`] of a JSON object document in one pass over its bytes, for the JSON that
//! Kubernetes objects are made of.
//!
//! The serde route to a head ([`Head`]'s `Deserialize`) goes through a visitor call per
//! node and was a fifth of a small run's instructions. This scanner reads the same text
//! byte by byte with [`Cursor`], within the subset of JSON where acceptance is a matter of
//! grammar alone (see [`dra_types::json_subset`]: no `\u` escapes, integers only, limited
//! nesting).
//!
//! On anything else, grammar errors included, [`scan_object`] answers `None` and the caller
//! asks serde, which decides and reports as before. Where the scanner does answer, the
//! answer is the serde head's and the document ends at the same byte (the tests compare the
//! two on generated and mutated documents).

use dra_types::json_subset::{Cursor, Token};

use super::head::Head;

pub(crate) use dra_types::json_subset::is_json_whitespace;

/// The head of the object document at the start of `text` and the offset just after its
/// closing brace; `None` when the document is not within the subset (see the module
/// overview) or is not a well-formed object.
///
/// With `skip_values`, the value of every key but `apiVersion`, `kind` and `items` is only
/// skipped, not checked ([`Cursor::skip_value_unchecked`]): for a loader that reads every
/// document's text again with a checking parser (serde for most kinds, the slice reader
/// for deferred ResourceSlices) and goes the usual way when that finds an error. On valid
/// JSON the answer is the same as without; the head may then also be given for a document
/// serde refuses, or one outside the subset in a value the head does not look at.
pub(crate) fn scan_object(text: &str, skip_values: bool) -> Option<(Head<'_>, usize)> {
    let mut cursor = Cursor::new(text);
    let (head, _) = top_object(&mut cursor, skip_values, None)?;
    Some((head, cursor.pos()))
}

/// [`scan_object`] skipping values, except that a ResourceSlice's `spec`, or a Pod's or
/// Node's first member after its `apiVersion` and `kind`, that runs to the end of its line
/// is not read at all: the document is taken to end with the line, at its last closing
/// brace (`true` in the answer then). A line of compact JSON is a whole document in every
/// stream `kubectl` or `dra gen` writes, and skipping the spec's bytes was most of the
/// loader's scan. The end is a guess that only the document's full reading confirms. For a
/// slice, that is `dra_alloc::SliceInput::JsonToLineEnd`: a document that goes on past its
/// line, or one with members after `spec` (whose head the scan did not read), is answered
/// as undecodable there, and the caller loads the input again without deferring slices. A
/// pod or node is read in full at once (the common-shape reader, else serde), and where its
/// text is not one whole document the chunk is read the generic way.
/// A cut that is not a document's end cannot make the rest of the stream read as
/// documents either: what follows it closes a bracket it never opened.
///
/// `breaks` carries the line break last found from one call to the next: the texts of a
/// stream's documents are the rest of one chunk each (they share its end), and a line holding
/// many documents was otherwise searched to its end again from each of them.
pub(crate) fn scan_object_to_line_end<'a>(
    text: &'a str,
    breaks: &mut LineBreaks,
) -> Option<(Head<'a>, usize, bool)> {
    let mut cursor = Cursor::new(text);
    let (head, cut) = top_object(&mut cursor, true, Some(breaks))?;
    Some((head, cursor.pos(), cut))
}

/// The last search for a line break in texts that share their end: where it started and
/// the break (or the end) it found, as distances from that end. No break lies between them,
/// so the break answers any later search that starts between them too.
#[derive(Debug, Default)]
pub(crate) struct LineBreaks {
    searched: Option<(usize, usize)>,
}

impl LineBreaks {
    /// The offset in `bytes` of the first line break at or after `from`, or `bytes.len()`.
    fn line_end(&mut self, bytes: &[u8], from: usize) -> usize {
        let from_end = bytes.len() - from;
        match self.searched {
            Some((start, found)) if found <= from_end && from_end <= start => bytes.len() - found,
            _ => {
                let end = line_break(&bytes[from..]).map_or(bytes.len(), |at| from + at);
                self.searched = Some((from_end, bytes.len() - end));
                end
            }
        }
    }
}

/// The offset of the first line break in `bytes`.
///
/// On x86-64 with the `memchr` crate's SSE2 searcher, which x86-64 always has: its
/// general `memchr` picks AVX2 at its first call, and the standard library's check of the
/// CPU's features behind it runs some ten `cpuid` instructions, each a trap to the
/// hypervisor on a virtual machine (7.5 µs each on ours): about 1% of a small simulation,
/// for one search per document.
fn line_break(bytes: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(searcher) = memchr::arch::x86_64::sse2::memchr::One::new(b'\n') {
        return searcher.find(bytes);
    }
    memchr::memchr(b'\n', bytes)
}

/// Where the document's closing brace is if the value at `from`, an object, closes the
/// document at the end of the line: the line's last two bytes other than white space are
/// both `}` (the value's and the document's).
fn closing_brace_at_line_end(text: &str, from: usize, breaks: &mut LineBreaks) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(from) != Some(&b'{') {
        return None;
    }
    let line = &bytes[from..breaks.line_end(bytes, from)];
    let last = line.iter().rposition(|&b| !is_json_whitespace(b))?;
    let before = line[..last].iter().rposition(|&b| !is_json_whitespace(b))?;
    (line[last] == b'}' && line[before] == b'}').then_some(from + last)
}

/// The mapping at the cursor, the document's root, with the fields [`Head`] keeps: the last
/// string `apiVersion` and `kind`, whether the last `items` is a list, and a ResourceSlice's
/// `metadata` text when that key follows `apiVersion` and `kind`.
///
/// With `cut_at_line_end`, a ResourceSlice's `spec`, or a Pod's or Node's member after
/// `kind`, may end the document at its line's end (see [`scan_object_to_line_end`]); `true`
/// in the answer when it did.
fn top_object<'a>(
    cursor: &mut Cursor<'a>,
    skip_values: bool,
    mut cut_at_line_end: Option<&mut LineBreaks>,
) -> Option<(Head<'a>, bool)> {
    let mut head = Head {
        is_object: true,
        ..Head::default()
    };
    let mut cut = false;
    cursor.members(1, |cursor, key| {
        // A key with an escape decodes to text with a quote, a backslash, a slash or a
        // control character in it: none of the keys below.
        let key = cursor.plain_str(key).unwrap_or_default();
        let start = cursor.pos();
        let value = match key {
            "apiVersion" | "kind" | "items" => cursor.value(1)?,
            _ if cut_at_line_end.is_some()
                && ((key == "spec" && head.names_a_slice()) || head.names_read_in_full()) =>
            {
                let breaks = cut_at_line_end.as_deref_mut()?;
                match closing_brace_at_line_end(cursor.text(), start, breaks) {
                    // `members` reads the brace and ends the object there.
                    Some(brace) => {
                        cursor.set_pos(brace);
                        cut = true;
                    }
                    None => cursor.skip_value_unchecked()?,
                }
                Token::Null
            }
            _ if skip_values => {
                cursor.skip_value_unchecked()?;
                Token::Null
            }
            _ => cursor.value(1)?,
        };
        match key {
            "apiVersion" => head.api_version = plain_string(cursor, value)?,
            "kind" => head.kind = plain_string(cursor, value)?,
            "items" => head.has_items = value == Token::List,
            "metadata" if head.names_a_slice() => {
                head.slice_metadata = Some(cursor.slice(start..cursor.pos()));
            }
            "metadata" => head.slice_metadata = None,
            _ => {}
        }
        Some(())
    })?;
    Some((head, cut))
}

/// The value of `apiVersion` or `kind` as [`Head`] keeps it: the text of a string, nothing
/// for any other value, and `None` (outside the subset) for a string with an escape, whose
/// decoded text the scanner does not build.
fn plain_string(cursor: &Cursor<'_>, value: Token) -> Option<Option<String>> {
    match value {
        Token::String { escaped: true, .. } => None,
        Token::String { .. } => Some(cursor.plain_str(value).map(str::to_string)),
        _ => Some(None),
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

    /// Whenever the scanner answers, serde answers the same; with values only skipped, the
    /// scanner answers the same where it answered checking, and wherever it answers for a
    /// document that is valid JSON, serde answers the same (what the loader relies on: it
    /// reads every document's text again, checked).
    fn agrees(text: &str) -> Result<(), TestCaseError> {
        let scanned = scan_object(text, false);
        if scanned.is_some() {
            prop_assert_eq!(&scanned, &serde_head(text), "{}", text);
            prop_assert_eq!(&scan_object(text, true), &scanned, "{}", text);
        }
        if let Some((head, end)) = scan_object(text, true)
            && serde_json::from_str::<serde_json::Value>(&text[..end]).is_ok()
        {
            prop_assert_eq!(Some((head, end)), serde_head(text), "{}", text);
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
            let scanned = scan_object(text, false);
            assert!(scanned.is_some(), "{text}");
            assert_eq!(scanned, serde_head(text), "{text}");
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
            assert_eq!(scan_object(text, false), None, "{text}");
        }
    }

    #[test]
    fn skipping_values_answers_past_what_it_does_not_read() {
        let cases = [
            r#"{"kind":"Pod","spec":{"a":1.5,"b":"\u0041"},"apiVersion":"v1"}"#,
            r#"{"metadata":{"x":[1e9,-0.5]},"kind":"Node","status":{"s":"\u00e9"}}"#,
        ];
        for text in cases {
            assert_eq!(scan_object(text, false), None, "{text}");
            let skipped = scan_object(text, true);
            assert!(skipped.is_some(), "{text}");
            assert_eq!(skipped, serde_head(text), "{text}");
        }
        // The keys the head reads are still read, and checked.
        for text in [r#"{"kind":"P\/d"}"#, r#"{"kind":"Pod","items":[1,]}"#] {
            assert_eq!(scan_object(text, true), None, "{text}");
        }
    }

    /// A ResourceSlice whose `spec` closes the document at the end of its line is cut there
    /// without reading the spec; the head and the end are the skipping scan's when the
    /// document is the line. Other documents, and slices whose line ends otherwise, are
    /// scanned as before.
    #[test]
    fn a_slice_ending_with_its_line_is_cut_there() {
        let slice = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"a"},"spec":{"devices":[{"name":"d","attributes":{"x":{"string":"}}"}}}]}}"#;
        let next = r#"{"kind":"Pod","spec":{}}"#;
        for text in [
            format!("{slice}\n{next}"),
            format!("{slice} \r\n{next}"),
            slice.to_string(),
        ] {
            let (head, end, cut) =
                scan_object_to_line_end(&text, &mut LineBreaks::default()).expect("scanned");
            assert!(cut, "{text}");
            assert_eq!(end, slice.len());
            assert_eq!(Some((head, end)), scan_object(&text, true), "{text}");
        }
        // A v1 pod or node is cut at its first member after `kind`.
        for other in [
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[]}}"#,
            r#"{"kind":"Node","apiVersion":"v1","metadata":{"name":"n"},"status":{"capacity":{}}}"#,
        ] {
            let text = format!("{other}\n{next}");
            let (head, end, cut) =
                scan_object_to_line_end(&text, &mut LineBreaks::default()).expect("scanned");
            assert!(cut, "{text}");
            assert_eq!(end, other.len());
            assert_eq!(Some((head, end)), scan_object(&text, true), "{text}");
        }
        let pretty = "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\n\"spec\": {\n\"devices\": []\n}\n}";
        for text in [
            pretty.to_string(),
            format!("{next}\n{slice}"),
            slice.replacen("ResourceSlice", "Pod", 1),
            slice.replacen(r#""spec":{"#, r#""spec":null,"x":{"#, 1),
            format!("{slice}\"x\""),
        ] {
            let (head, end, cut) =
                scan_object_to_line_end(&text, &mut LineBreaks::default()).expect("scanned");
            assert!(!cut, "{text}");
            assert_eq!(Some((head, end)), scan_object(&text, true), "{text}");
        }
        // The cut is a guess that only reading the spec confirms: a document going on past
        // its line ends elsewhere, and a line may hold more than one document.
        let going_on = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","spec":{"a":{}}
            ,"x":{}}"#;
        let skipped_end = scan_object(going_on, true).expect("scanned").1;
        let (_, end, cut) =
            scan_object_to_line_end(going_on, &mut LineBreaks::default()).expect("scanned");
        assert!(cut && end < skipped_end, "{going_on}");
        let two = format!("{slice} {next}");
        let (_, end, cut) =
            scan_object_to_line_end(&two, &mut LineBreaks::default()).expect("scanned");
        assert!(cut && end == two.len(), "{two}");
    }

    /// The line break kept from one search answers as a fresh search would, for texts that
    /// share their end, at increasing positions (how the loader asks).
    #[test]
    fn line_breaks_kept_answer_as_searched_afresh() {
        let text = "ab\ncd ef\n\ngh";
        let mut breaks = LineBreaks::default();
        for start in 0..text.len() {
            let rest = &text.as_bytes()[start..];
            for from in [0, rest.len() / 2] {
                let fresh = LineBreaks::default().line_end(rest, from);
                assert_eq!(breaks.line_end(rest, from), fresh, "{start} {from}");
            }
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
            if scan_object(&text, false).is_some() {
                answered += 1;
            }
        }
        assert!(answered * 5 > total, "{answered} of {total}");
    }
}

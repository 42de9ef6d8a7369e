//! A cursor that reads JSON text byte by byte, within a subset of JSON where acceptance is a
//! matter of grammar alone, so that a reader built on it can agree exactly with `serde_json`
//! on what it accepts:
//!
//! - strings without `\u` escapes or control characters (a `\u` escape may encode a lone
//!   surrogate, which `serde_json::Value` rejects);
//! - numbers that are integers of at most [`MAX_INTEGER_DIGITS`] digits (a fraction, an
//!   exponent or a longer integer may fall outside `f64` or `i64`, where types disagree);
//! - at most [`MAX_DEPTH`] nested lists and mappings (serde_json's limit is 128, so any part
//!   of an accepted document also decodes on its own).
//!
//! Every method answers `None` on anything else, grammar errors included: the caller then
//! asks serde, which decides and reports. Shared by the loader's first look at a document
//! and the index's reading of ResourceSlice text, the two places where serde's visitor per
//! node was most of a run's instructions.

use std::ops::Range;

/// Deepest nesting the cursor follows; deeper documents are left to serde.
pub const MAX_DEPTH: usize = 64;

/// Longest integer the cursor accepts: any integer of 18 digits fits an `i64`.
pub const MAX_INTEGER_DIGITS: usize = 18;

/// JSON's white space, the only kind serde_json skips between tokens and between the values
/// of a stream.
pub fn is_json_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\t' | b'\r')
}

/// A value read by the cursor, with the byte ranges a reader needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// A string: the byte range of its contents (between the quotes), and whether it holds
    /// an escape (its decoded text then differs from the range).
    String {
        start: usize,
        end: usize,
        escaped: bool,
    },
    /// An integer of at most [`MAX_INTEGER_DIGITS`] digits: its text's range.
    Integer {
        start: usize,
        end: usize,
    },
    True,
    False,
    Null,
    Object,
    List,
}

/// A position in a JSON text.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Cursor { text, pos: 0 }
    }

    /// The whole text.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The byte offset of the next unread byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves back (or on) to `pos`, an offset this cursor returned before.
    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// The plain text of a string token without escapes; `None` for an escaped string or any
    /// other token.
    pub fn plain_str(&self, token: Token) -> Option<&'a str> {
        match token {
            Token::String {
                start,
                end,
                escaped: false,
            } => self.text.get(start..end),
            _ => None,
        }
    }

    /// The text of `range`, for a token or a value the cursor read.
    pub fn slice(&self, range: Range<usize>) -> &'a str {
        self.text.get(range).unwrap_or_default()
    }

    pub fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Consumes `byte` if it is next.
    pub fn eat(&mut self, byte: u8) -> Option<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    pub fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(is_json_whitespace) {
            self.pos += 1;
        }
    }

    /// The opening `open` of a container `depth` deep, and the white space after it; `true`
    /// when `close` follows at once (an empty container, read to its end).
    pub fn open(&mut self, depth: usize, open: u8, close: u8) -> Option<bool> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(open)?;
        self.skip_whitespace();
        Some(self.eat(close).is_some())
    }

    /// After a member of a mapping or list: white space, then a comma (`true`, more to come)
    /// or the closing `close` (`false`).
    pub fn after_member(&mut self, close: u8) -> Option<bool> {
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

    /// The mapping at the cursor, `depth` containers deep, handing each member's key to
    /// `member` with the cursor at the member's value, which `member` must read (`None`
    /// from `member` gives up).
    pub fn members(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, Token) -> Option<()>,
    ) -> Option<()> {
        if self.open(depth, b'{', b'}')? {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.skip_whitespace();
            self.eat(b':')?;
            self.skip_whitespace();
            member(self, key)?;
            if !self.after_member(b'}')? {
                return Some(());
            }
        }
    }

    /// The list at the cursor, `depth` containers deep, with the cursor at each element in
    /// turn for `element` to read.
    pub fn elements(
        &mut self,
        depth: usize,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if self.open(depth, b'[', b']')? {
            return Some(());
        }
        loop {
            element(self)?;
            if !self.after_member(b']')? {
                return Some(());
            }
        }
    }

    /// Any value at the cursor, nested `depth` containers deep, read to its end.
    pub fn value(&mut self, depth: usize) -> Option<Token> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' => self
                .members(depth + 1, |cursor, _| cursor.value(depth + 1).map(drop))
                .map(|()| Token::Object),
            b'[' => self
                .elements(depth + 1, |cursor| cursor.value(depth + 1).map(drop))
                .map(|()| Token::List),
            b't' => self.literal(b"true", Token::True),
            b'f' => self.literal(b"false", Token::False),
            b'n' => self.literal(b"null", Token::Null),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    /// Any value at the cursor, as [`Cursor::value`], with the byte range it spans.
    pub fn value_range(&mut self, depth: usize) -> Option<(Token, Range<usize>)> {
        let start = self.pos;
        let token = self.value(depth)?;
        Some((token, start..self.pos))
    }

    /// Skips the value at the cursor, a container read only for its brackets and strings:
    /// for a value whose text a later reader checks in full anyway (a deferred
    /// ResourceSlice's spec). On valid JSON it ends where [`Cursor::value`] ends; on invalid
    /// JSON it may accept (mismatched brackets, bad scalars) or answer `None`, and the later
    /// reader reports. Strings in it are limited as [`Cursor::string`] limits them, except
    /// that any escape is passed over.
    pub fn skip_value_unchecked(&mut self) -> Option<()> {
        if !matches!(self.peek()?, b'{' | b'[') {
            return self.value(0).map(drop);
        }
        let bytes = self.text.as_bytes();
        let mut pos = self.pos;
        let mut depth = 0usize;
        loop {
            pos = structural_from(bytes, pos)?;
            match bytes[pos] {
                b'"' => {
                    pos += 1;
                    loop {
                        pos = string_stop_from(bytes, pos)?;
                        match bytes[pos] {
                            b'"' => break,
                            b'\\' => pos += 2,
                            _ => return None,
                        }
                    }
                    pos += 1;
                }
                b'{' | b'[' => {
                    depth += 1;
                    pos += 1;
                }
                _ => {
                    depth -= 1;
                    pos += 1;
                    if depth == 0 {
                        self.pos = pos;
                        return Some(());
                    }
                }
            }
        }
    }

    /// A string without `\u` escapes or control characters.
    pub fn string(&mut self) -> Option<Token> {
        let bytes = self.text.as_bytes();
        if bytes.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let mut pos = start;
        let mut escaped = false;
        loop {
            pos = string_stop_from(bytes, pos)?;
            match bytes[pos] {
                b'"' => {
                    self.pos = pos + 1;
                    return Some(Token::String {
                        start,
                        end: pos,
                        escaped,
                    });
                }
                b'\\' => match bytes.get(pos + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        pos += 2;
                        escaped = true;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8], token: Token) -> Option<Token> {
        if self.text.as_bytes().get(self.pos..)?.starts_with(word) {
            self.pos += word.len();
            Some(token)
        } else {
            None
        }
    }

    /// An integer of at most [`MAX_INTEGER_DIGITS`] digits, without leading zeros.
    fn integer(&mut self) -> Option<Token> {
        let start = self.pos;
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
        Some(Token::Integer {
            start,
            end: self.pos,
        })
    }
}

/// Bytes equal to `byte` in each of the eight bytes of `word`, as high bits:
/// `x.wrapping_sub(ONES * n) & !x & HIGH_BITS` marks the bytes of `x` below `n`, and a byte
/// equal to `byte` is one below 1 after `^ byte`. Only the lowest mark is always exact (a
/// borrow only runs upwards), which is all [`first_stop_from`] reads.
#[inline]
fn bytes_below(word: u64, n: u8) -> u64 {
    word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH_BITS
}

#[inline]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    bytes_below(word ^ (ONES * u64::from(byte)), 1)
}

const ONES: u64 = u64::MAX / 255;
const HIGH_BITS: u64 = ONES << 7;

/// The offset of the first byte at or after `pos` that `is_stop` accepts, eight bytes at a
/// time: `marks` gives a word's stop bytes as high bits (the lowest one exact), `is_stop`
/// judges the last few bytes one by one. Most strings are short, so there is no setup before
/// the first word; a byte-wise loop made the scan cost more than serde's.
#[inline]
fn first_stop_from(
    bytes: &[u8],
    mut pos: usize,
    marks: impl Fn(u64) -> u64,
    is_stop: impl Fn(u8) -> bool,
) -> Option<usize> {
    while let Some(&chunk) = bytes.get(pos..).and_then(|rest| rest.first_chunk::<8>()) {
        let found = marks(u64::from_le_bytes(chunk));
        if found != 0 {
            return Some(pos + found.trailing_zeros() as usize / 8);
        }
        pos += 8;
    }
    while let Some(&byte) = bytes.get(pos) {
        if is_stop(byte) {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

/// The offset of the first quote, backslash or control character in `bytes` at or after
/// `pos`: where a string's plain run of text stops.
#[inline]
fn string_stop_from(bytes: &[u8], pos: usize) -> Option<usize> {
    first_stop_from(
        bytes,
        pos,
        |word| bytes_below(word, 0x20) | bytes_equal(word, b'"') | bytes_equal(word, b'\\'),
        |byte| byte == b'"' || byte == b'\\' || byte < 0x20,
    )
}

/// The offset of the first quote or bracket (`{}[]`) in `bytes` at or after `pos`; `| 0x20`
/// maps `[` and `]` onto `{` and `}` and no other byte onto either.
#[inline]
fn structural_from(bytes: &[u8], pos: usize) -> Option<usize> {
    first_stop_from(
        bytes,
        pos,
        |word| {
            let folded = word | (ONES * 0x20);
            bytes_equal(word, b'"') | bytes_equal(folded, b'{') | bytes_equal(folded, b'}')
        },
        |byte| matches!(byte, b'"' | b'{' | b'}' | b'[' | b']'),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stop byte of both scans at every position of runs longer than a word, from
    /// every start before it, and none at all.
    #[test]
    fn finds_where_a_plain_run_stops() {
        type Scan = fn(&[u8], usize) -> Option<usize>;
        let scans: [(Scan, &[u8], &str); 2] = [
            (string_stop_from, b"\"\\\x00\x1f", "aé~\u{7f}{[]}"),
            (structural_from, b"\"{}[]", "aé~\u{7f}\\\x00;Z|\\"),
        ];
        for (scan, stops, plain) in scans {
            for len in 0..20 {
                let plain = plain.repeat(len).into_bytes();
                assert_eq!(scan(&plain, 0), None);
                for at in 0..=plain.len() {
                    for &stop in stops {
                        let mut text = plain.clone();
                        text.insert(at, stop);
                        // a later stop of another kind does not hide the first
                        text.push(b'"');
                        for from in [0, at / 2, at] {
                            assert_eq!(scan(&text, from), Some(at), "{stop} at {at} from {from}");
                        }
                    }
                }
            }
        }
    }

    /// Each token with its range, and the values that end where serde's do.
    #[test]
    fn reads_tokens_with_their_ranges() {
        let text = r#"{"a": "x\"y", "b" : -12 ,"c":[true,false,null,{}],"d":{"e":0}}"#;
        let mut cursor = Cursor::new(text);
        let mut seen = Vec::new();
        cursor
            .members(1, |cursor, key| {
                let (token, range) = cursor.value_range(1)?;
                seen.push((cursor.plain_str(key)?, token, cursor.slice(range)));
                Some(())
            })
            .expect("within the subset");
        assert_eq!(cursor.pos(), text.len());
        let kinds: Vec<_> = seen.iter().map(|(k, t, s)| (*k, *t, *s)).collect();
        assert_eq!(
            kinds,
            [
                (
                    "a",
                    Token::String {
                        start: 7,
                        end: 11,
                        escaped: true
                    },
                    r#""x\"y""#
                ),
                ("b", Token::Integer { start: 20, end: 23 }, "-12"),
                ("c", Token::List, "[true,false,null,{}]"),
                ("d", Token::Object, r#"{"e":0}"#),
            ]
        );
    }

    /// On valid JSON the unchecked skip ends where the checked read ends.
    #[test]
    fn skips_containers_to_where_a_read_ends() {
        let texts = [
            r#"{"a":[1,{"b":"}]{["}],"c":"\\\"","d":{}}"#,
            r#"[{"x":"a\\"},[],[[]],"]", true, null, -3]"#,
            "{ \"s\" : \"plain text longer than a word\" , \"t\":[ \"[\" ] }",
            r#""just a string""#,
            "17",
        ];
        for text in texts {
            let mut read = Cursor::new(text);
            read.value(0).expect("valid");
            let mut skip = Cursor::new(text);
            skip.skip_value_unchecked().expect("skipped");
            assert_eq!(skip.pos(), read.pos(), "{text}");
            // the same within a longer text
            let longer = format!("{text} ,\"rest\"]");
            let mut skip = Cursor::new(&longer);
            skip.skip_value_unchecked().expect("skipped");
            assert_eq!(skip.pos(), read.pos(), "{longer}");
        }
        for unfinished in [r#"{"a":["#, r#"{"a":"b"#, r#"["\"#] {
            assert_eq!(Cursor::new(unfinished).skip_value_unchecked(), None);
        }
    }

    #[test]
    fn refuses_what_is_outside_the_subset() {
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        for text in [
            r#""\u0041""#,
            "1.5",
            "1e3",
            "01",
            "1234567890123456789",
            "tru",
            "[1,]",
            "{\"a\" 1}",
            "\"tab\there\"",
            deep.as_str(),
        ] {
            let mut cursor = Cursor::new(text);
            assert_eq!(cursor.value(0), None, "{text}");
        }
        let shallow = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(Cursor::new(&shallow).value(0), Some(Token::List));
    }
}

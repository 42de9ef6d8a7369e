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

/// The known fields of one object met so far, by number: a reader on the [`Cursor`] refuses
/// a field given twice (the wire types keep the last one, and the reader leaves such text to
/// them).
#[derive(Debug, Default)]
pub struct Seen(u32);

impl Seen {
    /// `Some` the first time `field` (below 32) is met, `None` after.
    pub fn first(&mut self, field: u32) -> Option<()> {
        let bit = 1 << field;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
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
        let mut skip = Skip {
            pos: self.pos,
            depth: 0,
            in_string: false,
        };
        loop {
            let block = bytes
                .get(skip.pos..)
                .and_then(|rest| rest.first_chunk::<64>());
            let step = match block.and_then(|block| skip.block(block)) {
                Some(step) => step,
                // An escape, a control character in a string or the last bytes: one by one.
                None => {
                    if skip.pos >= bytes.len() {
                        return None;
                    }
                    skip.bytes(bytes, (skip.pos + 64).min(bytes.len()))?
                }
            };
            if let Some(end) = step {
                self.pos = end;
                return Some(());
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

/// Where [`Cursor::skip_value_unchecked`] stands: the next byte, the containers open, and
/// whether that byte is inside a string.
struct Skip {
    pos: usize,
    depth: usize,
    in_string: bool,
}

/// Classes of a byte for the skip, one bit each.
const QUOTE: u32 = 0;
const BACKSLASH: u32 = 1;
const CONTROL: u32 = 2;
const OPEN: u32 = 3;
const CLOSE: u32 = 4;

impl Skip {
    /// The 64 bytes at `pos` at once, without a branch per byte: where their quotes put each
    /// byte in or out of a string (a prefix XOR of the quotes' bit mask), and the brackets
    /// outside strings, counted, or taken one by one in a block where the value may end. In
    /// compact JSON a quote comes every few bytes; finding each stop from the one before cost
    /// about nine instructions a byte. `None` for a block with an escape or a control
    /// character in a string, which [`Skip::bytes`] takes; `Some(Some(end))` where the value
    /// ends.
    fn block(&mut self, block: &[u8; 64]) -> Option<Option<usize>> {
        let mut flags = [0u8; 64];
        for (flag, &byte) in flags.iter_mut().zip(block) {
            let folded = byte | 0x20;
            *flag = u8::from(byte == b'"') << QUOTE
                | u8::from(byte == b'\\') << BACKSLASH
                | u8::from(byte < 0x20) << CONTROL
                | u8::from(folded == b'{') << OPEN
                | u8::from(folded == b'}') << CLOSE;
        }
        let any = flags.iter().fold(0, |any, &flag| any | flag);
        if any & (1 << BACKSLASH) != 0 {
            return None;
        }
        let quotes = class_mask(&flags, QUOTE);
        // Set from an opening quote up to its closing one (exclusive).
        let inside = prefix_xor(quotes) ^ if self.in_string { u64::MAX } else { 0 };
        if any & (1 << CONTROL) != 0 && class_mask(&flags, CONTROL) & inside != 0 {
            return None;
        }
        let opens = class_mask(&flags, OPEN) & !inside;
        let closes = class_mask(&flags, CLOSE) & !inside;
        self.in_string = inside >> 63 == 1;
        if (closes.count_ones() as usize) < self.depth {
            // Fewer closing brackets than are open: the value goes on past this block.
            self.depth = self.depth + opens.count_ones() as usize - closes.count_ones() as usize;
        } else {
            let mut brackets = opens | closes;
            while brackets != 0 {
                let at = brackets.trailing_zeros();
                brackets &= brackets - 1;
                if opens >> at & 1 == 1 {
                    self.depth += 1;
                } else {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Some(Some(self.pos + at as usize + 1));
                    }
                }
            }
        }
        self.pos += 64;
        Some(None)
    }

    /// Byte by byte up to `limit` (or one past it, over an escaped byte); `Some(Some(end))`
    /// where the value ends, `None` at a control character in a string.
    fn bytes(&mut self, bytes: &[u8], limit: usize) -> Option<Option<usize>> {
        while self.pos < limit {
            let byte = bytes[self.pos];
            if self.in_string {
                match byte {
                    b'"' => self.in_string = false,
                    b'\\' => self.pos += 1,
                    0..=0x1f => return None,
                    _ => {}
                }
            } else {
                match byte {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth -= 1;
                        if self.depth == 0 {
                            return Some(Some(self.pos + 1));
                        }
                    }
                    _ => {}
                }
            }
            self.pos += 1;
        }
        Some(None)
    }
}

/// Bit `class` of each of the 64 flags, as a 64-bit mask: each eight flags' bits gathered
/// into one byte by a multiplication whose partial products do not overlap.
#[inline]
fn class_mask(flags: &[u8; 64], class: u32) -> u64 {
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let (words, _) = flags.as_chunks::<8>();
    words.iter().enumerate().fold(0, |mask, (k, word)| {
        let bits = (u64::from_le_bytes(*word) >> class) & ONES;
        mask | (bits.wrapping_mul(GATHER) >> 56) << (8 * k)
    })
}

/// Bit `i` of the answer is the XOR of bits `0..=i` of `mask`.
#[inline]
fn prefix_xor(mut mask: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        mask ^= mask << shift;
    }
    mask
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
/// maps `[` and `]` onto `{` and `}` and no other byte onto either. The skip's reference in
/// the tests.
#[cfg(test)]
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

    /// The skip as it was first written, stop by stop: the reference for the block skip.
    fn skip_stop_by_stop(bytes: &[u8], mut pos: usize) -> Option<usize> {
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
                        return Some(pos);
                    }
                }
            }
        }
    }

    /// Texts drawn from brackets, quotes, escapes, control characters and runs of every
    /// length, so that each falls at every place of a block and strings and escapes cross
    /// blocks: the block skip ends where the stop-by-stop skip ends, or fails where it fails.
    #[test]
    fn block_skip_agrees_with_the_stop_by_stop_skip() {
        let pieces: [&str; 16] = [
            "{",
            "}",
            "[",
            "]",
            "\"",
            "\\",
            "\\\"",
            "a",
            ":",
            ",",
            " ",
            "\n",
            "\t",
            "é",
            "\"plain\"",
            "{\"k\":\"v\"}",
        ];
        let (mut seed, mut ended, mut failed) = (11u64, 0, 0);
        for case in 0..20_000 {
            let mut text = String::from(if case % 2 == 0 { "{" } else { "[" });
            for _ in 0..case % 97 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let pick = (seed >> 33) as usize;
                match pieces.get(pick % 20) {
                    Some(piece) => text.push_str(piece),
                    None => text.push_str(&"x".repeat(pick % 70)),
                }
            }
            // Close what is open often enough that many values end.
            if case % 3 == 0 {
                text.push_str(&"\"}]".repeat(case % 7));
            }
            let expected = skip_stop_by_stop(text.as_bytes(), 0);
            let mut cursor = Cursor::new(&text);
            let got = cursor.skip_value_unchecked().map(|()| cursor.pos());
            assert_eq!(got, expected, "{text:?}");
            match expected {
                Some(_) => ended += 1,
                None => failed += 1,
            }
        }
        assert!(
            ended > 3000 && failed > 3000,
            "{ended} ended, {failed} failed"
        );
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

//! Lexer and recursive-descent parser for the CEL grammar (cel-go's `CEL.g4`), with
//! macro expansion (`has`, `all`, `exists`, `exists_one`/`existsOne`, `map`, `filter`,
//! the two-variable comprehensions, `cel.bind`, `sortBy`) and optional syntax.
//!
//! Recursion is bounded like cel-go's parser (250 nested levels), so deeply nested
//! input is an error, never a stack overflow.

use crate::ast::{
    ACCUMULATOR, Comprehension, Expr, ExprId, ExprKind, Literal, MapEntry, Source, StructField,
};
use crate::error::Issue;

const MAX_RECURSION_DEPTH: u32 = 250;
/// cel-go's default `ExpressionSizeCodePointLimit`.
const MAX_CODE_POINTS: usize = 100_000;

const RESERVED_IDENTIFIERS: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "false",
    "for",
    "function",
    "if",
    "import",
    "in",
    "let",
    "loop",
    "package",
    "namespace",
    "null",
    "return",
    "true",
    "var",
    "void",
    "while",
];

const EXPECTED_PRIMARY: &str = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    EscIdent(String),
    Int(String),
    Uint(String),
    Float(String),
    Str(Result<String, String>),
    Bytes(Result<Vec<u8>, String>),
    True,
    False,
    Null,
    In,
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

pub(crate) struct Parsed {
    pub expr: Expr,
    pub source: Source,
    pub next_id: ExprId,
}

/// Parses `text`; returns the expression or the issues found (syntax errors and
/// macro errors), as cel-go reports them.
pub(crate) fn parse(text: &str) -> Result<Parsed, (Source, Vec<Issue>)> {
    let mut source = Source::new(text);
    let code_points = text.chars().count();
    if code_points > MAX_CODE_POINTS {
        let issue = Issue::at(
            &source,
            0,
            format!(
                "expression code point size exceeds limit: size: {code_points}, limit {MAX_CODE_POINTS}"
            ),
        );
        return Err((source, vec![issue]));
    }
    let (tokens, mut issues) = lex(text, &source);
    let mut parser = Parser {
        tokens,
        pos: 0,
        offsets: vec![0],
        issues: Vec::new(),
        depth: 0,
        text,
    };
    let result = parser.parse_start();
    source.offsets = std::mem::take(&mut parser.offsets);
    issues.extend(parser.issues.drain(..).map(|p| p.resolve(&source)));
    match result {
        Some(expr) if issues.is_empty() => {
            let next_id = source.offsets.len() as ExprId;
            Ok(Parsed {
                expr,
                source,
                next_id,
            })
        }
        _ => {
            let mut issues = issues;
            if issues.is_empty() {
                issues.push(Issue::at(&source, 0, "syntax error".to_string()));
            }
            Err((source, issues))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Lexer

fn lex(text: &str, source: &Source) -> (Vec<Token>, Vec<Issue>) {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut issues = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        // Whitespace and comments are hidden.
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0c) {
            i += 1;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        match lex_one(text, i) {
            Ok((tok, end)) => {
                tokens.push(Token { tok, start, end });
                i = end;
            }
            Err(fail_end) => {
                // ANTLR reports the text from the token start through the failing
                // character, then skips one character.
                let fail_end = next_char_boundary(text, fail_end.max(start + 1));
                let bad = &text[start..fail_end];
                issues.push(Issue::at(
                    source,
                    start,
                    format!(
                        "Syntax error: token recognition error at: '{}'",
                        escape_token_text(bad)
                    ),
                ));
                i = next_char_boundary(text, start + 1);
            }
        }
    }
    tokens.push(Token {
        tok: Tok::Eof,
        start: text.len(),
        end: text.len(),
    });
    (tokens, issues)
}

fn next_char_boundary(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i.min(text.len())
}

fn escape_token_text(s: &str) -> String {
    s.replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t")
}

/// Lexes one token at `i`; on failure returns the offset just past the failing character.
fn lex_one(text: &str, i: usize) -> Result<(Tok, usize), usize> {
    let bytes = text.as_bytes();
    let c = bytes[i];
    let peek = |k: usize| bytes.get(i + k).copied();
    let two = |a: u8, b: u8| c == a && peek(1) == Some(b);
    let punct = |p: &'static str| Ok((Tok::Punct(p), i + p.len()));
    if two(b'=', b'=') {
        return punct("==");
    }
    if two(b'!', b'=') {
        return punct("!=");
    }
    if two(b'<', b'=') {
        return punct("<=");
    }
    if two(b'>', b'=') {
        return punct(">=");
    }
    if two(b'&', b'&') {
        return punct("&&");
    }
    if two(b'|', b'|') {
        return punct("||");
    }
    match c {
        b'=' | b'&' | b'|' => return Err(i + 2),
        b'<' => return punct("<"),
        b'>' => return punct(">"),
        b'[' => return punct("["),
        b']' => return punct("]"),
        b'{' => return punct("{"),
        b'}' => return punct("}"),
        b'(' => return punct("("),
        b')' => return punct(")"),
        b',' => return punct(","),
        b'-' => return punct("-"),
        b'!' => return punct("!"),
        b'?' => return punct("?"),
        b':' => return punct(":"),
        b'+' => return punct("+"),
        b'*' => return punct("*"),
        b'/' => return punct("/"),
        b'%' => return punct("%"),
        _ => {}
    }
    if c == b'.' {
        if peek(1).is_some_and(|d| d.is_ascii_digit()) {
            return lex_number(text, i);
        }
        return punct(".");
    }
    if c.is_ascii_digit() {
        return lex_number(text, i);
    }
    if c == b'`' {
        let mut j = i + 1;
        while j < bytes.len()
            && (bytes[j].is_ascii_alphanumeric()
                || matches!(bytes[j], b'_' | b'.' | b'-' | b'/' | b' '))
        {
            j += 1;
        }
        if j > i + 1 && bytes.get(j) == Some(&b'`') {
            return Ok((Tok::EscIdent(text[i + 1..j].to_string()), j + 1));
        }
        return Err(j + 1);
    }
    // String and bytes literals, with optional r/R and b/B prefixes.
    let (is_bytes, is_raw, quote_at) = {
        let mut k = i;
        let mut is_bytes = false;
        let mut is_raw = false;
        if matches!(bytes[k], b'b' | b'B') {
            is_bytes = true;
            k += 1;
        }
        if k < bytes.len() && matches!(bytes[k], b'r' | b'R') {
            is_raw = true;
            k += 1;
        }
        if !is_bytes && k < bytes.len() && matches!(bytes[k], b'b' | b'B') && is_raw {
            // "rb" is not a valid prefix order in CEL.
            (false, false, usize::MAX)
        } else if k < bytes.len() && matches!(bytes[k], b'"' | b'\'') {
            (is_bytes, is_raw, k)
        } else {
            (false, false, usize::MAX)
        }
    };
    if quote_at != usize::MAX {
        return lex_string(text, i, quote_at, is_bytes, is_raw);
    }
    if c.is_ascii_alphabetic() || c == b'_' {
        let mut j = i + 1;
        while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
            j += 1;
        }
        let word = &text[i..j];
        let tok = match word {
            "true" => Tok::True,
            "false" => Tok::False,
            "null" => Tok::Null,
            "in" => Tok::In,
            _ => Tok::Ident(word.to_string()),
        };
        return Ok((tok, j));
    }
    Err(next_char_boundary(text, i + 1))
}

fn lex_number(text: &str, i: usize) -> Result<(Tok, usize), usize> {
    let bytes = text.as_bytes();
    let digits = |mut j: usize| {
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    if bytes[i] == b'0' && matches!(bytes.get(i + 1), Some(b'x')) {
        let mut j = i + 2;
        while j < bytes.len() && bytes[j].is_ascii_hexdigit() {
            j += 1;
        }
        if j > i + 2 {
            if matches!(bytes.get(j), Some(b'u' | b'U')) {
                return Ok((Tok::Uint(text[i..j].to_string()), j + 1));
            }
            return Ok((Tok::Int(text[i..j].to_string()), j));
        }
        // "0" followed by an identifier starting with x.
        return Ok((Tok::Int("0".to_string()), i + 1));
    }
    let mut j = digits(i);
    let mut is_float = false;
    if j < bytes.len() && bytes[j] == b'.' && bytes.get(j + 1).is_some_and(|d| d.is_ascii_digit()) {
        j = digits(j + 1);
        is_float = true;
    }
    if j < bytes.len() && matches!(bytes[j], b'e' | b'E') {
        let mut k = j + 1;
        if k < bytes.len() && matches!(bytes[k], b'+' | b'-') {
            k += 1;
        }
        if k < bytes.len() && bytes[k].is_ascii_digit() {
            j = digits(k);
            is_float = true;
        }
    }
    if is_float {
        return Ok((Tok::Float(text[i..j].to_string()), j));
    }
    if matches!(bytes.get(j), Some(b'u' | b'U')) {
        return Ok((Tok::Uint(text[i..j].to_string()), j + 1));
    }
    Ok((Tok::Int(text[i..j].to_string()), j))
}

fn lex_string(
    text: &str,
    start: usize,
    quote_at: usize,
    is_bytes: bool,
    is_raw: bool,
) -> Result<(Tok, usize), usize> {
    let bytes = text.as_bytes();
    let q = bytes[quote_at];
    let triple = bytes.get(quote_at + 1) == Some(&q) && bytes.get(quote_at + 2) == Some(&q);
    let body_start = if triple { quote_at + 3 } else { quote_at + 1 };
    let mut j = body_start;
    let body_end;
    loop {
        if j >= bytes.len() {
            return Err(bytes.len());
        }
        let b = bytes[j];
        if triple {
            if b == q && bytes.get(j + 1) == Some(&q) && bytes.get(j + 2) == Some(&q) {
                body_end = j;
                j += 3;
                break;
            }
        } else {
            if b == b'\n' || b == b'\r' {
                return Err(j + 1);
            }
            if b == q {
                body_end = j;
                j += 1;
                break;
            }
        }
        if b == b'\\' && !is_raw {
            // Validate the escape sequence's shape as the lexer grammar does.
            match check_escape(bytes, j) {
                Some(len) => j += len,
                None => return Err((j + 2).min(bytes.len())),
            }
            continue;
        }
        j += 1;
    }
    let _ = start;
    let body = &text[body_start..body_end];
    if is_raw {
        if is_bytes {
            return Ok((Tok::Bytes(Ok(body.as_bytes().to_vec())), j));
        }
        return Ok((Tok::Str(Ok(body.to_string())), j));
    }
    let decoded = unescape(body, is_bytes);
    if is_bytes {
        Ok((Tok::Bytes(decoded), j))
    } else {
        Ok((
            Tok::Str(decoded.and_then(|b| String::from_utf8(b).map_err(|e| e.to_string()))),
            j,
        ))
    }
}

/// Length of the escape sequence at `j` (which holds a backslash), if well-formed.
fn check_escape(bytes: &[u8], j: usize) -> Option<usize> {
    let next = *bytes.get(j + 1)?;
    let hex = |from: usize, n: usize| {
        (from..from + n).all(|k| bytes.get(k).is_some_and(|b| b.is_ascii_hexdigit()))
    };
    match next {
        b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`' => {
            Some(2)
        }
        b'x' | b'X' => hex(j + 2, 2).then_some(4),
        b'u' => hex(j + 2, 4).then_some(6),
        b'U' => hex(j + 2, 8).then_some(10),
        b'0'..=b'3' => {
            let ok = bytes.get(j + 2).is_some_and(|b| (b'0'..=b'7').contains(b))
                && bytes.get(j + 3).is_some_and(|b| (b'0'..=b'7').contains(b));
            ok.then_some(4)
        }
        _ => None,
    }
}

/// Decodes escapes. In strings `\x`/octal escapes name code points; in bytes, raw bytes.
fn unescape(body: &str, is_bytes: bool) -> Result<Vec<u8>, String> {
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let push_char = |out: &mut Vec<u8>, cp: u32| -> Result<(), String> {
        let c = char::from_u32(cp).ok_or_else(|| "invalid unicode code point".to_string())?;
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Ok(())
    };
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let next = bytes[i + 1];
        let hexval = |from: usize, n: usize| {
            u32::from_str_radix(&body[from..from + n], 16).map_err(|e| e.to_string())
        };
        match next {
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'"' | b'\'' | b'\\' | b'?' | b'`' => out.push(next),
            b'x' | b'X' => {
                let v = hexval(i + 2, 2)?;
                if is_bytes {
                    out.push(v as u8);
                } else {
                    push_char(&mut out, v)?;
                }
                i += 4;
                continue;
            }
            b'u' | b'U' => {
                let n = if next == b'u' { 4 } else { 8 };
                let v = hexval(i + 2, n)?;
                if is_bytes {
                    return Err("unicode escape sequence in bytes literal".to_string());
                }
                push_char(&mut out, v)?;
                i += 2 + n;
                continue;
            }
            b'0'..=b'3' => {
                let v = u32::from_str_radix(&body[i + 1..i + 4], 8).map_err(|e| e.to_string())?;
                if is_bytes {
                    out.push(v as u8);
                } else {
                    push_char(&mut out, v)?;
                }
                i += 4;
                continue;
            }
            _ => return Err("invalid escape sequence".to_string()),
        }
        i += 2;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Parser

struct Parser<'t> {
    tokens: Vec<Token>,
    pos: usize,
    offsets: Vec<u32>,
    issues: Vec<PendingIssue>,
    depth: u32,
    text: &'t str,
}

/// An issue located by byte offset, resolved into a line/column at the end.
pub(crate) struct PendingIssue {
    offset: usize,
    message: String,
}

impl PendingIssue {
    fn resolve(self, source: &Source) -> Issue {
        Issue::at(source, self.offset, self.message)
    }
}

type PResult<T> = Result<T, ()>;

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        let i = (self.pos + k).min(self.tokens.len() - 1);
        &self.tokens[i].tok
    }

    fn offset(&self) -> usize {
        self.tokens[self.pos].start
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn new_id(&mut self, offset: usize) -> ExprId {
        self.offsets.push(offset as u32);
        (self.offsets.len() - 1) as ExprId
    }

    fn expr(&mut self, offset: usize, kind: ExprKind) -> Expr {
        Expr {
            id: self.new_id(offset),
            kind,
        }
    }

    fn error(&mut self, offset: usize, message: String) {
        self.issues.push(PendingIssue { offset, message });
    }

    fn token_text(&self, i: usize) -> String {
        let t = &self.tokens[i.min(self.tokens.len() - 1)];
        if t.tok == Tok::Eof {
            "<EOF>".to_string()
        } else {
            escape_token_text(&self.text[t.start..t.end])
        }
    }

    fn syntax_error(&mut self, expecting: &str) {
        let text = self.token_text(self.pos);
        let offset = self.offset();
        self.error(
            offset,
            format!("Syntax error: mismatched input '{text}' expecting {expecting}"),
        );
    }

    fn expect(&mut self, p: &'static str, expecting: &str) -> PResult<usize> {
        if self.is_punct(p) {
            Ok(self.bump().start)
        } else {
            // ANTLR's single-token deletion: an extraneous token before the expected one.
            if matches!(self.peek_at(1), Tok::Punct(q) if *q == p) && *self.peek() != Tok::Eof {
                let text = self.token_text(self.pos);
                let offset = self.offset();
                self.error(
                    offset,
                    format!("Syntax error: extraneous input '{text}' expecting {expecting}"),
                );
            } else {
                self.syntax_error(expecting);
            }
            Err(())
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_RECURSION_DEPTH {
            let offset = self.offset();
            self.error(
                offset,
                format!("expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"),
            );
            return Err(());
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn parse_start(&mut self) -> Option<Expr> {
        let e = self.parse_expr().ok()?;
        if *self.peek() != Tok::Eof {
            let text = self.token_text(self.pos);
            let offset = self.offset();
            let kind = if *self.peek_at(1) == Tok::Eof {
                "extraneous input"
            } else {
                "mismatched input"
            };
            self.error(
                offset,
                format!("Syntax error: {kind} '{text}' expecting <EOF>"),
            );
            return None;
        }
        Some(e)
    }

    fn parse_expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let result = self.parse_expr_inner();
        self.leave();
        result
    }

    fn parse_expr_inner(&mut self) -> PResult<Expr> {
        let cond = self.parse_or()?;
        if !self.is_punct("?") {
            return Ok(cond);
        }
        let op = self.bump().start;
        let if_true = self.parse_or()?;
        self.expect(":", "':'")?;
        let if_false = self.parse_expr()?;
        Ok(self.expr(
            op,
            ExprKind::Call {
                target: None,
                function: "_?_:_".to_string(),
                args: vec![cond, if_true, if_false],
            },
        ))
    }

    fn parse_or(&mut self) -> PResult<Expr> {
        let first = self.parse_and()?;
        let mut terms = vec![first];
        let mut ops = Vec::new();
        while self.is_punct("||") {
            ops.push(self.bump().start);
            terms.push(self.parse_and()?);
        }
        Ok(self.balance("_||_", terms, ops))
    }

    fn parse_and(&mut self) -> PResult<Expr> {
        let first = self.parse_relation()?;
        let mut terms = vec![first];
        let mut ops = Vec::new();
        while self.is_punct("&&") {
            ops.push(self.bump().start);
            terms.push(self.parse_relation()?);
        }
        Ok(self.balance("_&&_", terms, ops))
    }

    /// Builds a balanced tree of a logical operator, like cel-go's balancing logic manager.
    fn balance(&mut self, function: &str, mut terms: Vec<Expr>, ops: Vec<usize>) -> Expr {
        if terms.len() == 1 {
            return terms.pop().unwrap_or_else(unreachable_expr);
        }
        let mut terms: Vec<Option<Expr>> = terms.into_iter().map(Some).collect();
        self.balanced_tree(function, &mut terms, &ops, 0, ops.len() - 1)
    }

    fn balanced_tree(
        &mut self,
        function: &str,
        terms: &mut [Option<Expr>],
        ops: &[usize],
        lo: usize,
        hi: usize,
    ) -> Expr {
        let mid = (lo + hi).div_ceil(2);
        let left = if mid == lo {
            terms[mid].take().unwrap_or_else(unreachable_expr)
        } else {
            self.balanced_tree(function, terms, ops, lo, mid - 1)
        };
        let right = if mid == hi {
            terms[mid + 1].take().unwrap_or_else(unreachable_expr)
        } else {
            self.balanced_tree(function, terms, ops, mid + 1, hi)
        };
        self.expr(
            ops[mid],
            ExprKind::Call {
                target: None,
                function: function.to_string(),
                args: vec![left, right],
            },
        )
    }

    fn parse_relation(&mut self) -> PResult<Expr> {
        let mut lhs = self.parse_additive()?;
        let mut chain = 0;
        loop {
            let function = match self.peek() {
                Tok::Punct("<") => "_<_",
                Tok::Punct("<=") => "_<=_",
                Tok::Punct(">") => "_>_",
                Tok::Punct(">=") => "_>=_",
                Tok::Punct("==") => "_==_",
                Tok::Punct("!=") => "_!=_",
                Tok::In => "@in",
                _ => break,
            };
            chain += 1;
            self.chain_limit(chain)?;
            let op = self.bump().start;
            let rhs = self.parse_additive()?;
            lhs = self.expr(
                op,
                ExprKind::Call {
                    target: None,
                    function: function.to_string(),
                    args: vec![lhs, rhs],
                },
            );
        }
        Ok(lhs)
    }

    fn chain_limit(&mut self, chain: u32) -> PResult<()> {
        if self.depth + chain > MAX_RECURSION_DEPTH {
            let offset = self.offset();
            self.error(
                offset,
                format!("expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"),
            );
            return Err(());
        }
        Ok(())
    }

    fn parse_additive(&mut self) -> PResult<Expr> {
        let mut lhs = self.parse_multiplicative()?;
        let mut chain = 0;
        loop {
            let function = match self.peek() {
                Tok::Punct("+") => "_+_",
                Tok::Punct("-") => "_-_",
                _ => break,
            };
            chain += 1;
            self.chain_limit(chain)?;
            let op = self.bump().start;
            let rhs = self.parse_multiplicative()?;
            lhs = self.expr(
                op,
                ExprKind::Call {
                    target: None,
                    function: function.to_string(),
                    args: vec![lhs, rhs],
                },
            );
        }
        Ok(lhs)
    }

    fn parse_multiplicative(&mut self) -> PResult<Expr> {
        let mut lhs = self.parse_unary()?;
        let mut chain = 0;
        loop {
            let function = match self.peek() {
                Tok::Punct("*") => "_*_",
                Tok::Punct("/") => "_/_",
                Tok::Punct("%") => "_%_",
                _ => break,
            };
            chain += 1;
            self.chain_limit(chain)?;
            let op = self.bump().start;
            let rhs = self.parse_unary()?;
            lhs = self.expr(
                op,
                ExprKind::Call {
                    target: None,
                    function: function.to_string(),
                    args: vec![lhs, rhs],
                },
            );
        }
        Ok(lhs)
    }

    fn parse_unary(&mut self) -> PResult<Expr> {
        if self.is_punct("!") {
            let first = self.offset();
            let mut count = 0;
            while self.is_punct("!") {
                self.bump();
                count += 1;
            }
            let operand = self.parse_member()?;
            if count % 2 == 0 {
                return Ok(operand);
            }
            return Ok(self.expr(
                first,
                ExprKind::Call {
                    target: None,
                    function: "!_".to_string(),
                    args: vec![operand],
                },
            ));
        }
        if self.is_punct("-") {
            let first = self.offset();
            let mut count = 0;
            while self.is_punct("-") {
                // A single '-' directly before a number is part of the literal.
                if matches!(self.peek_at(1), Tok::Int(_) | Tok::Float(_))
                    && !matches!(self.peek_at(2), Tok::Punct(".") | Tok::Punct("["))
                {
                    break;
                }
                self.bump();
                count += 1;
            }
            let operand = self.parse_member()?;
            if count % 2 == 0 {
                return Ok(operand);
            }
            return Ok(self.expr(
                first,
                ExprKind::Call {
                    target: None,
                    function: "-_".to_string(),
                    args: vec![operand],
                },
            ));
        }
        self.parse_member()
    }

    fn parse_member(&mut self) -> PResult<Expr> {
        let mut operand = self.parse_primary()?;
        let mut chain = 0;
        loop {
            if self.is_punct(".") {
                chain += 1;
                self.chain_limit(chain)?;
                let op = self.bump().start;
                let optional = if self.is_punct("?") {
                    self.bump();
                    true
                } else {
                    false
                };
                let field_start = self.offset();
                let (name, escaped) = match self.peek().clone() {
                    Tok::Ident(name) => {
                        self.bump();
                        (name, false)
                    }
                    Tok::EscIdent(name) => {
                        self.bump();
                        (name, true)
                    }
                    // Keywords are valid field names in cel-go's grammar only as identifiers.
                    _ => {
                        self.syntax_error("{IDENTIFIER, ESC_IDENTIFIER}");
                        return Err(());
                    }
                };
                if !optional && !escaped && self.is_punct("(") {
                    let open = self.bump().start;
                    let args = self.parse_args(")")?;
                    operand = self.receiver_call_or_macro(open, name, operand, args)?;
                    continue;
                }
                if optional {
                    let field =
                        self.expr(field_start, ExprKind::Literal(Literal::String(name.into())));
                    operand = self.expr(
                        op,
                        ExprKind::Call {
                            target: None,
                            function: "_?._".to_string(),
                            args: vec![operand, field],
                        },
                    );
                } else {
                    operand = self.expr(
                        op,
                        ExprKind::Select {
                            operand: Box::new(operand),
                            field: name,
                            test_only: false,
                        },
                    );
                }
                continue;
            }
            if self.is_punct("[") {
                chain += 1;
                self.chain_limit(chain)?;
                let op = self.bump().start;
                let optional = if self.is_punct("?") {
                    self.bump();
                    true
                } else {
                    false
                };
                let index = self.parse_expr()?;
                self.expect("]", "']'")?;
                operand = self.expr(
                    op,
                    ExprKind::Call {
                        target: None,
                        function: if optional { "_[?_]" } else { "_[_]" }.to_string(),
                        args: vec![operand, index],
                    },
                );
                continue;
            }
            break;
        }
        Ok(operand)
    }

    fn parse_args(&mut self, close: &'static str) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.is_punct(close) {
            self.bump();
            return Ok(args);
        }
        loop {
            args.push(self.parse_expr()?);
            if self.is_punct(",") {
                self.bump();
                continue;
            }
            self.expect(close, &format!("{{'{close}', ','}}"))?;
            return Ok(args);
        }
    }

    fn parse_primary(&mut self) -> PResult<Expr> {
        let start = self.offset();
        match self.peek().clone() {
            Tok::Punct(".") => {
                // Leading-dot identifier or call.
                if let Tok::Ident(name) = self.peek_at(1).clone() {
                    self.bump();
                    let name_start = self.offset();
                    self.bump();
                    return self.ident_or_call(format!(".{name}"), &name, name_start);
                }
                self.bump();
                self.syntax_error("{IDENTIFIER}");
                Err(())
            }
            Tok::Ident(name) => {
                self.bump();
                self.ident_or_call(name.clone(), &name, start)
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.parse_expr()?;
                self.expect(")", "')'")?;
                Ok(e)
            }
            Tok::Punct("[") => {
                self.bump();
                self.enter()?;
                let mut elements = Vec::new();
                let mut optional_indices = Vec::new();
                loop {
                    if self.is_punct("]") {
                        self.bump();
                        break;
                    }
                    if self.is_punct("?") {
                        self.bump();
                        optional_indices.push(elements.len());
                    }
                    elements.push(self.parse_expr()?);
                    if self.is_punct(",") {
                        self.bump();
                        continue;
                    }
                    self.expect("]", "{']', ','}")?;
                    break;
                }
                self.leave();
                Ok(self.expr(
                    start,
                    ExprKind::List {
                        elements,
                        optional_indices,
                    },
                ))
            }
            Tok::Punct("{") => {
                self.bump();
                self.enter()?;
                let mut entries = Vec::new();
                loop {
                    if self.is_punct("}") {
                        self.bump();
                        break;
                    }
                    let optional = if self.is_punct("?") {
                        self.bump();
                        true
                    } else {
                        false
                    };
                    let key = self.parse_expr()?;
                    let colon = self.expect(":", "':'")?;
                    let value = self.parse_expr()?;
                    let id = self.new_id(colon);
                    entries.push(MapEntry {
                        id,
                        key,
                        value,
                        optional,
                    });
                    if self.is_punct(",") {
                        self.bump();
                        continue;
                    }
                    self.expect("}", "{'}', ','}")?;
                    break;
                }
                self.leave();
                Ok(self.expr(start, ExprKind::Map { entries }))
            }
            Tok::Int(raw) => {
                self.bump();
                self.int_literal(start, &raw, false)
            }
            Tok::Uint(raw) => {
                self.bump();
                let value = if let Some(hex) = raw.strip_prefix("0x") {
                    u64::from_str_radix(hex, 16).ok()
                } else {
                    raw.parse::<u64>().ok()
                };
                match value {
                    Some(v) => Ok(self.expr(start, ExprKind::Literal(Literal::Uint(v)))),
                    None => {
                        self.error(start, "invalid uint literal".to_string());
                        Err(())
                    }
                }
            }
            Tok::Float(raw) => {
                self.bump();
                self.float_literal(start, &raw, false)
            }
            Tok::Punct("-") => {
                // Negative numeric literal.
                self.bump();
                match self.peek().clone() {
                    Tok::Int(raw) => {
                        self.bump();
                        self.int_literal(start, &raw, true)
                    }
                    Tok::Float(raw) => {
                        self.bump();
                        self.float_literal(start, &raw, true)
                    }
                    _ => {
                        self.syntax_error(EXPECTED_PRIMARY);
                        Err(())
                    }
                }
            }
            Tok::Str(value) => {
                self.bump();
                match value {
                    Ok(s) => Ok(self.expr(start, ExprKind::Literal(Literal::String(s.into())))),
                    Err(message) => {
                        self.error(start, message);
                        Err(())
                    }
                }
            }
            Tok::Bytes(value) => {
                self.bump();
                match value {
                    Ok(b) => Ok(self.expr(start, ExprKind::Literal(Literal::Bytes(b.into())))),
                    Err(message) => {
                        self.error(start, message);
                        Err(())
                    }
                }
            }
            Tok::True => {
                self.bump();
                Ok(self.expr(start, ExprKind::Literal(Literal::Bool(true))))
            }
            Tok::False => {
                self.bump();
                Ok(self.expr(start, ExprKind::Literal(Literal::Bool(false))))
            }
            Tok::Null => {
                self.bump();
                Ok(self.expr(start, ExprKind::Literal(Literal::Null)))
            }
            _ => {
                let text = self.token_text(self.pos);
                let kind = if *self.peek() == Tok::Eof
                    || matches!(self.peek(), Tok::Punct(")" | "]" | "}" | "," | ":"))
                {
                    "mismatched input"
                } else {
                    "extraneous input"
                };
                self.error(
                    start,
                    format!("Syntax error: {kind} '{text}' expecting {EXPECTED_PRIMARY}"),
                );
                Err(())
            }
        }
    }

    fn int_literal(&mut self, start: usize, raw: &str, negative: bool) -> PResult<Expr> {
        let parsed = if let Some(hex) = raw.strip_prefix("0x") {
            let text = if negative {
                format!("-{hex}")
            } else {
                hex.to_string()
            };
            i64::from_str_radix(&text, 16).ok()
        } else {
            let text = if negative {
                format!("-{raw}")
            } else {
                raw.to_string()
            };
            text.parse::<i64>().ok()
        };
        match parsed {
            Some(v) => Ok(self.expr(start, ExprKind::Literal(Literal::Int(v)))),
            None => {
                self.error(start, "invalid int literal".to_string());
                Err(())
            }
        }
    }

    fn float_literal(&mut self, start: usize, raw: &str, negative: bool) -> PResult<Expr> {
        match raw.parse::<f64>() {
            Ok(v) => Ok(self.expr(
                start,
                ExprKind::Literal(Literal::Double(if negative { -v } else { v })),
            )),
            Err(_) => {
                self.error(start, "invalid double literal".to_string());
                Err(())
            }
        }
    }

    fn ident_or_call(&mut self, full: String, bare: &str, start: usize) -> PResult<Expr> {
        if self.is_punct("(") {
            if RESERVED_IDENTIFIERS.contains(&bare) {
                self.error(start, format!("reserved identifier: {bare}"));
                return Err(());
            }
            let open = self.bump().start;
            let args = self.parse_args(")")?;
            return self.global_call_or_macro(open, full, args);
        }
        // Message construction `Name{...}` / `a.b.Name{...}` is only reachable from an
        // identifier chain; this environment declares no message types.
        if self.is_punct("{") {
            let open = self.bump().start;
            let mut fields = Vec::new();
            loop {
                if self.is_punct("}") {
                    self.bump();
                    break;
                }
                let optional = if self.is_punct("?") {
                    self.bump();
                    true
                } else {
                    false
                };
                let name = match self.peek().clone() {
                    Tok::Ident(n) | Tok::EscIdent(n) => {
                        self.bump();
                        n
                    }
                    _ => {
                        self.syntax_error("{'?', IDENTIFIER, ESC_IDENTIFIER}");
                        return Err(());
                    }
                };
                let colon = self.expect(":", "':'")?;
                let value = self.parse_expr()?;
                let id = self.new_id(colon);
                fields.push(StructField {
                    id,
                    name,
                    value,
                    optional,
                });
                if self.is_punct(",") {
                    self.bump();
                    continue;
                }
                self.expect("}", "{'}', ','}")?;
                break;
            }
            return Ok(self.expr(
                open,
                ExprKind::Struct {
                    type_name: full,
                    fields,
                },
            ));
        }
        if RESERVED_IDENTIFIERS.contains(&bare) {
            self.error(start, format!("reserved identifier: {bare}"));
            return Err(());
        }
        Ok(self.expr(start, ExprKind::Ident(full)))
    }

    fn global_call_or_macro(
        &mut self,
        open: usize,
        function: String,
        args: Vec<Expr>,
    ) -> PResult<Expr> {
        if function == "has" && args.len() == 1 {
            let mut args = args;
            let arg = args.pop().unwrap_or_else(unreachable_expr);
            return match arg.kind {
                ExprKind::Select {
                    operand,
                    field,
                    test_only: false,
                } => Ok(self.expr(
                    open,
                    ExprKind::Select {
                        operand,
                        field,
                        test_only: true,
                    },
                )),
                _ => {
                    let offset = self.offsets[arg.id as usize] as usize;
                    self.error(offset, "invalid argument to has() macro".to_string());
                    Err(())
                }
            };
        }
        Ok(self.expr(
            open,
            ExprKind::Call {
                target: None,
                function,
                args,
            },
        ))
    }

    fn arg_offset(&self, e: &Expr) -> usize {
        self.offsets[e.id as usize] as usize
    }

    fn simple_name(&mut self, e: &Expr, message: &str) -> PResult<String> {
        match &e.kind {
            ExprKind::Ident(name) => {
                if name == ACCUMULATOR || name == "__result__" {
                    let offset = self.arg_offset(e);
                    self.error(
                        offset,
                        "iteration variable overwrites accumulator variable".to_string(),
                    );
                    return Err(());
                }
                Ok(name.clone())
            }
            _ => {
                let offset = self.arg_offset(e);
                self.error(offset, message.to_string());
                Err(())
            }
        }
    }

    fn receiver_call_or_macro(
        &mut self,
        open: usize,
        function: String,
        target: Expr,
        args: Vec<Expr>,
    ) -> PResult<Expr> {
        let n = args.len();
        match (function.as_str(), n) {
            ("all" | "exists" | "exists_one" | "existsOne", 2) => {
                let var = self.simple_name(&args[0], "argument must be a simple name")?;
                let mut args = args;
                let predicate = args.pop().unwrap_or_else(unreachable_expr);
                Ok(self.quantifier(open, &function, target, var, None, predicate))
            }
            ("all" | "exists" | "exists_one" | "existsOne", 3) => {
                let (v1, v2) = self.two_vars(&args[0], &args[1])?;
                let mut args = args;
                let predicate = args.pop().unwrap_or_else(unreachable_expr);
                Ok(self.quantifier(open, &function, target, v1, Some(v2), predicate))
            }
            ("map", 2 | 3) => {
                let var = self.simple_name(&args[0], "argument is not an identifier")?;
                let mut args = args.into_iter().skip(1);
                let (filter, transform) = if n == 3 {
                    let f = args.next();
                    (f, args.next())
                } else {
                    (None, args.next())
                };
                let transform = transform.unwrap_or_else(unreachable_expr);
                Ok(self.map_like(open, target, var, None, filter, transform))
            }
            ("filter", 2) => {
                let var = self.simple_name(&args[0], "argument is not an identifier")?;
                let mut args = args.into_iter();
                let var_expr = args.next().unwrap_or_else(unreachable_expr);
                let predicate = args.next().unwrap_or_else(unreachable_expr);
                Ok(self.map_like(open, target, var, None, Some(predicate), var_expr))
            }
            ("transformList", 3 | 4) => {
                let (v1, v2) = self.two_vars(&args[0], &args[1])?;
                let mut rest = args.into_iter().skip(2);
                let (filter, transform) = if n == 4 {
                    let f = rest.next();
                    (f, rest.next())
                } else {
                    (None, rest.next())
                };
                let transform = transform.unwrap_or_else(unreachable_expr);
                Ok(self.map_like(open, target, v1, Some(v2), filter, transform))
            }
            ("transformMap" | "transformMapEntry", 3 | 4) => {
                let (v1, v2) = self.two_vars(&args[0], &args[1])?;
                let mut rest = args.into_iter().skip(2);
                let (filter, transform) = if n == 4 {
                    let f = rest.next();
                    (f, rest.next())
                } else {
                    (None, rest.next())
                };
                let transform = transform.unwrap_or_else(unreachable_expr);
                Ok(self.transform_map(open, &function, target, v1, v2, filter, transform))
            }
            ("bind", 3) if matches!(&target.kind, ExprKind::Ident(n) if n == "cel") => {
                let var = self.simple_name(
                    &args[0],
                    "cel.bind() variable names must be simple identifiers",
                )?;
                let mut args = args.into_iter().skip(1);
                let init = args.next().unwrap_or_else(unreachable_expr);
                let body = args.next().unwrap_or_else(unreachable_expr);
                let empty = self.expr(
                    open,
                    ExprKind::List {
                        elements: vec![],
                        optional_indices: vec![],
                    },
                );
                let cond = self.expr(open, ExprKind::Literal(Literal::Bool(false)));
                let step = self.expr(open, ExprKind::Ident(var.clone()));
                Ok(self.expr(
                    open,
                    ExprKind::Comprehension(Box::new(Comprehension {
                        iter_range: empty,
                        iter_var: "#unused".to_string(),
                        iter_var2: None,
                        accu_var: var,
                        accu_init: init,
                        loop_condition: cond,
                        loop_step: step,
                        result: body,
                    })),
                ))
            }
            ("optMap" | "optFlatMap", 2) => {
                let message = format!("{function}() variable name must be a simple identifier");
                let var = self.simple_name(&args[0], &message)?;
                let mut args = args.into_iter().skip(1);
                let body = args.next().unwrap_or_else(unreachable_expr);
                // target.hasValue() ? [optional.of](cel.bind(var, target.value(), body)) : optional.none()
                let has_value = self.expr(
                    open,
                    ExprKind::Call {
                        target: Some(Box::new(target.clone())),
                        function: "hasValue".to_string(),
                        args: vec![],
                    },
                );
                let value = self.expr(
                    open,
                    ExprKind::Call {
                        target: Some(Box::new(target)),
                        function: "value".to_string(),
                        args: vec![],
                    },
                );
                let empty = self.expr(
                    open,
                    ExprKind::List {
                        elements: vec![],
                        optional_indices: vec![],
                    },
                );
                let cond = self.expr(open, ExprKind::Literal(Literal::Bool(false)));
                let step = self.expr(open, ExprKind::Ident(var.clone()));
                let bound = self.expr(
                    open,
                    ExprKind::Comprehension(Box::new(Comprehension {
                        iter_range: empty,
                        iter_var: "#unused".to_string(),
                        iter_var2: None,
                        accu_var: var,
                        accu_init: value,
                        loop_condition: cond,
                        loop_step: step,
                        result: body,
                    })),
                );
                let some = if function == "optMap" {
                    self.call(open, "optional.of", vec![bound])
                } else {
                    bound
                };
                let none = self.call(open, "optional.none", vec![]);
                Ok(self.call(open, "_?_:_", vec![has_value, some, none]))
            }
            ("sortBy", 2) => {
                if !matches!(
                    target.kind,
                    ExprKind::List { .. }
                        | ExprKind::Select { .. }
                        | ExprKind::Ident(_)
                        | ExprKind::Comprehension(_)
                        | ExprKind::Call { .. }
                ) {
                    let offset = self.arg_offset(&target);
                    self.error(offset, "sortBy can only be applied to a list, identifier, comprehension, call or select expression".to_string());
                    return Err(());
                }
                let var = self.simple_name(&args[0], "argument is not an identifier")?;
                let mut args = args.into_iter().skip(1);
                let key = args.next().unwrap_or_else(unreachable_expr);
                let input = "@__sortBy_input__".to_string();
                let input_ident = self.expr(open, ExprKind::Ident(input.clone()));
                let mapped = self.map_like(open, input_ident, var, None, None, key);
                let input_ident2 = self.expr(open, ExprKind::Ident(input.clone()));
                let call = self.expr(
                    open,
                    ExprKind::Call {
                        target: Some(Box::new(input_ident2)),
                        function: "@sortByAssociatedKeys".to_string(),
                        args: vec![mapped],
                    },
                );
                let empty = self.expr(
                    open,
                    ExprKind::List {
                        elements: vec![],
                        optional_indices: vec![],
                    },
                );
                let cond = self.expr(open, ExprKind::Literal(Literal::Bool(false)));
                let step = self.expr(open, ExprKind::Ident(input.clone()));
                Ok(self.expr(
                    open,
                    ExprKind::Comprehension(Box::new(Comprehension {
                        iter_range: empty,
                        iter_var: "#unused".to_string(),
                        iter_var2: None,
                        accu_var: input,
                        accu_init: target,
                        loop_condition: cond,
                        loop_step: step,
                        result: call,
                    })),
                ))
            }
            _ => Ok(self.expr(
                open,
                ExprKind::Call {
                    target: Some(Box::new(target)),
                    function,
                    args,
                },
            )),
        }
    }

    fn two_vars(&mut self, a: &Expr, b: &Expr) -> PResult<(String, String)> {
        let v1 = self.simple_name(a, "argument must be a simple name")?;
        let v2 = self.simple_name(b, "argument must be a simple name")?;
        if v1 == v2 {
            let offset = self.arg_offset(b);
            self.error(offset, format!("duplicate variable name: {v1}"));
            return Err(());
        }
        Ok((v1, v2))
    }

    fn accu(&mut self, at: usize) -> Expr {
        self.expr(at, ExprKind::Ident(ACCUMULATOR.to_string()))
    }

    fn call(&mut self, at: usize, function: &str, args: Vec<Expr>) -> Expr {
        self.expr(
            at,
            ExprKind::Call {
                target: None,
                function: function.to_string(),
                args,
            },
        )
    }

    fn quantifier(
        &mut self,
        at: usize,
        function: &str,
        target: Expr,
        var: String,
        var2: Option<String>,
        predicate: Expr,
    ) -> Expr {
        let (init, condition, step, result) = match function {
            "all" => {
                let init = self.expr(at, ExprKind::Literal(Literal::Bool(true)));
                let a = self.accu(at);
                let cond = self.call(at, "@not_strictly_false", vec![a]);
                let a = self.accu(at);
                let step = self.call(at, "_&&_", vec![a, predicate]);
                let result = self.accu(at);
                (init, cond, step, result)
            }
            "exists" => {
                let init = self.expr(at, ExprKind::Literal(Literal::Bool(false)));
                let a = self.accu(at);
                let not = self.call(at, "!_", vec![a]);
                let cond = self.call(at, "@not_strictly_false", vec![not]);
                let a = self.accu(at);
                let step = self.call(at, "_||_", vec![a, predicate]);
                let result = self.accu(at);
                (init, cond, step, result)
            }
            _ => {
                let init = self.expr(at, ExprKind::Literal(Literal::Int(0)));
                let cond = self.expr(at, ExprKind::Literal(Literal::Bool(true)));
                let a = self.accu(at);
                let one = self.expr(at, ExprKind::Literal(Literal::Int(1)));
                let add = self.call(at, "_+_", vec![a, one]);
                let a = self.accu(at);
                let step = self.call(at, "_?_:_", vec![predicate, add, a]);
                let a = self.accu(at);
                let one = self.expr(at, ExprKind::Literal(Literal::Int(1)));
                let result = self.call(at, "_==_", vec![a, one]);
                (init, cond, step, result)
            }
        };
        self.expr(
            at,
            ExprKind::Comprehension(Box::new(Comprehension {
                iter_range: target,
                iter_var: var,
                iter_var2: var2,
                accu_var: ACCUMULATOR.to_string(),
                accu_init: init,
                loop_condition: condition,
                loop_step: step,
                result,
            })),
        )
    }

    fn map_like(
        &mut self,
        at: usize,
        target: Expr,
        var: String,
        var2: Option<String>,
        filter: Option<Expr>,
        transform: Expr,
    ) -> Expr {
        let init = self.expr(
            at,
            ExprKind::List {
                elements: vec![],
                optional_indices: vec![],
            },
        );
        let cond = self.expr(at, ExprKind::Literal(Literal::Bool(true)));
        let a = self.accu(at);
        let single = self.expr(
            at,
            ExprKind::List {
                elements: vec![transform],
                optional_indices: vec![],
            },
        );
        let mut step = self.call(at, "_+_", vec![a, single]);
        if let Some(filter) = filter {
            let a = self.accu(at);
            step = self.call(at, "_?_:_", vec![filter, step, a]);
        }
        let result = self.accu(at);
        self.expr(
            at,
            ExprKind::Comprehension(Box::new(Comprehension {
                iter_range: target,
                iter_var: var,
                iter_var2: var2,
                accu_var: ACCUMULATOR.to_string(),
                accu_init: init,
                loop_condition: cond,
                loop_step: step,
                result,
            })),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn transform_map(
        &mut self,
        at: usize,
        function: &str,
        target: Expr,
        var: String,
        var2: String,
        filter: Option<Expr>,
        transform: Expr,
    ) -> Expr {
        let init = self.expr(at, ExprKind::Map { entries: vec![] });
        let cond = self.expr(at, ExprKind::Literal(Literal::Bool(true)));
        let a = self.accu(at);
        let mut step = if function == "transformMap" {
            let key = self.expr(at, ExprKind::Ident(var.clone()));
            self.call(at, "cel.@mapInsert", vec![a, key, transform])
        } else {
            self.call(at, "cel.@mapInsert", vec![a, transform])
        };
        if let Some(filter) = filter {
            let a = self.accu(at);
            step = self.call(at, "_?_:_", vec![filter, step, a]);
        }
        let result = self.accu(at);
        self.expr(
            at,
            ExprKind::Comprehension(Box::new(Comprehension {
                iter_range: target,
                iter_var: var,
                iter_var2: Some(var2),
                accu_var: ACCUMULATOR.to_string(),
                accu_init: init,
                loop_condition: cond,
                loop_step: step,
                result,
            })),
        )
    }
}

fn unreachable_expr() -> Expr {
    Expr {
        id: 0,
        kind: ExprKind::Literal(Literal::Null),
    }
}

//! Cutting a YAML stream into documents without parsing it.
//!
//! Documents are parsed one by one (and in parallel) rather than as one stream: each
//! gets its own resource budget, a bad document does not hide the others, and the
//! work spreads over cores. The cut is exact because YAML forbids a line that starts
//! with `---` or `...` followed by white space (or the end of the line) anywhere
//! inside a document's content: such a line always marks a document boundary.

/// A piece of the input holding at most one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk<'a> {
    pub(crate) text: &'a str,
    /// 1-based line of `text`'s first line in the whole input.
    pub(crate) first_line: u32,
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Splits `text` at document markers. Returns `None` when the stream uses
/// directives (`%YAML`, `%TAG`), whose scope the cut could break; the caller then
/// parses the stream as a whole.
pub(crate) fn split_documents(text: &str) -> Option<Vec<Chunk<'_>>> {
    // Where chunks start: at a `---` line, and after a `...` line.
    let mut cuts = vec![0];
    for start in lines_starting_with_marker_bytes(text.as_bytes()) {
        let line = &text[start..];
        let line = line.find('\n').map_or(line, |end| &line[..=end]);
        if line.starts_with('%') {
            return None;
        }
        if is_marker(line, "---") {
            cuts.push(start);
        } else if is_marker(line, "...") {
            cuts.push(start + line.len());
        }
    }
    cuts.push(text.len());
    let mut chunks = Vec::new();
    let mut first_line = 1u32;
    let mut counted_to = 0;
    for window in cuts.windows(2) {
        let (start, end) = (window[0], window[1]);
        if end <= start {
            continue;
        }
        let newlines = count_newlines(&text.as_bytes()[counted_to..start]);
        first_line = first_line.saturating_add(u32::try_from(newlines).unwrap_or(u32::MAX));
        counted_to = start;
        chunks.push(Chunk {
            text: &text[start..end],
            first_line,
        });
    }
    Some(chunks)
}

/// Whether a line starting with `byte` may be a marker or a directive.
fn is_marker_byte(byte: u8) -> bool {
    matches!(byte, b'-' | b'.' | b'%')
}

/// The offsets of the lines of `bytes` that start with `-`, `.` or `%`, in order: the only
/// lines [`split_documents`] has to look at. A block of 64 bytes without a line break is
/// passed over by a branch-free check that the compiler turns into vector compares; going
/// line by line cost more than an instruction a byte of a JSON stream, whose lines are long.
fn lines_starting_with_marker_bytes(bytes: &[u8]) -> Vec<usize> {
    const BLOCK: usize = 64;
    let mut starts = Vec::new();
    let mut line_starts_at = |start: usize| {
        if bytes.get(start).is_some_and(|&first| is_marker_byte(first)) {
            starts.push(start);
        }
    };
    line_starts_at(0);
    let mut blocks = bytes.chunks_exact(BLOCK);
    let mut from = 0;
    for block in &mut blocks {
        if block.iter().fold(0u8, |any, &b| any | u8::from(b == b'\n')) != 0 {
            for (i, _) in block.iter().enumerate().filter(|(_, b)| **b == b'\n') {
                line_starts_at(from + i + 1);
            }
        }
        from += BLOCK;
    }
    for (i, _) in blocks
        .remainder()
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
    {
        line_starts_at(from + i + 1);
    }
    starts
}

/// Cuts a chunk holding a stream of JSON values into at most `parts` pieces of about equal
/// size, each starting where a line starts with `{`, so that they can be decoded in parallel.
///
/// The cut is a guess: a `{` at the start of a line may sit inside a string or a multi-line
/// value. The caller accepts the pieces only when every one of them decodes as a complete
/// stream of JSON values; then the cut points are value boundaries of the whole stream, and
/// the pieces decode to exactly what the whole would have. Returns fewer pieces (possibly
/// one) when no cut point is found.
pub(crate) fn split_json_stream(chunk: Chunk<'_>, parts: usize) -> Vec<Chunk<'_>> {
    let text = chunk.text;
    let mut cuts = vec![0usize];
    for k in 1..parts.max(1) {
        // A line break just before the target counts: the piece may start right at it.
        let target = ((text.len() / parts) * k).saturating_sub(1);
        let mut from = target.max(cuts.last().copied().unwrap_or(0));
        while !text.is_char_boundary(from) {
            from += 1;
        }
        match text.get(from..).and_then(|rest| rest.find("\n{")) {
            // The piece starts at the `{`, after the line break.
            Some(at) => cuts.push(from + at + 1),
            None => break,
        }
    }
    cuts.push(text.len());
    let mut pieces = Vec::with_capacity(cuts.len() - 1);
    let mut first_line = chunk.first_line;
    for window in cuts.windows(2) {
        let piece = &text[window[0]..window[1]];
        pieces.push(Chunk {
            text: piece,
            first_line,
        });
        let newlines = count_newlines(piece.as_bytes());
        first_line = first_line.saturating_add(u32::try_from(newlines).unwrap_or(u32::MAX));
    }
    pieces
}

/// The line breaks in `bytes`. Counted 64 bytes at a time into a byte-sized sum, which the
/// compiler turns into vector compares; a byte-wise count was a visible part of loading a
/// large JSON stream, whose every byte is counted once to number the lines of its documents.
pub(crate) fn count_newlines(bytes: &[u8]) -> usize {
    let mut chunks = bytes.chunks_exact(64);
    let mut count = 0;
    for chunk in &mut chunks {
        count += usize::from(chunk.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>());
    }
    count + chunks.remainder().iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_line_breaks_at_any_length() {
        for len in [0, 1, 63, 64, 65, 200] {
            let text: String = (0..len)
                .map(|i| if i % 3 == 0 { '\n' } else { 'x' })
                .collect();
            let expected = text.bytes().filter(|&b| b == b'\n').count();
            assert_eq!(count_newlines(text.as_bytes()), expected, "{len}");
        }
        assert_eq!(count_newlines(&[b'\n'; 64]), 64);
    }

    fn cut(text: &str) -> Vec<(u32, &str)> {
        split_documents(text)
            .unwrap()
            .into_iter()
            .map(|c| (c.first_line, c.text))
            .collect()
    }

    #[test]
    fn cuts_at_markers_only() {
        assert_eq!(
            cut("a: 1\n---\nb: 2\n"),
            vec![(1, "a: 1\n"), (2, "---\nb: 2\n")]
        );
        assert_eq!(
            cut("---\na: 1\n--- \nb: 2"),
            vec![(1, "---\na: 1\n"), (3, "--- \nb: 2")]
        );
        assert_eq!(
            cut("--- {a: 1}\n---\n"),
            vec![(1, "--- {a: 1}\n"), (2, "---\n")]
        );
        // not markers: indented, or followed by other characters
        assert_eq!(
            cut("a: |\n  ---\nb: ---x\n----\n"),
            vec![(1, "a: |\n  ---\nb: ---x\n----\n")]
        );
        assert_eq!(
            cut("a: 1\n...\nb: 2\n"),
            vec![(1, "a: 1\n...\n"), (3, "b: 2\n")]
        );
        assert_eq!(
            cut("a: 1\r\n---\r\nb: 2\r\n"),
            vec![(1, "a: 1\r\n"), (2, "---\r\nb: 2\r\n")]
        );
        assert_eq!(cut(""), vec![]);
    }

    fn json_pieces(text: &str, parts: usize) -> Vec<(u32, &str)> {
        let chunk = Chunk {
            text,
            first_line: 3,
        };
        split_json_stream(chunk, parts)
            .into_iter()
            .map(|c| (c.first_line, c.text))
            .collect()
    }

    #[test]
    fn json_streams_are_cut_where_a_line_starts_a_mapping() {
        let text = "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n";
        assert_eq!(
            json_pieces(text, 2),
            vec![(3, "{\"a\":1}\n{\"b\":2}\n"), (5, "{\"c\":3}\n{\"d\":4}\n")]
        );
        // The pieces always cover the text, in order.
        for parts in 1..6 {
            let joined: String = json_pieces(text, parts).iter().map(|p| p.1).collect();
            assert_eq!(joined, text);
        }
        // No line starts with `{` after the midpoint: one piece.
        assert_eq!(json_pieces("{\"a\":\n 1}", 2), vec![(3, "{\"a\":\n 1}")]);
    }

    /// The cut line by line, as it was written first: the reference for the block scan.
    fn split_line_by_line(text: &str) -> Option<Vec<Chunk<'_>>> {
        let mut chunks = Vec::new();
        let (mut start, mut start_line, mut offset, mut line_no) = (0, 1u32, 0, 1u32);
        let mut cut_before_next = false;
        for line in text.split_inclusive('\n') {
            if line.starts_with('%') {
                return None;
            }
            if (cut_before_next || is_marker(line, "---")) && offset > start {
                chunks.push(Chunk {
                    text: &text[start..offset],
                    first_line: start_line,
                });
                (start, start_line) = (offset, line_no);
            }
            cut_before_next = is_marker(line, "...");
            offset += line.len();
            line_no += 1;
        }
        if offset > start {
            chunks.push(Chunk {
                text: &text[start..offset],
                first_line: start_line,
            });
        }
        Some(chunks)
    }

    /// Streams of lines drawn from markers, near-markers, directives and long plain lines,
    /// so that line starts fall at every place of a 64-byte block: the same chunks and line
    /// numbers as the line-by-line cut.
    #[test]
    fn block_scan_cuts_like_the_line_by_line_cut() {
        let lines = [
            "---\n",
            "--- x\n",
            "---x\n",
            "...\n",
            "... \n",
            "..\n",
            "-\n",
            ".\n",
            "%YAML 1.2\n",
            "a: 1\n",
            "\n",
            "{\"kind\":\"Pod\",\"x\":\"----------\"}\n",
            "---",
            "...",
            "-",
        ];
        let (mut seed, mut cut, mut refused) = (7u64, 0, 0);
        for case in 0..3000 {
            let mut text = "x".repeat(case % 70);
            for _ in 0..case % 13 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let pick = (seed >> 33) as usize % (lines.len() + 1);
                match lines.get(pick) {
                    Some(line) => text.push_str(line),
                    // a plain line of any length
                    None => text.push_str(&format!("{}\n", "y".repeat((seed >> 20) as usize % 90))),
                }
            }
            let split = split_documents(&text);
            assert_eq!(split, split_line_by_line(&text), "{text:?}");
            match split {
                Some(chunks) => cut += usize::from(chunks.len() > 1),
                None => refused += 1,
            }
        }
        assert!(cut > 500 && refused > 100, "{cut} cut, {refused} refused");
    }

    #[test]
    fn directives_disable_the_cut() {
        assert!(split_documents("%YAML 1.2\n---\na: 1\n").is_none());
    }
}

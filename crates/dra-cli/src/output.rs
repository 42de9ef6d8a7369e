//! Everything that reaches the terminal: data on stdout, diagnostics on stderr.
//!
//! Writes go through [`Out`], which reports a closed stdout (e.g. `dra simulate | head`) as
//! [`Failure::BrokenPipe`] so `main` can exit quietly and successfully, as ripgrep does.

use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::Failure;
use crate::cli::{ColorChoice, OutputFormat};

/// Where and how to print.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    pub format: OutputFormat,
    /// Colour on stderr.
    pub color: bool,
}

impl Out {
    pub fn new(format: OutputFormat, color: ColorChoice) -> Out {
        let color = match color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && io::stderr().is_terminal()
            }
        };
        Out { format, color }
    }

    /// Writes text to stdout.
    pub fn text(&self, text: &str) -> Result<(), Failure> {
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|_| stdout.flush())
            .map_err(Failure::from_io)
    }

    /// Writes a value as JSON or YAML (per `-o`); `table` callers print text themselves.
    pub fn data<T: Serialize>(&self, value: &T) -> Result<(), Failure> {
        match self.format {
            OutputFormat::Yaml => {
                let text = serde_saphyr::to_string(value)
                    .map_err(|e| Failure::Internal(format!("cannot render YAML: {e}")))?;
                self.text(&text)
            }
            OutputFormat::Json | OutputFormat::Table => write_json(
                io::BufWriter::with_capacity(JSON_BUFFER, io::stdout().lock()),
                value,
            ),
        }
    }

    /// A diagnostic line on stderr. `level` is `error`, `warning` or `note`.
    pub fn diagnostic(&self, level: &str, message: &str) {
        let label = if self.color {
            let code = match level {
                "error" => "31",
                "warning" => "33",
                _ => "36",
            };
            format!("\x1b[1;{code}m{level}\x1b[0m")
        } else {
            level.to_string()
        };
        // A closed stderr leaves nowhere to report anything.
        let _ = writeln!(io::stderr().lock(), "{label}: {message}");
    }
}

/// The JSON output's buffer: as large as a block that shares its mimalloc page
/// ([`crate::SMALL_BLOCK_MAX`]).
const JSON_BUFFER: usize = crate::SMALL_BLOCK_MAX;

/// Standard output with the JSON output's buffer, for [`write_json`] on another thread than
/// the one that makes it.
pub fn json_stdout() -> io::BufWriter<io::Stdout> {
    io::BufWriter::with_capacity(JSON_BUFFER, io::stdout())
}

/// Writes `value` to `writer` as [`Out::data`] writes JSON: streamed (a large simulation's
/// document is as big as its input, and need not be held twice), in serde_json's pretty
/// format, with a final line break. Our types always serialise, so only IO can fail midway.
pub fn write_json<W: Write, T: Serialize>(mut writer: W, value: &T) -> Result<(), Failure> {
    let mut serializer = serde_json::Serializer::with_formatter(&mut writer, PrettyJson::default());
    value
        .serialize(&mut serializer)
        .map_err(|e| match e.io_error_kind() {
            Some(kind) => Failure::from_io(io::Error::from(kind)),
            None => Failure::Internal(format!("cannot render JSON: {e}")),
        })?;
    writer
        .write_all(b"\n")
        .and_then(|_| writer.flush())
        .map_err(Failure::from_io)
}

/// serde_json's pretty format (two-space indent, `": "` after keys), byte for byte, with each
/// line break and its indentation written at once. serde_json writes the indentation one
/// level at a time; a simulation's document is millions of short lines several levels deep,
/// and those small writes were a visible part of printing it.
#[derive(Debug, Default)]
struct PrettyJson {
    depth: usize,
    has_value: bool,
}

/// A line break followed by the indentation of [`PRETTY_JSON_DEPTH`] levels.
const NEWLINE_AND_SPACES: &[u8; 1 + 2 * PRETTY_JSON_DEPTH] = &{
    let mut bytes = [b' '; 1 + 2 * PRETTY_JSON_DEPTH];
    bytes[0] = b'\n';
    bytes
};
/// Deeper documents are indented a level at a time beyond this.
const PRETTY_JSON_DEPTH: usize = 32;

impl PrettyJson {
    fn new_line<W: ?Sized + Write>(&self, writer: &mut W) -> io::Result<()> {
        let at_once = self.depth.min(PRETTY_JSON_DEPTH);
        writer.write_all(&NEWLINE_AND_SPACES[..1 + 2 * at_once])?;
        for _ in at_once..self.depth {
            writer.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Opens a list or a mapping with `bracket`.
    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    /// Closes a list or a mapping with `bracket`, on a line of its own unless it was empty.
    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.new_line(writer)?;
        }
        writer.write_all(bracket)
    }

    /// Starts an entry of a list or a mapping on a new line.
    fn entry<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if !first {
            writer.write_all(b",")?;
        }
        self.new_line(writer)
    }
}

impl serde_json::ser::Formatter for PrettyJson {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.entry(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.entry(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty(value: &serde_json::Value) -> String {
        let mut bytes = Vec::new();
        let mut serializer =
            serde_json::Serializer::with_formatter(&mut bytes, PrettyJson::default());
        value.serialize(&mut serializer).expect("serialises");
        String::from_utf8(bytes).expect("UTF-8")
    }

    #[test]
    fn pretty_json_is_serde_jsons_pretty_format() {
        let mut deep = serde_json::json!({"leaf": [1, {"x": null}], "empty": {}});
        for level in 0..(PRETTY_JSON_DEPTH + 5) {
            deep = if level % 2 == 0 {
                serde_json::json!({"k": deep, "n": level, "s": "a \"quoted\"\nline"})
            } else {
                serde_json::json!([deep, [], {}, true, 1.5])
            };
        }
        for value in [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!([[], [[]], {"a": {}}]),
            serde_json::json!({"b": [1, 2, {"c": "d"}], "a": -0.25}),
            deep,
        ] {
            assert_eq!(
                pretty(&value),
                serde_json::to_string_pretty(&value).expect("serialises")
            );
        }
    }
}

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
            OutputFormat::Json | OutputFormat::Table => {
                // Streamed: a large simulation's document is as big as its input, and need not
                // be held twice. Our types always serialise, so only IO can fail midway.
                let mut writer = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
                serde_json::to_writer_pretty(&mut writer, value).map_err(|e| {
                    match e.io_error_kind() {
                        Some(kind) => Failure::from_io(io::Error::from(kind)),
                        None => Failure::Internal(format!("cannot render JSON: {e}")),
                    }
                })?;
                writer
                    .write_all(b"\n")
                    .and_then(|_| writer.flush())
                    .map_err(Failure::from_io)
            }
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

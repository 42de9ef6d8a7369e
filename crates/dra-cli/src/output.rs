//! Everything that reaches the terminal: data on stdout, diagnostics on stderr.
//!
//! Writes go through [`Out`], which reports a closed stdout (e.g. `dra simulate | head`) as
//! [`Failure::BrokenPipe`] so `main` can exit quietly and successfully, as ripgrep does.

use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::Failure;
use crate::cli::{ColorChoice, OutputFormat};
use crate::pretty_json::{JsonError, PrettyWriter};

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
            OutputFormat::Json | OutputFormat::Table => write_json(StdoutDirect::new(), value),
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

/// Standard output written straight to its file descriptor, for a caller that buffers its
/// writes itself ([`write_json`], on any thread; `dra gen` through a `BufWriter`).
///
/// The standard library's `Stdout` buffers by lines: a buffer of many lines goes out up to
/// its last line break, and the rest is held until the next write, which writes it on its
/// own first. Every buffer of a JSON document written through it was two system calls (90
/// instead of 45 for gpu-nic's 369 KB, `perf trace`). Here each buffer is one: a duplicate of
/// the descriptor, as a file (closing it leaves standard output open). Where the descriptor
/// cannot be duplicated (or off Unix), the standard `Stdout`.
#[derive(Debug)]
pub enum StdoutDirect {
    File(std::fs::File),
    Std(io::Stdout),
}

impl StdoutDirect {
    pub fn new() -> StdoutDirect {
        let stdout = io::stdout();
        // Whatever went through the standard handle comes first (usually nothing: then no
        // system call).
        if stdout.lock().flush().is_err() {
            return StdoutDirect::Std(stdout);
        }
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            if let Ok(fd) = stdout.as_fd().try_clone_to_owned() {
                return StdoutDirect::File(std::fs::File::from(fd));
            }
        }
        StdoutDirect::Std(stdout)
    }
}

impl Write for StdoutDirect {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            StdoutDirect::File(file) => file.write(buf),
            StdoutDirect::Std(stdout) => stdout.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            StdoutDirect::File(file) => file.write_all(buf),
            StdoutDirect::Std(stdout) => stdout.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            StdoutDirect::File(file) => file.flush(),
            StdoutDirect::Std(stdout) => stdout.flush(),
        }
    }
}

/// Writes `value` to `writer` as [`Out::data`] writes JSON: streamed (a large simulation's
/// document is as big as its input, and need not be held twice), in serde_json's pretty
/// format ([`crate::pretty_json`]), with a final line break. Our types always serialise, so
/// only IO can fail midway.
pub fn write_json<W: Write, T: Serialize>(writer: W, value: &T) -> Result<(), Failure> {
    let mut json = PrettyWriter::with_capacity(JSON_BUFFER, writer);
    value.serialize(&mut json).map_err(|e| match e {
        JsonError::Io(error) => Failure::from_io(error),
        JsonError::Message(message) => Failure::Internal(format!("cannot render JSON: {message}")),
    })?;
    json.raw(b"\n");
    json.finish().map_err(Failure::from_io)?;
    Ok(())
}

//! `--timings`: how long each phase of a command took, printed on stderr when the command
//! ends. Marks cost one atomic load when the flag is off, so they stay in the code for the
//! next performance question (BENCHMARKS.md uses them to split a run into its phases).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);
static MARKS: Mutex<Vec<Mark>> = Mutex::new(Vec::new());

/// The end of a phase: its name, when, and the process's memory then, where the system
/// tells it.
type Mark = (&'static str, Instant, Option<Memory>);

/// Resident memory in MiB: all of it, and the anonymous part (heap and stacks, as opposed to
/// the binary's pages): fresh anonymous pages are what the kernel has to zero, which
/// BENCHMARKS.md found to be much of a small run's time.
#[derive(Clone, Copy)]
struct Memory {
    resident: f64,
    anonymous: Option<f64>,
}

/// Starts recording: the first mark's time is measured from here.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
    mark("start");
}

/// Records the end of the phase `name`.
pub fn mark(name: &'static str) {
    if ENABLED.load(Ordering::Relaxed) {
        let now = Instant::now();
        let memory = memory();
        if let Ok(mut marks) = MARKS.lock() {
            marks.push((name, now, memory));
        }
    }
}

/// The recorded phases as `timing: name milliseconds [MiB resident[, MiB anonymous]]` lines,
/// then the total; empty when not enabled.
pub fn report() -> String {
    let marks = match MARKS.lock() {
        Ok(marks) => marks.clone(),
        Err(_) => return String::new(),
    };
    let Some(((_, first, _), rest)) = marks.split_first() else {
        return String::new();
    };
    let mut text = String::new();
    let mut previous = *first;
    for (name, at, memory) in rest {
        let ms = at.duration_since(previous).as_secs_f64() * 1e3;
        let memory = memory.map_or(String::new(), |m| {
            let anonymous = m
                .anonymous
                .map_or(String::new(), |a| format!(", {a:7.1} MiB anonymous"));
            format!("  {:7.1} MiB resident{anonymous}", m.resident)
        });
        text.push_str(&format!("timing: {name:<12} {ms:8.3} ms{memory}\n"));
        previous = *at;
    }
    let total = previous.duration_since(*first).as_secs_f64() * 1e3;
    text.push_str(&format!("timing: {:<12} {total:8.3} ms\n", "total"));
    text
}

/// Resident memory from `/proc/self/status` (Linux, where it is given in KiB); `None`
/// elsewhere.
fn memory() -> Option<Memory> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mib = |field: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(field))?;
        let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024.0)
    };
    Some(Memory {
        resident: mib("VmRSS:")?,
        anonymous: mib("RssAnon:"),
    })
}

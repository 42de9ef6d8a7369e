//! `--timings`: how long each phase of a command took, printed on stderr when the command
//! ends. Marks cost one atomic load when the flag is off, so they stay in the code for the
//! next performance question (BENCHMARKS.md uses them to split a run into its phases).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);
static MARKS: Mutex<Vec<Mark>> = Mutex::new(Vec::new());

/// The end of a phase: its name, when, and the process's resident memory then (MiB, where
/// the system tells it).
type Mark = (&'static str, Instant, Option<f64>);

/// Starts recording: the first mark's time is measured from here.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
    mark("start");
}

/// Records the end of the phase `name`.
pub fn mark(name: &'static str) {
    if ENABLED.load(Ordering::Relaxed) {
        let now = Instant::now();
        let resident = resident_mib();
        if let Ok(mut marks) = MARKS.lock() {
            marks.push((name, now, resident));
        }
    }
}

/// The recorded phases as `timing: name milliseconds [MiB resident]` lines, then the total;
/// empty when not enabled.
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
    for (name, at, resident) in rest {
        let ms = at.duration_since(previous).as_secs_f64() * 1e3;
        let resident = resident.map_or(String::new(), |r| format!("  {r:7.1} MiB resident"));
        text.push_str(&format!("timing: {name:<12} {ms:8.3} ms{resident}\n"));
        previous = *at;
    }
    let total = previous.duration_since(*first).as_secs_f64() * 1e3;
    text.push_str(&format!("timing: {:<12} {total:8.3} ms\n", "total"));
    text
}

/// Resident memory from `/proc/self/status` (Linux, where it is given in KiB); `None`
/// elsewhere.
fn resident_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

//! `--timings`: how long each phase of a command took, printed on stderr when the command
//! ends. Marks cost one atomic load when the flag is off, so they stay in the code for the
//! next performance question (BENCHMARKS.md uses them to split a run into its phases).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);
static MARKS: Mutex<Vec<Mark>> = Mutex::new(Vec::new());

/// The end of a phase: its name, when, and the process's memory and CPU time then, where the
/// system tells them.
type Mark = (&'static str, Instant, Option<Memory>, Option<f64>);

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
        let cpu = cpu_ms();
        if let Ok(mut marks) = MARKS.lock() {
            marks.push((name, now, memory, cpu));
        }
    }
}

/// The recorded phases as `timing: name milliseconds [(CPU milliseconds)] [MiB resident[, MiB
/// anonymous]]` lines, then the total; empty when not enabled. The CPU time is the whole
/// process's (all threads, user and system), so a phase on two cores shows up to twice its
/// wall time: the work a phase costs, where the wall time is what it takes.
pub fn report() -> String {
    let marks = match MARKS.lock() {
        Ok(marks) => marks.clone(),
        Err(_) => return String::new(),
    };
    let Some(((_, first, _, first_cpu), rest)) = marks.split_first() else {
        return String::new();
    };
    let cpu_text = |from: Option<f64>, to: Option<f64>| match (from, to) {
        (Some(from), Some(to)) => format!(" ({:6.0} ms cpu)", to - from),
        _ => String::new(),
    };
    let mut text = String::new();
    let (mut previous, mut previous_cpu) = (*first, *first_cpu);
    for (name, at, memory, cpu) in rest {
        let ms = at.duration_since(previous).as_secs_f64() * 1e3;
        let memory = memory.map_or(String::new(), |m| {
            let anonymous = m
                .anonymous
                .map_or(String::new(), |a| format!(", {a:7.1} MiB anonymous"));
            format!("  {:7.1} MiB resident{anonymous}", m.resident)
        });
        let cpu_spent = cpu_text(previous_cpu, *cpu);
        text.push_str(&format!(
            "timing: {name:<12} {ms:8.3} ms{cpu_spent}{memory}\n"
        ));
        (previous, previous_cpu) = (*at, *cpu);
    }
    let total = previous.duration_since(*first).as_secs_f64() * 1e3;
    let cpu_spent = cpu_text(*first_cpu, previous_cpu);
    text.push_str(&format!(
        "timing: {:<12} {total:8.3} ms{cpu_spent}\n",
        "total"
    ));
    text
}

/// The process's CPU time so far in milliseconds, user and system, of all its threads
/// (finished ones included), from `/proc/self/stat` (Linux; counted in the kernel's 100 Hz
/// ticks, so to 10 ms); `None` elsewhere.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces; utime and stime are
    // fields 14 and 15, the 12th and 13th after it.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: f64 = fields.next()?.parse().ok()?;
    let system: f64 = fields.next()?.parse().ok()?;
    // USER_HZ, which /proc reports in, is 100 on every Linux architecture.
    Some((user + system) * 10.0)
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

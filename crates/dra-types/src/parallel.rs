//! An order-preserving parallel map: workers take items from a shared counter, and the results
//! are put back in the items' order, so that no answer depends on thread timing (the
//! loader's JSON pieces, the simulation's node filtering). Its helper threads, and every
//! other thread the workspace starts beside the one that starts it, are kept off that
//! thread's CPU ([`spawn_beside`]).
//!
//! Linux places a new thread, and a thread it wakes, near the thread that started it, often
//! on the very same CPU, and moves one of them away only at a later balancing tick (every 4
//! ms with `HZ=250`). A run of a few milliseconds then does its helper's work after its own,
//! one CPU taking turns, instead of beside it: on a 2-CPU machine the JSON writer of `dra
//! simulate` shared the main thread's CPU in about a third of the runs, and a helper thread
//! that only spun slowed the main thread's load by up to 3x whenever it did
//! (BENCHMARKS.md, "Helper threads beside the caller"). A new thread cannot move itself
//! before it runs, and on the starter's CPU it runs only once the starter blocks or yields:
//! [`spawn_beside`] yields once, so that it moves at once (BENCHMARKS.md, "Helpers that start
//! at once").

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// How many threads the process may run at once: the standard library's
/// [`std::thread::available_parallelism`] (the CPUs it may use, within its cgroup's CPU
/// quota), or 1 where that is unknown. Asked once per process and remembered: each call of the
/// standard function reads the process's cgroup files and its CPU set again, 12 system calls
/// and about 0.02 ms on Linux, and a small `dra simulate` asked four times. A process's CPU
/// quota can change while it runs; a command of a few seconds at most keeps the answer it
/// started with. The standard function counts the CPUs of the calling thread: the first call
/// must come from a thread that may run on all of the process's, not from a helper kept off
/// one ([`spawn_beside`]), whose answer (one fewer) would then be every thread's.
pub fn available_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `items.iter().map(f).collect()`, computed on up to `threads` threads, the caller's among
/// them, each taking the next `batch` items nobody has taken yet (so that uneven items even
/// out across threads).
///
/// The result is in `items`' order whatever the threads' timing, and `f` runs exactly once
/// per item. No more threads start than there are batches; callers decide whether a second
/// thread pays at all.
pub fn map_in_order<T, R, F>(items: &[T], threads: usize, batch: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    map_in_order_when_long(items, threads, batch, Duration::ZERO, f).0
}

/// [`map_in_order`], whose helper threads start only once the calling thread's own share so
/// far shows that the rest would take it at least `long` alone (at once for zero): quick work
/// stays on the calling thread, where a helper would cost more to start and to join than it
/// saves. Also says on how many threads it ran. Only the speed depends on the timing: the
/// result is the same, in `items`' order, and `f` runs exactly once per item.
pub fn map_in_order_when_long<T, R, F>(
    items: &[T],
    threads: usize,
    batch: usize,
    long: Duration,
    f: F,
) -> (Vec<R>, usize)
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let batch = batch.max(1);
    let threads = threads.min(items.len().div_ceil(batch)).max(1);
    if threads == 1 {
        return (items.iter().map(f).collect(), 1);
    }
    let next = AtomicUsize::new(0);
    // Maps the next batch nobody has taken into `done`; `false` when none is left.
    let take = |done: &mut Vec<(usize, R)>| {
        let start = next.fetch_add(batch, Ordering::Relaxed);
        if start >= items.len() {
            return false;
        }
        let end = (start + batch).min(items.len());
        for (i, item) in items[start..end].iter().enumerate() {
            done.push((start + i, f(item)));
        }
        true
    };
    let work = || {
        let mut done: Vec<(usize, R)> = Vec::new();
        while take(&mut done) {}
        done
    };
    let (mut all, used) = std::thread::scope(|scope| {
        let spawn = || -> Vec<_> { (1..threads).map(|_| spawn_beside(scope, work)).collect() };
        let mut helpers = if long.is_zero() { spawn() } else { Vec::new() };
        let mut all = Vec::new();
        let started = Instant::now();
        while take(&mut all) {
            if helpers.is_empty() && !long.is_zero() {
                let taken = next.load(Ordering::Relaxed).min(items.len());
                // The rest, at the pace so far.
                let rest = started
                    .elapsed()
                    .mul_f64((items.len() - taken) as f64 / taken as f64);
                if rest >= long {
                    helpers = spawn();
                }
            }
        }
        let used = 1 + helpers.len();
        for helper in helpers {
            match helper.join() {
                Ok(part) => all.extend(part),
                // A panic in `f` is a bug; let it surface as it would have sequentially.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        (all, used)
    });
    if used > 1 {
        all.sort_unstable_by_key(|(i, _)| *i);
    }
    (all.into_iter().map(|(_, r)| r).collect(), used)
}

/// `items.iter().map(f)`, computed ahead on a helper thread ([`spawn_beside`]) while the
/// caller takes the results in `items`' order: work the caller would do item by item, between
/// steps of its own that cannot be spread over threads, is done beside it instead.
///
/// The helper maps `batch` items at a time and runs at most `batches_ahead` batches ahead of
/// the caller (then waits), so the results waiting at any moment stay few. `f` runs exactly
/// once per item, on the helper, in `items`' order; dropping the iterator stops the helper
/// after its current batch. The iterator ends early only when `f` panicked, and the scope
/// then passes the panic on.
pub fn map_ahead<'scope, 'env, T, R, F>(
    scope: &'scope Scope<'scope, 'env>,
    items: &'env [T],
    batch: usize,
    batches_ahead: usize,
    f: F,
) -> Ahead<R>
where
    T: Sync,
    R: Send + 'scope,
    F: Fn(&T) -> R + Send + 'scope,
{
    let batch = batch.max(1);
    let (sender, receiver) = std::sync::mpsc::sync_channel(batches_ahead.max(1));
    spawn_beside(scope, move || {
        for chunk in items.chunks(batch) {
            let mapped: Vec<R> = chunk.iter().map(&f).collect();
            if sender.send(mapped).is_err() {
                // The caller wants no more.
                return;
            }
        }
    });
    Ahead {
        receiver,
        current: Vec::new().into_iter(),
    }
}

/// The results of [`map_ahead`], in the items' order.
pub struct Ahead<R> {
    receiver: std::sync::mpsc::Receiver<Vec<R>>,
    current: std::vec::IntoIter<R>,
}

impl<R> std::fmt::Debug for Ahead<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead")
            .field("waiting", &self.current.len())
            .finish_non_exhaustive()
    }
}

impl<R> Iterator for Ahead<R> {
    type Item = R;

    fn next(&mut self) -> Option<R> {
        loop {
            if let Some(result) = self.current.next() {
                return Some(result);
            }
            // `Err`: every batch came (or the helper stopped on a panic).
            self.current = self.receiver.recv().ok()?.into_iter();
        }
    }
}

/// Spawns `work` on a scoped thread that runs anywhere but on the CPU the calling thread is
/// on now (anywhere, when that is the only one it may use). Where the operating system
/// tells neither, it is a plain scoped thread.
pub fn spawn_beside<'scope, F, T>(
    scope: &'scope Scope<'scope, '_>,
    work: F,
) -> ScopedJoinHandle<'scope, T>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    spawn_off(scope, current_cpu(), work)
}

/// [`spawn_beside`], kept off `cpu`.
fn spawn_off<'scope, F, T>(
    scope: &'scope Scope<'scope, '_>,
    cpu: Option<usize>,
    work: F,
) -> ScopedJoinHandle<'scope, T>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    let handle = scope.spawn(move || {
        keep_off(cpu);
        work()
    });
    let_it_move(cpu);
    handle
}

/// Called by the starter of a thread that keeps off `cpu` (the starter's, [`current_cpu`])
/// right after starting it: lets it run now, to move itself ([`keep_off`]).
pub fn let_it_move(cpu: Option<usize>) {
    if cpu.is_some() {
        // The new thread waits on this CPU's queue until this thread blocks or a balancing
        // tick moves it, which in a run of a few milliseconds was mostly at the end (traced:
        // 1.8-3.0 ms after it was started, in 16 of 20 gpu-nic runs). Yielding lets it run
        // now, for as long as it takes to move itself away (`keep_off`), then this thread
        // goes on: 0.04 ms.
        std::thread::yield_now();
    }
}

thread_local! {
    /// Whether this thread was moved off its starter's CPU ([`keep_off`]).
    static BESIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is a helper that [`spawn_beside`] (or its own call of
/// [`keep_off`]) kept off its starter's CPU:
/// one that may wait for its starter busily without taking the starter's CPU from it.
pub fn runs_beside() -> bool {
    BESIDE.with(std::cell::Cell::get)
}

/// The CPU the calling thread runs on now, where the operating system tells (Linux).
#[cfg(target_os = "linux")]
pub fn current_cpu() -> Option<usize> {
    Some(rustix::thread::sched_getcpu())
}

/// The CPU the calling thread runs on now: not told here.
#[cfg(not(target_os = "linux"))]
pub fn current_cpu() -> Option<usize> {
    None
}

/// Restricts the calling thread to the CPUs it may use except `cpu`, when that leaves any.
/// A thread that is on `cpu` moves at once. Best effort: a refusal leaves it where it is.
/// Afterwards [`runs_beside`] tells whether it moved. It allocates nothing, so a thread
/// can call it before its first allocation.
#[cfg(target_os = "linux")]
pub fn keep_off(cpu: Option<usize>) {
    use rustix::thread::{sched_getaffinity, sched_setaffinity};
    let Some(cpu) = cpu else { return };
    let Ok(allowed) = sched_getaffinity(None) else {
        return;
    };
    if !allowed.is_set(cpu) || allowed.count() < 2 {
        return;
    }
    let mut others = allowed;
    others.unset(cpu);
    if sched_setaffinity(None, &others).is_ok() {
        BESIDE.with(|beside| beside.set(true));
    }
}

/// [`keep_off`] where the operating system cannot restrict a thread's CPUs: nothing.
#[cfg(not(target_os = "linux"))]
pub fn keep_off(_cpu: Option<usize>) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The remembered count is the standard library's, asked again, every time.
    #[test]
    fn available_threads_is_the_standard_answer() {
        let standard = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(available_threads(), standard);
        assert_eq!(available_threads(), standard);
    }

    #[test]
    fn order_and_count_do_not_depend_on_threads_batch_or_when_helpers_start() {
        let items: Vec<u64> = (0..1000).collect();
        let calls = AtomicUsize::new(0);
        let mix = |x: &u64| {
            calls.fetch_add(1, Ordering::Relaxed);
            // Uneven work, so that threads finish out of order.
            (0..(x % 7) * 100).fold(x * x, |acc, i| acc ^ i)
        };
        let sequential: Vec<u64> = items.iter().map(mix).collect();
        for threads in [1, 2, 3, 8] {
            for batch in [0, 1, 4, 999, 5000] {
                calls.store(0, Ordering::Relaxed);
                let mapped = map_in_order(&items, threads, batch, mix);
                assert_eq!(mapped, sequential, "{threads} threads, batch {batch}");
                assert_eq!(calls.load(Ordering::Relaxed), items.len());
                // Helpers started later, or never: the same again.
                for long in [1, 1_000, 1_000_000_000] {
                    calls.store(0, Ordering::Relaxed);
                    let long = Duration::from_nanos(long);
                    let (mapped, used) = map_in_order_when_long(&items, threads, batch, long, mix);
                    assert_eq!(
                        mapped, sequential,
                        "{threads} threads, batch {batch}, {long:?}"
                    );
                    assert_eq!(calls.load(Ordering::Relaxed), items.len());
                    assert!((1..=threads).contains(&used));
                }
            }
        }
        assert!(map_in_order(&[] as &[u32], 4, 1, |x| *x).is_empty());
    }

    #[test]
    fn a_thread_per_batch_at_most() {
        let caller = std::thread::current().id();
        let ids = map_in_order(&[1, 2, 3], 8, 3, |_| std::thread::current().id());
        assert!(
            ids.iter().all(|id| *id == caller),
            "one batch, no thread started"
        );
        let items: Vec<u32> = (0..64).collect();
        let ids = map_in_order(&items, 2, 1, |_| {
            // Long enough that the helper gets a share before the caller is done.
            std::thread::sleep(std::time::Duration::from_micros(200));
            std::thread::current().id()
        });
        assert!(ids.iter().any(|id| *id != caller), "the helper took items");
    }

    #[test]
    fn quick_work_stays_on_the_calling_thread_and_long_work_gets_helpers() {
        let items: Vec<u64> = (0..64).collect();
        let caller = std::thread::current().id();
        let (ids, used) = map_in_order_when_long(&items, 2, 4, Duration::from_secs(3600), |_| {
            std::thread::current().id()
        });
        assert_eq!(used, 1);
        assert!(ids.iter().all(|id| *id == caller));
        // Each item sleeps: after the first batch the rest is projected at well over 1 µs.
        let (mapped, used) = map_in_order_when_long(&items, 2, 4, Duration::from_micros(1), |x| {
            std::thread::sleep(Duration::from_micros(200));
            (*x, std::thread::current().id())
        });
        assert_eq!(used, 2);
        assert!(mapped.iter().map(|(x, _)| *x).eq(0..64));
        assert!(mapped.iter().any(|(_, id)| *id != caller));
    }

    #[test]
    fn the_helper_runs_and_returns_its_result() {
        let doubled = std::thread::scope(|scope| spawn_beside(scope, || 21 * 2).join());
        assert_eq!(doubled.ok(), Some(42));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_helper_is_kept_off_the_cpu_when_it_may_use_another() {
        use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu};
        let allowed = sched_getaffinity(None).expect("the test thread's CPUs");
        let first = (0..CpuSet::MAX_CPU).find(|&cpu| allowed.is_set(cpu));
        let cpu = first.expect("the test thread may use some CPU");
        // What the helper may use, where it runs and whether it knows it runs beside, as
        // seen from inside it.
        let (mask, ran_on, beside) = std::thread::scope(|scope| {
            spawn_off(scope, Some(cpu), || {
                let mask = sched_getaffinity(None).expect("the helper's CPUs");
                (mask, sched_getcpu(), runs_beside())
            })
            .join()
            .expect("the helper ends")
        });
        assert!(!runs_beside(), "the starter is no helper");
        if allowed.count() >= 2 {
            assert!(!mask.is_set(cpu), "the helper may still use CPU {cpu}");
            assert_ne!(ran_on, cpu);
            assert_eq!(mask.count(), allowed.count() - 1);
            assert!(beside, "the helper does not know it was moved");
        } else {
            assert_eq!(mask.count(), allowed.count());
            assert_eq!(ran_on, cpu);
            assert!(!beside, "the helper shares its starter's only CPU");
        }
    }

    #[test]
    fn without_a_cpu_the_helper_may_run_anywhere() {
        let beside = std::thread::scope(|scope| spawn_off(scope, None, runs_beside).join());
        assert_eq!(beside.ok(), Some(false), "a helper that was not moved");
        let mask = std::thread::scope(|scope| {
            spawn_off(scope, None, || {
                #[cfg(target_os = "linux")]
                return rustix::thread::sched_getaffinity(None)
                    .map(|m| m.count())
                    .ok();
                #[cfg(not(target_os = "linux"))]
                return None::<u32>;
            })
            .join()
            .expect("the helper ends")
        });
        #[cfg(target_os = "linux")]
        assert_eq!(
            mask,
            rustix::thread::sched_getaffinity(None)
                .map(|m| m.count())
                .ok()
        );
        #[cfg(not(target_os = "linux"))]
        assert_eq!(mask, None);
    }

    #[test]
    fn results_ahead_come_in_order_each_computed_once_on_the_helper() {
        let items: Vec<u32> = (0..1000).collect();
        let caller = std::thread::current().id();
        for (batch, ahead) in [(1, 1), (7, 2), (64, 4), (5000, 1)] {
            let calls = AtomicUsize::new(0);
            let got: Vec<(u32, bool)> = std::thread::scope(|scope| {
                map_ahead(scope, &items, batch, ahead, |x| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    (x * 2, std::thread::current().id() == caller)
                })
                .collect()
            });
            let expected: Vec<(u32, bool)> = items.iter().map(|x| (x * 2, false)).collect();
            assert_eq!(got, expected, "batch {batch}, {ahead} ahead");
            assert_eq!(calls.load(Ordering::Relaxed), items.len());
        }
        let none: Vec<u32> =
            std::thread::scope(|scope| map_ahead(scope, &[] as &[u32], 8, 2, |x| *x).collect());
        assert!(none.is_empty());
    }

    #[test]
    fn the_helper_stops_when_the_caller_does_and_waits_within_its_bound() {
        let items: Vec<u32> = (0..10_000).collect();
        let calls = AtomicUsize::new(0);
        let first: Vec<u32> = std::thread::scope(|scope| {
            let mut ahead = map_ahead(scope, &items, 10, 2, |x| {
                calls.fetch_add(1, Ordering::Relaxed);
                *x
            });
            let first = ahead.by_ref().take(5).collect();
            // Give the helper time to run as far ahead as it may.
            std::thread::sleep(Duration::from_millis(50));
            // The batch being taken, two waiting and one being mapped at most.
            assert!(calls.load(Ordering::Relaxed) <= 40, "{calls:?}");
            first
        });
        assert_eq!(first, vec![0, 1, 2, 3, 4]);
        assert!(calls.load(Ordering::Relaxed) < items.len());
    }

    #[test]
    fn a_panic_ahead_reaches_the_scope() {
        let items: Vec<u32> = (0..100).collect();
        // Kept outside the scope, whose panic would hide a failed assertion inside it.
        let got = std::sync::Mutex::new(Vec::new());
        let outcome = std::panic::catch_unwind(|| {
            std::thread::scope(|scope| {
                let results = map_ahead(scope, &items, 10, 2, |x| {
                    assert!(*x != 42, "item 42");
                    *x
                });
                got.lock().expect("not poisoned").extend(results);
            })
        });
        assert!(outcome.is_err(), "the helper's panic reached the caller");
        // The results before the failing batch, then the end.
        let got = got.into_inner().expect("not poisoned");
        assert_eq!(got, (0..40).collect::<Vec<u32>>());
    }
}

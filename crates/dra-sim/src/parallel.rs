//! Filtering nodes in parallel with an answer that does not depend on thread timing.
//!
//! kube-scheduler runs its Filter plugins on many nodes at once (16 goroutines by default).
//! The simulation does the same for the allocator, the expensive filter, when a pod needs it
//! on many nodes: workers take nodes from a shared counter, and the outcomes are put back in
//! the nodes' order before anything looks at them. The caller then walks them exactly as a
//! sequential loop would (stopping at the first fatal error, counting steps up to there), so
//! the result, the statistics and every message are the same for any number of threads.
//!
//! The allocator only reads the allocated state while a pod is filtered; what it writes are
//! memoized answers (node pools, selector results, rejections), which are the same whichever
//! thread computes them first.
//!
//! The same map builds what is computed per node before the pods need it (every node's pools
//! for the reference loop, a selector family's pre-check tables for the scheduler model), and
//! [`claims_ahead`] decides when the reference loop's claims from templates are made ahead on
//! a helper thread.

use std::time::Duration;

/// Below this many items a second thread costs more to start than it saves.
pub(crate) const MIN_PARALLEL_ITEMS: usize = 32;

/// How long the rest of a pod's allocator runs (or of the nodes' pools and pre-check tables)
/// must promise to take one thread before more threads start
/// ([`SimOptions::threads_at_once`](crate::SimOptions)): starting and joining
/// a thread took 0.2-0.3 ms on a 2-CPU VM, and hgx-mixed at 99 and 300 nodes ran 15-20%
/// slower on two threads started at once than on one (BENCHMARKS.md, "Helper threads beside
/// the caller").
pub(crate) const LONG_FILTER: Duration = Duration::from_millis(1);

/// Items a worker takes from the shared counter at a time: a rejected node costs well under a
/// microsecond, so taking one at a time would make the counter the bottleneck.
const BATCH: usize = 4;

/// Pods with claims from templates below which the reference loop makes their claims itself:
/// making them ahead on a helper ([`claims_ahead`]) saves the loop about 1,400 instructions a
/// pod (scheduler-perf: 9.6% of the loop), and a thread and its hand-overs cost a few hundred
/// microseconds; at 5,000 pods the gain is 3-4% of the run.
pub(crate) const CLAIMS_AHEAD_MIN_PODS: usize = 1000;

/// Pods whose claims the helper makes at a time, and how many such batches may wait.
pub(crate) const CLAIMS_AHEAD_BATCH: usize = 32;
pub(crate) const CLAIMS_AHEAD_BATCHES: usize = 4;

/// Whether the claims of `pods` from templates are made ahead on a helper thread
/// ([`dra_types::parallel::map_ahead`] of [`crate::claims::TemplateMaker::make`]): with two
/// threads or more and at least `min_pods` pods that have such claims.
pub(crate) fn claims_ahead(
    pods: &[&k8s_openapi::api::core::v1::Pod],
    threads: usize,
    min_pods: usize,
) -> bool {
    threads >= 2
        && pods
            .iter()
            .filter(|pod| crate::claims::TemplateMaker::has_work(pod))
            .take(min_pods)
            .count()
            >= min_pods
}

/// The number of worker threads for `requested` (0: one per available core).
pub(crate) fn thread_count(requested: usize) -> usize {
    if requested > 0 {
        return requested;
    }
    dra_types::parallel::available_threads()
}

/// `items.iter().map(f).collect()`, computed on up to `threads` threads
/// ([`dra_types::parallel::map_in_order_when_long`], in batches of [`BATCH`]), started at once
/// or once the rest promises to take over [`LONG_FILTER`]; with the number of threads it ran
/// on.
///
/// The result is in `items`' order whatever the threads' timing. `f` runs exactly once per
/// item. With one thread, or fewer than [`MIN_PARALLEL_ITEMS`] items, no thread is started.
pub(crate) fn map_in_order<T, R, F>(
    items: &[T],
    threads: usize,
    at_once: bool,
    f: F,
) -> (Vec<R>, usize)
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    if threads < 2 || items.len() < MIN_PARALLEL_ITEMS {
        return (items.iter().map(f).collect(), 1);
    }
    let long = if at_once { Duration::ZERO } else { LONG_FILTER };
    dra_types::parallel::map_in_order_when_long(items, threads, BATCH, long, f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The shared map's own tests cover thread timing; here, the answer on both sides of the
    /// threshold where this wrapper starts threads.
    #[test]
    fn order_and_count_hold_around_the_threshold() {
        for len in [MIN_PARALLEL_ITEMS - 1, MIN_PARALLEL_ITEMS, 1000] {
            let items: Vec<u64> = (0..len as u64).collect();
            for threads in [1, 2, 8] {
                let calls = AtomicUsize::new(0);
                let (mapped, _) = map_in_order(&items, threads, true, |x| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    x * 3 + 1
                });
                let expected: Vec<u64> = items.iter().map(|x| x * 3 + 1).collect();
                assert_eq!(mapped, expected, "{len} items, {threads} threads");
                assert_eq!(
                    calls.load(Ordering::Relaxed),
                    len,
                    "{len} items, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn small_inputs_stay_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let items: Vec<u32> = (0..(MIN_PARALLEL_ITEMS as u32 - 1)).collect();
        let (ids, used) = map_in_order(&items, 8, true, |_| std::thread::current().id());
        assert!(ids.iter().all(|id| *id == caller));
        assert_eq!(used, 1);
        assert!(map_in_order(&[] as &[u32], 8, true, |x| *x).0.is_empty());
    }

    #[test]
    fn threads_at_once_start_at_once_and_give_the_same_answer() {
        let items: Vec<u32> = (0..4096).collect();
        let (at_once, used) = map_in_order(&items, 2, true, |x| x + 1);
        assert_eq!(used, 2);
        // When the threads start without `at_once` depends on the timing; the answer does not.
        let (when_long, _) = map_in_order(&items, 2, false, |x| x + 1);
        assert_eq!(at_once, when_long);
        assert!(at_once.iter().copied().eq(1..4097));
    }

    #[test]
    fn large_inputs_use_more_than_one_thread() {
        let items: Vec<u32> = (0..4096).collect();
        let (ids, _) = map_in_order(&items, 2, true, |_| {
            // Long enough that the helper thread gets a share before the caller is done.
            std::thread::sleep(std::time::Duration::from_micros(50));
            std::thread::current().id()
        });
        let first = ids[0];
        assert!(ids.iter().any(|id| *id != first));
    }
}

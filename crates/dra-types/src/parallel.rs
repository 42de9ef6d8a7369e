//! An order-preserving parallel map: workers take items from a shared counter, and the results
//! are put back in the items' order, so that no answer depends on thread timing (the
//! loader's JSON pieces, the simulation's node filtering).

use std::sync::atomic::{AtomicUsize, Ordering};

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
    let batch = batch.max(1);
    let threads = threads.min(items.len().div_ceil(batch)).max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, R)> = Vec::new();
        loop {
            let start = next.fetch_add(batch, Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let end = (start + batch).min(items.len());
            for (i, item) in items[start..end].iter().enumerate() {
                done.push((start + i, f(item)));
            }
        }
    };
    let mut all: Vec<(usize, R)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for helper in helpers {
            match helper.join() {
                Ok(part) => all.extend(part),
                // A panic in `f` is a bug; let it surface as it would have sequentially.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_count_do_not_depend_on_threads_or_batch() {
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
}

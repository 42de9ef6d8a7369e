//! [`SharedOnce`]: a value computed once by whichever thread asks first, like
//! [`std::sync::OnceLock`], which a thread working ahead of the one that needs it can skip
//! when another thread has begun it.
//!
//! The simulation computes per-node lists this way on two threads at once (a node's pools,
//! its candidate devices per selector set): the main thread as its loop reaches a node, a
//! helper ahead of it. With `OnceLock` alone, the second to ask waits until
//! the first is done; when that was the helper (the JSON writer computing candidates while it
//! waited for outcomes), it blocked, and a thread that blocks leaves its CPU idle: on the
//! virtual machines of BENCHMARKS.md the writer then took the loop's first outcomes 0.7-1.8
//! ms after they were handed over, in two thirds of gpu-nic's runs, and ended that much after
//! the loop. A helper asks with [`SharedOnce::get_or_init_if_untaken`] and moves on; the
//! thread that needs the value waits as with `OnceLock` (waiting busily instead, yielding the
//! CPU, made gpu-nic 0.1-0.25 ms slower).
//!
//! Whoever computes the value, it is the one value every asker gets, so no answer depends on
//! which thread computed it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// A value computed once, by whichever thread asks first (see the module overview).
pub struct SharedOnce<T> {
    value: OnceLock<T>,
    /// Set by the first asker, before it computes the value.
    taken: AtomicBool,
}

impl<T> SharedOnce<T> {
    pub const fn new() -> Self {
        SharedOnce {
            value: OnceLock::new(),
            taken: AtomicBool::new(false),
        }
    }

    /// The value, once computed.
    pub fn get(&self) -> Option<&T> {
        self.value.get()
    }

    /// The value, computed here by `make` when no thread has begun it; while another thread
    /// computes it, waits for it as [`OnceLock::get_or_init`] does (which also computes it
    /// here should the other thread's `make` have panicked).
    pub fn get_or_init(&self, make: impl FnOnce() -> T) -> &T {
        if let Some(value) = self.value.get() {
            return value;
        }
        self.taken.store(true, Ordering::Release);
        self.value.get_or_init(make)
    }

    /// The value, computed here by `make` when no thread has begun it; `None`, without
    /// waiting, when another thread has begun it and not finished: for a thread that only
    /// works ahead of the one that needs the value.
    pub fn get_or_init_if_untaken(&self, make: impl FnOnce() -> T) -> Option<&T> {
        if let Some(value) = self.value.get() {
            return Some(value);
        }
        if self.taken.swap(true, Ordering::AcqRel) {
            return self.value.get();
        }
        Some(self.value.get_or_init(make))
    }
}

impl<T> Default for SharedOnce<T> {
    fn default() -> Self {
        SharedOnce::new()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SharedOnce<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedOnce")
            .field(&self.value.get())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn computes_once_and_keeps_the_value() {
        let once = SharedOnce::new();
        assert_eq!(once.get(), None);
        assert_eq!(*once.get_or_init(|| 7), 7);
        assert_eq!(*once.get_or_init(|| 8), 7);
        assert_eq!(once.get_or_init_if_untaken(|| 9), Some(&7));
        assert_eq!(once.get(), Some(&7));
        assert_eq!(SharedOnce::<u32>::default().get(), None);
    }

    #[test]
    fn a_thread_working_ahead_computes_what_is_untaken() {
        let once = SharedOnce::new();
        assert_eq!(once.get_or_init_if_untaken(|| 3), Some(&3));
        assert_eq!(*once.get_or_init(|| 4), 3);
    }

    /// Taken and not finished: the thread working ahead moves on without the value, and the
    /// thread that needs it waits for the other's value.
    #[test]
    fn askers_of_a_value_in_the_making_get_the_makers_value() {
        let once = SharedOnce::new();
        let started = Barrier::new(3);
        let release = Barrier::new(2);
        let makes = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let maker = scope.spawn(|| {
                *once.get_or_init(|| {
                    makes.fetch_add(1, Ordering::SeqCst);
                    started.wait();
                    release.wait();
                    1
                })
            });
            let waiter = scope.spawn(|| {
                started.wait();
                *once.get_or_init(|| {
                    makes.fetch_add(1, Ordering::SeqCst);
                    2
                })
            });
            started.wait();
            assert_eq!(once.get_or_init_if_untaken(|| 3), None);
            release.wait();
            assert_eq!(maker.join().expect("maker"), 1);
            assert_eq!(waiter.join().expect("waiter"), 1);
        });
        assert_eq!(makes.load(Ordering::SeqCst), 1);
        assert_eq!(once.get(), Some(&1));
    }

    /// A maker that panics leaves the value to the next asker.
    #[test]
    fn a_panicking_maker_leaves_the_value_to_the_next_asker() {
        let once = SharedOnce::new();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            once.get_or_init(|| -> u32 { panic!("make failed") });
        }));
        assert!(panicked.is_err());
        assert_eq!(*once.get_or_init(|| 5), 5);
    }
}

//! Handing items from one thread to a helper thread ([`HandOver`]).

use std::sync::{Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long a helper on a CPU of its own waits busily for the next items before it parks:
/// longer than the reference loop takes for a batch of outcomes in small runs (0.15-0.2 ms
/// for gpu-nic's 32 pods), short enough that a long gap costs little CPU.
const SPIN_BEFORE_PARKING: Duration = Duration::from_millis(1);

/// The way from one thread to a helper: a locked list and the helper's park. Unlike a
/// channel's blocking receive, the helper allocates nothing to wait or to take what it is
/// handed (a thread's first allocation takes fresh memory), and the sender makes a system
/// call only to wake a helper that is parked.
///
/// A helper on a CPU of its own ([`dra_types::parallel::runs_beside`]) looks at the list
/// again and again for up to [`SPIN_BEFORE_PARKING`] before it parks, yielding its CPU
/// between looks to any other thread that wants it. Waking a parked thread costs the sender
/// a system call and the idle CPU's wake-up (on a virtual machine, an interrupt through the
/// hypervisor): with the JSON writer parked between gpu-nic's eight batches, the loop took
/// 0.15-0.2 ms longer than with it waiting busily. Pausing between looks without yielding
/// took the CPU from the reference loop's claim maker, which shares the writer's CPU in
/// large runs: scheduler-perf took 34-38 ms instead of 28-29.
///
/// One thread receives: the first to call [`HandOver::receive`], which the senders wake from
/// then on. The senders need not know it beforehand, so a helper can be started before it
/// has a thread handle (whose making allocates: [`crate::helper`]).
#[derive(Debug)]
pub struct HandOver<T> {
    queue: Mutex<Vec<T>>,
    receiver: OnceLock<Thread>,
}

impl<T> Default for HandOver<T> {
    fn default() -> Self {
        HandOver {
            queue: Mutex::new(Vec::new()),
            receiver: OnceLock::new(),
        }
    }
}

impl<T> HandOver<T> {
    /// Hands `item` to the receiving thread.
    pub fn send(&self, item: T) {
        // Poisoned only by a panic while pushing, which the scope re-raises.
        if let Ok(mut queue) = self.queue.lock() {
            queue.push(item);
        }
        // No receiver yet: it has not looked at the list, and will find the item when it
        // does. The receiver is set before its first look, and a look takes the lock this
        // push took: a receiver that looked before the push is seen here.
        if let Some(receiver) = self.receiver.get() {
            receiver.unpark();
        }
    }

    /// On the receiving thread: what was handed over since the last call, waiting until
    /// there is something; `None` when a sender panicked while handing over.
    pub fn receive(&self) -> Option<Vec<T>> {
        self.receive_or_work(|| false)
    }

    /// [`HandOver::receive`], doing `work` while there is nothing to take: one small piece a
    /// call, `false` once it has no more. Only a helper on a CPU of its own works meanwhile
    /// (elsewhere its work would take its starter's CPU); it looks at the list again after
    /// each piece, so what is handed over waits for one piece at most.
    pub fn receive_or_work(&self, mut work: impl FnMut() -> bool) -> Option<Vec<T>> {
        self.receiver.get_or_init(std::thread::current);
        let spin = dra_types::parallel::runs_beside();
        let mut working = spin;
        let mut waiting_since = None;
        loop {
            let handed = std::mem::take(&mut *self.queue.lock().ok()?);
            if !handed.is_empty() {
                return Some(handed);
            }
            if working {
                working = work();
                if working {
                    continue;
                }
            }
            let waited = waiting_since.get_or_insert_with(Instant::now).elapsed();
            if spin && waited < SPIN_BEFORE_PARKING {
                std::thread::yield_now();
                continue;
            }
            // An unpark since the lock was taken makes this return at once.
            std::thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dra_types::parallel::spawn_beside;

    /// Hands `0..count` to a helper, calling `between` after each item, then the end; what
    /// the helper received, in order.
    fn handed_through(count: u32, between: impl Fn()) -> Vec<u32> {
        let hand_over = HandOver::default();
        std::thread::scope(|scope| {
            let helper = spawn_beside(scope, || {
                let mut got = Vec::new();
                while let Some(batch) = hand_over.receive() {
                    for item in batch {
                        match item {
                            Some(n) => got.push(n),
                            None => return got,
                        }
                    }
                }
                got
            });
            for n in 0..count {
                hand_over.send(Some(n));
                between();
            }
            hand_over.send(None);
            helper.join().expect("the helper ends")
        })
    }

    /// A helper beside its starter works while nothing is handed over, until its work is
    /// done (it asks for no more piece after the one that said so), and still gets every
    /// item in order; a helper on its starter's CPU does not work meanwhile.
    #[test]
    fn a_helper_works_while_it_waits() {
        use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
        let hand_over = HandOver::default();
        let pieces = AtomicU32::new(0);
        // 0: not yet known, 1: beside, 2: on the starter's CPU.
        let beside = AtomicU8::new(0);
        std::thread::scope(|scope| {
            let helper = spawn_beside(scope, || {
                let here = if dra_types::parallel::runs_beside() {
                    1
                } else {
                    2
                };
                beside.store(here, Ordering::SeqCst);
                let mut got = Vec::new();
                while let Some(batch) =
                    hand_over.receive_or_work(|| pieces.fetch_add(1, Ordering::SeqCst) + 1 < 50)
                {
                    for item in batch {
                        match item {
                            Some(n) => got.push(n),
                            None => return got,
                        }
                    }
                }
                got
            });
            for n in 0..100 {
                hand_over.send(Some(n));
            }
            // Until the helper has said where it runs and, beside, done its work.
            while beside.load(Ordering::SeqCst) == 0
                || (beside.load(Ordering::SeqCst) == 1 && pieces.load(Ordering::SeqCst) < 50)
            {
                std::thread::yield_now();
            }
            hand_over.send(None);
            let got = helper.join().expect("the helper ends");
            assert_eq!(got, (0..100).collect::<Vec<_>>());
        });
        let expected = if beside.load(Ordering::SeqCst) == 1 {
            50
        } else {
            0
        };
        assert_eq!(pieces.load(Ordering::SeqCst), expected);
    }

    #[test]
    fn a_helper_gets_what_is_handed_over_in_order() {
        assert_eq!(handed_through(1000, || {}), (0..1000).collect::<Vec<_>>());
    }

    /// A helper that waited longer than it looks busily parks, and the next item wakes it.
    #[test]
    fn a_helper_that_parked_is_woken_by_the_next_item() {
        let pause = || std::thread::sleep(SPIN_BEFORE_PARKING * 3);
        assert_eq!(handed_through(3, pause), vec![0, 1, 2]);
    }
}

//! Handing items from one thread to a helper thread ([`HandOver`]).

use std::sync::Mutex;
use std::thread::Thread;

/// The way from one thread to a helper: a locked list and the helper's park. Unlike a
/// channel's blocking receive, the helper allocates nothing to wait or to take what it is
/// handed (a thread's first allocation takes fresh memory), and the sender makes a system
/// call only to wake a helper that is parked.
#[derive(Debug)]
pub struct HandOver<T> {
    queue: Mutex<Vec<T>>,
}

impl<T> Default for HandOver<T> {
    fn default() -> Self {
        HandOver {
            queue: Mutex::new(Vec::new()),
        }
    }
}

impl<T> HandOver<T> {
    /// Hands `item` to the helper `to`.
    pub fn send(&self, to: &Thread, item: T) {
        // Poisoned only by a panic while pushing, which the scope re-raises.
        if let Ok(mut queue) = self.queue.lock() {
            queue.push(item);
        }
        to.unpark();
    }

    /// On the helper: what was handed over since the last call, waiting until there is
    /// something; `None` when a sender panicked while handing over.
    pub fn receive(&self) -> Option<Vec<T>> {
        loop {
            let handed = std::mem::take(&mut *self.queue.lock().ok()?);
            if !handed.is_empty() {
                return Some(handed);
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

    #[test]
    fn a_helper_gets_what_is_handed_over_in_order() {
        let hand_over = HandOver::default();
        let got = std::thread::scope(|scope| {
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
            for n in 0..1000 {
                hand_over.send(helper.thread(), Some(n));
            }
            hand_over.send(helper.thread(), None);
            helper.join().expect("the helper ends")
        });
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    }
}

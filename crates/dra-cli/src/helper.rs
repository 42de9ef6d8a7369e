//! One helper thread that runs a command's jobs one after another ([`Helper`]).
//!
//! `dra simulate` gives its helper its jobs in turn: the CEL environment's declarations while
//! it waits for the input's first slice (`dra_alloc::prepare_selector_environment`),
//! converting slices while the input is read ([`crate::slices_ahead`]), gathering node pools
//! from the last node while the loop starts, then writing the first-fit JSON document while
//! the loop runs. A thread per job cost the main thread its start each time (a new thread,
//! and letting it move to the other CPU: about 0.1 ms here), and each new thread began its
//! work only once the idle CPU it moved to had woken (0.1-0.4 ms, at times more). One
//! thread, already on its CPU, with its memory already set up, takes each job as soon as it
//! is handed over: it looks for the next job busily for a while before it parks
//! ([`HandOver::receive`]).
//!
//! The thread moves to another CPU before it first allocates
//! ([`dra_malloc::fresh_memory::spawn_unprepared`]): the kernel first runs a new thread on
//! its starter's CPU, and a thread's first allocation takes a fresh huge page, whose zeroing
//! would otherwise keep the main thread off its CPU for 0.15-0.2 ms. Once moved, it allocates
//! at once, before its first job: that zeroing then falls in the time it waits for the
//! loader's first slice, not in the slices' conversion.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};

use crate::hand_over::HandOver;

/// What the helper is handed.
enum Message {
    Job(Box<dyn FnOnce() + Send>),
    /// No more jobs: the helper ends.
    Stop,
}

/// A helper thread beside the caller's (kept off the caller's CPU where the operating system
/// allows: [`dra_types::parallel::keep_off`]) that runs the jobs it is given, in order.
/// Dropping it ends the thread once its jobs are done.
pub struct Helper {
    hand_over: Arc<HandOver<Message>>,
}

impl Helper {
    pub fn start() -> Helper {
        let hand_over = Arc::new(HandOver::default());
        let cpu = dra_types::parallel::current_cpu();
        let theirs = Arc::clone(&hand_over);
        let work = Box::new(move || {
            // First, before anything allocates.
            dra_types::parallel::keep_off(cpu);
            // Then an allocation at once, kept while the helper lives: a thread's first
            // allocation takes the allocator's next segment, whose first huge page the kernel
            // zeroes (0.15-0.3 ms here). Left to the first job, that was the slices' first
            // conversion, after the loader told of the first slice; now it is done while the
            // loader still reads the input (0.2-0.4 ms before its first slice).
            let first = std::hint::black_box(Box::new(0_u64));
            run_jobs(&theirs);
            drop(first);
        });
        if let Err(work) = dra_malloc::fresh_memory::spawn_unprepared(work) {
            // No such thread here: one of the standard library's, which allocates before
            // `work` moves it.
            drop(std::thread::spawn(work));
        }
        dra_types::parallel::let_it_move(cpu);
        Helper { hand_over }
    }

    /// Runs `work` on the helper once the jobs given before are done.
    pub fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Job<T> {
        // Room for the one result, made here: the job allocates nothing to hand it back.
        let (sender, receiver) = sync_channel(1);
        let job = move || {
            // The receiver may be gone (its caller returned early); the result then is not
            // wanted.
            let _ = sender.send(std::panic::catch_unwind(AssertUnwindSafe(work)));
        };
        self.hand_over.send(Message::Job(Box::new(job)));
        Job { receiver }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.hand_over.send(Message::Stop);
    }
}

/// The result of a job given to a [`Helper`].
pub struct Job<T> {
    receiver: Receiver<std::thread::Result<T>>,
}

impl<T> Job<T> {
    /// Waits for the job's result; a panic in the job is raised again here.
    pub fn join(self) -> T {
        match self.receiver.recv() {
            Ok(Ok(result)) => result,
            Ok(Err(payload)) => std::panic::resume_unwind(payload),
            // Every job sends before it is dropped, even when it panics: only a helper that
            // stopped before running it gets here, which is a bug.
            Err(_) => panic!("the helper thread stopped before running a job"),
        }
    }
}

/// The helper's loop.
fn run_jobs(hand_over: &HandOver<Message>) {
    while let Some(messages) = hand_over.receive() {
        for message in messages {
            match message {
                Message::Job(job) => job(),
                Message::Stop => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_on_one_thread() {
        let helper = Helper::start();
        let jobs: Vec<Job<(u32, std::thread::ThreadId)>> = (0..50)
            .map(|n| helper.run(move || (n, std::thread::current().id())))
            .collect();
        let results: Vec<_> = jobs.into_iter().map(Job::join).collect();
        assert_eq!(
            results.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            (0..50).collect::<Vec<_>>()
        );
        let thread = results[0].1;
        assert_ne!(thread, std::thread::current().id());
        assert!(results.iter().all(|(_, id)| *id == thread), "one thread");
    }

    /// A job handed over after the helper parked wakes it.
    #[test]
    fn a_parked_helper_takes_the_next_job() {
        let helper = Helper::start();
        assert_eq!(helper.run(|| 1).join(), 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(helper.run(|| 2).join(), 2);
    }

    #[test]
    fn a_panic_in_a_job_is_raised_where_it_is_joined() {
        let helper = Helper::start();
        let job = helper.run(|| -> u32 { panic!("job failed") });
        let raised = std::panic::catch_unwind(AssertUnwindSafe(|| job.join()));
        let payload = raised.expect_err("the panic comes back");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"job failed"));
        // The helper goes on with the next job.
        assert_eq!(helper.run(|| 3).join(), 3);
    }
}

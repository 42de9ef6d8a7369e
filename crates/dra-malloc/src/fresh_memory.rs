//! Which CPU pays for a new thread's fresh memory: a thread that can move to another CPU
//! before it first allocates ([`spawn_unprepared`]).
//!
//! The kernel zeroes a page on the CPU of the thread that first touches it, and mimalloc
//! takes memory in transparent huge pages (2 MiB, 0.07-0.2 ms to zero on our machines). A
//! small `dra` run touches three: two for the main thread's heap, one for its helper's. The
//! helper's lands on the main thread's CPU unless the helper moves first, and the main
//! thread's work is the run's critical path.

/// What [`spawn_unprepared`] runs: a closure that owns what it uses.
pub type Work = Box<dyn FnOnce() + Send + 'static>;

/// Starts `work` on a new thread, detached, and runs it there before anything else.
///
/// A thread started by `std::thread::spawn` allocates in the standard library's start-up
/// code (its stack-overflow bookkeeping) before the closure runs, and a thread's first
/// allocation makes its mimalloc heap take a fresh huge page. The kernel first runs a new
/// thread on its starter's CPU (15 of 15 starts on our machines, `tools/machine-costs.c`),
/// so that page is zeroed there while the starter waits, even when the closure's first act
/// is to move itself to another CPU (0.15-0.2 ms of a 3 ms run, traced). Here `work` runs
/// first: what it does before it allocates, it does before the thread has any memory.
///
/// The thread has a 2 MiB stack, as the standard library gives its threads. A panic that
/// leaves `work` aborts the process (it cannot unwind out of the thread's C entry point), so
/// `work` should catch what it expects. A stack overflow is a plain `SIGSEGV`, without the
/// standard library's message, which only knows its own threads' guard pages. Where POSIX
/// threads are not the platform's (not Linux), or the thread cannot be created, `work`
/// comes back unrun, for the caller to start another way.
#[cfg(target_os = "linux")]
pub fn spawn_unprepared(work: Work) -> Result<(), Work> {
    use core::ffi::c_void;
    use core::mem::MaybeUninit;

    /// The standard library's stack size for the threads it starts (`RUST_MIN_STACK` unset).
    const STACK_BYTES: usize = 2 * 1024 * 1024;

    extern "C" fn start(arg: *mut c_void) -> *mut c_void {
        // SAFETY: `arg` is the `Box<Work>` leaked below, handed to this one thread.
        #[allow(unsafe_code)]
        let work = unsafe { Box::from_raw(arg.cast::<Work>()) };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || (*work)())).is_err() {
            // Unwinding out of an `extern "C"` function is not allowed; the panic message
            // was printed by the hook already.
            std::process::abort();
        }
        core::ptr::null_mut()
    }

    // A thin pointer to hand through C: the closure's box, boxed (the starter's allocation).
    let arg = Box::into_raw(Box::new(work)).cast::<c_void>();
    let mut attr = MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `attr` is initialised by `pthread_attr_init` before any other use and
    // destroyed once the thread is created; `start` takes `arg` over when `pthread_create`
    // succeeds, and it is freed here when it does not.
    #[allow(unsafe_code)]
    unsafe {
        let mut rc = libc::pthread_attr_init(attr.as_mut_ptr());
        if rc == 0 {
            rc = libc::pthread_attr_setstacksize(attr.as_mut_ptr(), STACK_BYTES);
            let mut thread = MaybeUninit::<libc::pthread_t>::uninit();
            if rc == 0 {
                rc = libc::pthread_create(thread.as_mut_ptr(), attr.as_ptr(), start, arg);
            }
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            if rc == 0 {
                // The thread ends on its own; nothing joins it.
                libc::pthread_detach(thread.assume_init());
                return Ok(());
            }
        }
        Err(*Box::from_raw(arg.cast::<Work>()))
    }
}

/// [`spawn_unprepared`] where POSIX threads are not the platform's: `work` comes back.
#[cfg(not(target_os = "linux"))]
pub fn spawn_unprepared(work: Work) -> Result<(), Work> {
    Err(work)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unprepared_thread_runs_its_work() {
        let (sender, receiver) = std::sync::mpsc::channel();
        let started = spawn_unprepared(Box::new(move || {
            // The standard library works on the thread: its handle, an allocation, a send.
            let name = std::thread::current().id();
            sender
                .send((name, vec![1u8, 2, 3]))
                .expect("the test waits");
        }));
        if cfg!(target_os = "linux") {
            assert!(started.is_ok(), "a thread starts");
            let (id, data) = receiver.recv().expect("the thread sends");
            assert_ne!(id, std::thread::current().id());
            assert_eq!(data, [1, 2, 3]);
        } else {
            assert!(started.is_err());
        }
    }
}

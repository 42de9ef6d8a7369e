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

/// A 2 MiB stretch of a thread's heap that the heap has not reached yet
/// ([`next_heap_huge_page`]), for another thread to have zeroed ahead ([`populate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapHugePage {
    /// The first byte, a multiple of [`HUGE_PAGE_BYTES`].
    pub start: usize,
}

/// The size of an x86-64 transparent huge page, the unit mimalloc's memory is zeroed in here.
pub const HUGE_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// The huge page after the one that holds a small block the calling thread allocates now: the
/// next fresh huge page its heap will touch as it grows.
///
/// mimalloc (v2) gives each thread's heap its own segments of 32 MiB and fills a segment from
/// its start; a thread's small blocks early in its life lie in its first segment's first huge
/// page, and its heap reaches the second once it holds about 2 MiB. Whether it ever does is
/// the caller's guess; a page populated in vain costs the populating thread its time and the
/// process 2 MiB of memory, nothing else.
pub fn next_heap_huge_page() -> HeapHugePage {
    // Asked of mimalloc itself, whether or not it is the global allocator.
    // SAFETY: a one-byte block from the calling thread's heap, freed at once; only its
    // address is kept.
    #[allow(unsafe_code)]
    let address = unsafe {
        let block = libmimalloc_sys::mi_malloc(1);
        libmimalloc_sys::mi_free(block);
        block as usize
    };
    HeapHugePage {
        start: (address & !(HUGE_PAGE_BYTES - 1)) + HUGE_PAGE_BYTES,
    }
}

/// Has the kernel zero `page` now, on the calling thread's CPU (`madvise(MADV_POPULATE_WRITE)`,
/// Linux 5.14 and later), so that the heap whose page it is finds it in place instead of
/// waiting for the zeroing at its first touch (0.06-0.15 ms for a huge page on our machines).
///
/// The contents do not change: a page already in place is left as it is, so another thread
/// may be using any part of it meanwhile. An error (an older kernel: `EINVAL`; memory the
/// allocator has not reserved: `ENOMEM`) leaves everything as it was; the page is then
/// zeroed at its first touch, as without this call.
#[cfg(target_os = "linux")]
pub fn populate(page: HeapHugePage) -> std::io::Result<()> {
    // SAFETY: MADV_POPULATE_WRITE only faults pages in (as writing to them would, without
    // writing); it neither changes nor frees memory, so any address range is sound to pass.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::madvise(
            page.start as *mut libc::c_void,
            HUGE_PAGE_BYTES,
            libc::MADV_POPULATE_WRITE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// [`populate`] where the operating system has no such call: nothing is populated.
#[cfg(not(target_os = "linux"))]
pub fn populate(_page: HeapHugePage) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
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

    /// Whether the 4 KiB page at `address` is in memory (`mincore`).
    #[cfg(target_os = "linux")]
    fn resident(address: usize) -> bool {
        let mut vector = [0_u8; 1];
        // SAFETY: `mincore` writes one byte per 4 KiB page of the range into `vector`.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::mincore(address as *mut libc::c_void, 4096, vector.as_mut_ptr()) };
        rc == 0 && vector[0] & 1 == 1
    }

    /// The next huge page lies just past the calling thread's newest small blocks.
    #[test]
    fn the_next_huge_page_follows_the_threads_newest_blocks() {
        std::thread::spawn(|| {
            let page = next_heap_huge_page();
            // SAFETY: a block of the thread's mimalloc heap of the probe's size, freed at once.
            #[allow(unsafe_code)]
            let block = unsafe {
                let block = libmimalloc_sys::mi_malloc(1);
                libmimalloc_sys::mi_free(block);
                block as usize
            };
            assert_eq!(page.start % HUGE_PAGE_BYTES, 0);
            assert!(
                page.start - HUGE_PAGE_BYTES <= block && block < page.start,
                "{block:#x} lies in the huge page before {:#x}",
                page.start
            );
        })
        .join()
        .expect("the test thread ends");
    }

    /// A huge page of fresh memory is not in memory until populated, and is afterwards, with
    /// the contents of the memory around it unchanged; an address nothing maps is an error.
    #[cfg(target_os = "linux")]
    #[test]
    fn populate_puts_a_fresh_huge_page_in_place() {
        const SPAN: usize = 3 * HUGE_PAGE_BYTES;
        // SAFETY: a private anonymous mapping of SPAN bytes, written and read only within
        // itself, unmapped at the end.
        #[allow(unsafe_code)]
        unsafe {
            let mapped = libc::mmap(
                core::ptr::null_mut(),
                SPAN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(mapped, libc::MAP_FAILED);
            let start = (mapped as usize).next_multiple_of(HUGE_PAGE_BYTES);
            let page = HeapHugePage { start };
            // A byte written before the page, in its own 4 KiB page.
            let before = (start - 1) as *mut u8;
            if start > mapped as usize {
                before.write(42);
            }
            assert!(
                !resident(start),
                "fresh memory is not in place before it is touched"
            );
            match populate(page) {
                Ok(()) => {
                    assert!(resident(start), "populated");
                    assert!(resident(start + HUGE_PAGE_BYTES - 4096), "all of it");
                    assert_eq!((start as *const u8).read(), 0, "zeroed");
                }
                // Kernels before 5.14 do not know the advice; nothing changed then.
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
                    assert!(!resident(start));
                }
            }
            if start > mapped as usize {
                assert_eq!(before.read(), 42);
            }
            assert_eq!(libc::munmap(mapped, SPAN), 0);
            let gone = populate(page).expect_err("unmapped memory cannot be populated");
            assert!(
                matches!(gone.raw_os_error(), Some(libc::ENOMEM | libc::EINVAL)),
                "{gone}"
            );
        }
    }
}

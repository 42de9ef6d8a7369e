//! Converting the input's ResourceSlices while the loader is still reading the rest of it.
//!
//! A JSON stream of a device cluster is mostly slices, which the loader only finds
//! ([`dra_api::LoadOptions::defer_slices`]) and the index converts (`dra_alloc::slice_json`):
//! read one after the other, the two are two thirds of a small simulation's time on its main
//! thread. Here the loader tells a queue of each slice it finds
//! ([`dra_api::LoadOptions::slice_sink`]); a helper thread converts them from the front of the
//! queue as they come, while the loader goes on with the pods; once the loader is done, its
//! thread converts the back half of what is left. The two runs, helper's first, are the
//! snapshot's slices in input order, which the index checks before it takes them
//! ([`dra_alloc::SliceRunAhead`]); the index, and every answer, is the same as without.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use dra_alloc::SliceRunAhead;
use dra_api::{SliceSink, SliceText};

/// How long the helper looks for the next slice busily before it sleeps: longer than the
/// loader takes from one slice to the next, or from reading the input to its first slice
/// (about 0.15 ms for gpu-nic), short enough that a long gap costs little
/// CPU.
const LOOK_BEFORE_SLEEPING: Duration = Duration::from_millis(1);

/// The slices found so far, and how far the helper has come.
#[derive(Default)]
struct Queue {
    texts: Vec<SliceText>,
    /// The next text the helper converts.
    next: usize,
    /// Where the helper stops: set once loading is done and the rest is shared out.
    end: Option<usize>,
    /// The helper waits for a text (only then is it woken: a wake-up is a system call).
    helper_waits: bool,
}

/// The queue between the loader and the helper that converts slices.
#[derive(Default)]
pub struct SlicesAhead {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl SlicesAhead {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The queue stays consistent at every unlock; a panic in the helper's conversion is
        // raised again where its job is joined.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the loader tells of each slice it keeps as text.
    pub fn sink(self: &Arc<Self>) -> SliceSink {
        let ahead = Arc::clone(self);
        SliceSink::new(move |slice| ahead.push(slice.shared_text()))
    }

    fn push(&self, text: SliceText) {
        let mut queue = self.lock();
        queue.texts.push(text);
        if queue.helper_waits {
            queue.helper_waits = false;
            drop(queue);
            self.ready.notify_one();
        }
    }

    /// The helper's work: converts slices from the front of the queue, waiting for more,
    /// until loading is done and the rest is shared out ([`SlicesAhead::finish`]).
    /// `room`: bytes of slice text to make room for (the whole input's, as the index keeps
    /// this run's list of devices and appends the caller's).
    pub fn convert_front(&self, room: usize) -> SliceRunAhead {
        // Made with its room only once there is a slice to convert: an input read in
        // parallel pieces tells of none.
        let mut run = None;
        while let Some(text) = self.next_for_helper() {
            run.get_or_insert_with(|| SliceRunAhead::with_room_for_text(room))
                .push(text.text(), text.end_unchecked());
        }
        run.unwrap_or_else(|| SliceRunAhead::with_room_for_text(0))
    }

    fn next_for_helper(&self) -> Option<SliceText> {
        let mut queue = self.lock();
        // A helper on a CPU of its own looks again busily for a while before it sleeps: woken
        // from the condition variable, it took 35-45 us to pick up the first slice (the
        // idle CPU's wake-up), which it otherwise has in a few.
        let mut looking_since = None;
        loop {
            let end = queue.end.unwrap_or(queue.texts.len());
            if queue.next < end {
                queue.next += 1;
                return Some(queue.texts[queue.next - 1].clone());
            }
            if queue.end.is_some() {
                return None;
            }
            let looked = looking_since.get_or_insert_with(Instant::now).elapsed();
            if looked < LOOK_BEFORE_SLEEPING && dra_types::parallel::runs_beside() {
                drop(queue);
                std::thread::yield_now();
                queue = self.lock();
                continue;
            }
            queue.helper_waits = true;
            queue = self
                .ready
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Called by the loading thread once loading is done, with how many slices the input
    /// has: the helper stops at the middle of the slices it has not begun, and the back half
    /// is the caller's to convert ([`convert`]). When the loader told of fewer slices (some
    /// were read in parallel pieces, or as YAML), the runs cannot be the index's, and when
    /// the input is not to be indexed (`None`: it has errors) they are not wanted: the helper
    /// stops after the slice at hand, and the caller gets none.
    pub fn finish(&self, slices: Option<usize>) -> Vec<SliceText> {
        let mut queue = self.lock();
        let back = if Some(queue.texts.len()) == slices {
            let middle = queue.next + (queue.texts.len() - queue.next) / 2;
            queue.end = Some(middle);
            queue.texts.split_off(middle)
        } else {
            queue.end = Some(queue.next);
            Vec::new()
        };
        let wake = std::mem::take(&mut queue.helper_waits);
        drop(queue);
        if wake {
            self.ready.notify_one();
        }
        back
    }
}

/// Converts `texts` in order, as one run.
pub fn convert(texts: &[SliceText]) -> SliceRunAhead {
    let mut run =
        SliceRunAhead::with_room_for_text(texts.iter().map(|text| text.text().len()).sum());
    for text in texts {
        run.push(text.text(), text.end_unchecked());
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;
    use dra_alloc::SliceInput;
    use dra_api::{LoadOptions, SliceDoc};

    /// The texts of `count` slices kept as JSON by a load.
    fn slice_texts(count: usize) -> Vec<SliceText> {
        let stream: String = (0..count)
            .map(|i| {
                format!(
                    r#"{{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{{"name":"s{i}"}},"spec":{{"driver":"gpu.example.com","nodeName":"n{i}","pool":{{"name":"n{i}","generation":1,"resourceSliceCount":1}},"devices":[{{"name":"gpu-0"}}]}}}}"#
                ) + "\n"
            })
            .collect();
        let options = LoadOptions {
            defer_slices: true,
            ..LoadOptions::default()
        };
        let loaded = dra_api::load_str_with("slices.json", &stream, &options);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        loaded
            .cluster
            .slice_docs
            .iter()
            .map(|doc| match &*doc.object {
                SliceDoc::Json(json) => json.shared_text(),
                SliceDoc::Object(_) => panic!("kept as text"),
            })
            .collect()
    }

    /// A helper beside the loader converts every slice it is given, in order, whether it
    /// finds the next one while looking busily or only once woken from its sleep (slices far
    /// apart), and ends once loading is done and nothing is left for it.
    #[test]
    fn the_helper_converts_slices_given_near_and_far_apart() {
        let texts = slice_texts(8);
        let ahead = Arc::new(SlicesAhead::default());
        std::thread::scope(|scope| {
            let helper = {
                let ahead = Arc::clone(&ahead);
                dra_types::parallel::spawn_beside(scope, move || ahead.convert_front(1 << 12))
            };
            for (i, text) in texts.iter().enumerate() {
                if i % 3 == 2 {
                    // Past the busy look: the helper sleeps, and the push wakes it.
                    std::thread::sleep(LOOK_BEFORE_SLEEPING * 3);
                }
                ahead.push(text.clone());
            }
            // Loading is done with every slice told; wait until the helper took them all, so
            // that nothing is left for this thread.
            while ahead.lock().next < texts.len() {
                std::thread::yield_now();
            }
            let back = ahead.finish(Some(texts.len()));
            assert!(back.is_empty());
            let front = helper.join().expect("the helper ends");
            assert_eq!(front.len(), texts.len());
            // The very texts, in order: the run fits them as the index would take them.
            let inputs: Vec<SliceInput<'_>> = texts
                .iter()
                .map(|text| match text.end_unchecked() {
                    true => SliceInput::JsonToLineEnd(text.text()),
                    false => SliceInput::Json(text.text()),
                })
                .collect();
            assert!(SliceRunAhead::fit(
                std::slice::from_ref(&front),
                &inputs,
                &[]
            ));
        });
    }
}

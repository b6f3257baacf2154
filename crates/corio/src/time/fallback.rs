//! Timers for futures polled where no corio runtime is (a plain thread's `corio::block_on`):
//! one lazily started thread with a timer heap, sleeping until the nearest deadline.

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

use super::heap::{TimerEntry, TimerHeap};

struct Fallback {
    epoch: Instant,
    heap: Mutex<TimerHeap>,
    changed: Condvar,
}

/// The fallback, once something has needed it.
static FALLBACK: OnceLock<&'static Fallback> = OnceLock::new();

fn fallback() -> &'static Fallback {
    FALLBACK.get_or_init(|| {
        let fb: &'static Fallback = Box::leak(Box::new(Fallback {
            epoch: Instant::now(),
            heap: Mutex::new(TimerHeap::new()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("corio-timer".into())
            .spawn(move || run(fb))
            .expect("corio: cannot start the fallback timer thread");
        fb
    })
}

fn run(fb: &'static Fallback) {
    let mut heap = fb.heap.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = super::nanos_since(fb.epoch, Instant::now());
        let mut due = Vec::new();
        while let Some(entry) = heap.pop_expired(now) {
            due.push(entry);
        }
        if !due.is_empty() {
            drop(heap);
            due.into_iter().for_each(|e| e.fire());
            heap = fb.heap.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        heap = match heap.next_deadline() {
            Some(d) => {
                fb.changed
                    .wait_timeout(heap, Duration::from_nanos(d - now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => fb.changed.wait(heap).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

pub(crate) fn register(deadline: Instant, waker: &Waker) -> Arc<TimerEntry> {
    let fb = fallback();
    let entry = TimerEntry::new(super::nanos_since(fb.epoch, deadline));
    entry.register(waker);
    fb.heap
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(entry.clone());
    fb.changed.notify_one();
    entry
}

/// Removes `entry` from the fallback's heap if it is there: one `register` put there, or one
/// [`adopt`] took over from a shut-down runtime (a no-op, starting nothing, if the fallback
/// never ran).
pub(crate) fn cancel(entry: &TimerEntry) {
    if let Some(fb) = FALLBACK.get() {
        fb.heap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(entry);
    }
}

/// Takes over a runtime's pending timer (the runtime is shutting down, and its worker's heap
/// lock is held): `entry` itself fires at its deadline (ns after `epoch`) from the fallback
/// thread, so that its owner's cancel ([`cancel`]) can still take it out.
pub(crate) fn adopt(epoch: Instant, entry: Arc<TimerEntry>) {
    let fb = fallback();
    let deadline = match entry.deadline() {
        // Never, on either clock.
        u64::MAX => u64::MAX,
        d => super::nanos_since(
            fb.epoch,
            super::deadline_after(epoch, Duration::from_nanos(d)),
        ),
    };
    fb.heap
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert_at(entry, deadline);
    fb.changed.notify_one();
}

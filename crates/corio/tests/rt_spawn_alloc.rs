//! Task memory is reused: a counting global allocator watches batches of spawn+join (a
//! spawner that keeps every handle until the batch is spawned, as `corio-bench spawn` does) and
//! long runs of spawn+join cycles, on one and two workers, stackful and stackless.
//!
//! A binary of its own: the allocator counts the whole process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering::SeqCst};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
thread_local! {
    /// Count this thread's allocations only (whatever `COUNTING` says): for a test whose
    /// operations all run on its own thread, while threads of earlier tests' runtimes may
    /// still be winding down. `const`, with no destructor: reading it never allocates.
    static COUNTING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether an allocation now is counted.
fn counted() -> bool {
    COUNTING.load(SeqCst)
        || COUNTING_HERE
            .try_with(std::cell::Cell::get)
            .unwrap_or(false)
}
/// Allocations made while `COUNTING` (or, on its own thread, `COUNTING_HERE`).
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
/// Bytes allocated less bytes freed, over the whole process.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator; counting has no effect on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCS.fetch_add(1, SeqCst);
        }
        LIVE_BYTES.fetch_add(layout.size() as isize, SeqCst);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, SeqCst);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            ALLOCS.fetch_add(1, SeqCst);
        }
        LIVE_BYTES.fetch_add(new_size as isize - layout.size() as isize, SeqCst);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The counters are the process's: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The batch: more than a thread's free list holds (1,024 blocks per size), so that reuse
/// must go through the shared pool.
const BATCH: usize = 10_000;

/// One-time allocations a batch may make after the warm-up on two workers, inboxes aside
/// (`PER_INBOX_DOUBLING`): placement vectors, a run or yielded queue growing the first time it
/// holds that many, a thread's first task chunk (6 at most in ~900 loaded batches): a
/// constant, far below the batch's 10,000 tasks. Before task blocks were pooled past
/// 4,096 per thread, a warm batch made 5,904 allocations.
const ONE_TIME: usize = 16;

/// What starting a spare worker allocates (its thread, name and queues; 5 measured). sysmon
/// starts spares when a worker looks stuck with work waiting, which load decides: a spawning
/// loop on a loaded machine holds its worker for whole time slices, and a batch then pays for
/// the spares it started. Counted per spare actually started in the batch (the runtime's
/// `spares_started`), so that a batch that starts none is held to `ONE_TIME`.
const PER_SPARE: usize = 8;

/// Growths per doubling of what a worker received from other threads (`worker_inbox_pushes`):
/// its inbox's entries and placed coroutines (worker.rs, `push_inbox_entry`) and the pinned
/// queue it takes them into (`take_inbox`) keep their capacity, but grow the first time they
/// hold that many. Load decides how many pile up: placement sends runs of children to the
/// other worker, which the kernel may not run for a while (~750 on an inbox never used
/// before: 17-20 growths, when the spawner ran on the other worker than in the warm-up).
const PER_INBOX_DOUBLING: usize = 3;

/// A batch's allowance: `ONE_TIME`, plus what the spares started while it ran allocated,
/// plus the inboxes' growth: logarithmic in what they received (a task each would be linear).
fn allowance(rt: &corio::Runtime, before: &corio::Metrics) -> usize {
    let now = rt.metrics();
    let growth: usize = (now.worker_inbox_pushes.iter())
        .zip(&before.worker_inbox_pushes)
        .map(|(now, before)| {
            let received = now - before;
            PER_INBOX_DOUBLING * (u64::BITS - received.leading_zeros()) as usize
        })
        .sum();
    ONE_TIME + PER_SPARE * (now.spares_started - before.spares_started) + growth
}

/// Every task is gone, eventually: the task that ran `rt.run`'s closure leaves the runtime's
/// list just after it has handed its result over.
fn assert_no_live_tasks(rt: &corio::Runtime) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while rt.metrics().live_tasks != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} tasks still live",
            rt.metrics().live_tasks
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

fn runtime(workers: usize) -> corio::Runtime {
    corio::Runtime::builder()
        .workers(workers)
        .hog_report(false)
        .build()
        .unwrap()
}

/// Spawns `BATCH` stackful coroutines from a coroutine, keeping the handles, then joins them;
/// returns the allocations made meanwhile.
fn stackful_batch(rt: &corio::Runtime) -> usize {
    rt.run(|| {
        let mut handles = Vec::with_capacity(BATCH);
        ALLOCS.store(0, SeqCst);
        COUNTING.store(true, SeqCst);
        for i in 0..BATCH {
            handles.push(corio::go(move || i));
        }
        let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        COUNTING.store(false, SeqCst);
        assert_eq!(sum, BATCH * (BATCH - 1) / 2);
        ALLOCS.load(SeqCst)
    })
}

/// The same with stackless tasks spawned from a task.
fn stackless_batch(rt: &corio::Runtime) -> usize {
    rt.block_on(rt.spawn(async {
        let mut handles = Vec::with_capacity(BATCH);
        ALLOCS.store(0, SeqCst);
        COUNTING.store(true, SeqCst);
        for i in 0..BATCH {
            handles.push(corio::spawn(async move { i }));
        }
        let mut sum = 0;
        for h in handles {
            sum += h.await.unwrap();
        }
        COUNTING.store(false, SeqCst);
        assert_eq!(sum, BATCH * (BATCH - 1) / 2);
        ALLOCS.load(SeqCst)
    }))
    .unwrap()
}

#[test]
fn a_warm_batch_of_spawns_allocates_nothing_per_task() {
    let _serial = serial();
    // The counter sees allocations at all.
    let seen = corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .build()
        .unwrap()
        .run(|| {
            ALLOCS.store(0, SeqCst);
            COUNTING.store(true, SeqCst);
            drop(std::hint::black_box(Box::new(1u8)));
            COUNTING.store(false, SeqCst);
            ALLOCS.load(SeqCst)
        });
    // At least the box: the count is the whole process's, and the runtime's other threads
    // may still be starting (thread names, stacks) while this window is open.
    assert!(seen >= 1, "the counter saw {seen} allocations");
    // Every part in turn: the counter is global.
    for workers in [1, 2] {
        let rt = runtime(workers);
        // Warm-up: the first batches carve the blocks.
        stackful_batch(&rt);
        stackless_batch(&rt);
        for round in 0..3 {
            let before = rt.metrics();
            let stackful = stackful_batch(&rt);
            let stackful_allowed = allowance(&rt, &before);
            let before = rt.metrics();
            let stackless = stackless_batch(&rt);
            let stackless_allowed = allowance(&rt, &before);
            let m = rt.metrics();
            assert!(
                stackful <= stackful_allowed && stackless <= stackless_allowed,
                "{workers} workers, round {round}: {stackful} allocations for {BATCH} stackful \
                 spawns (allowed {stackful_allowed}), {stackless} for {BATCH} stackless ones \
                 (allowed {stackless_allowed}; spares started so far: {}, inbox pushes so far: \
                 {:?})",
                m.spares_started,
                &m.worker_inbox_pushes[..m.workers],
            );
        }
        assert_no_live_tasks(&rt);
    }
}

/// Runs `count` batches of `size` stackful spawns from a coroutine, each batch spawned in
/// full before it is joined.
fn batches(rt: &corio::Runtime, size: usize, count: usize) {
    rt.run(move || {
        for _ in 0..count {
            let handles: Vec<_> = (0..size).map(|i| corio::go(move || i)).collect();
            let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, size * (size - 1) / 2);
        }
    });
}

/// The live bytes of the process that `f` added, once every task of `rt` is gone.
fn live_bytes_added(rt: &corio::Runtime, f: impl FnOnce()) -> isize {
    let before = LIVE_BYTES.load(SeqCst);
    f();
    assert_no_live_tasks(rt);
    LIVE_BYTES.load(SeqCst) - before
}

#[test]
fn a_million_spawn_join_cycles_keep_memory_bounded() {
    let _serial = serial();
    for workers in [1, 2] {
        let rt = runtime(workers);
        // Warm-up, then the live bytes of the process as a batch of 1,000 left them.
        batches(&rt, 1000, 10);
        let added = live_bytes_added(&rt, || batches(&rt, 1000, 1000));
        // A million tasks of ~300 bytes each would be 300 MB; the cycles may add a chunk
        // (1 MiB) per thread at most, as blocks move between the workers' lists.
        assert!(
            added <= 4 << 20,
            "{workers} workers: a million spawn+join cycles grew live memory by {added} bytes"
        );
    }
}

#[test]
fn threads_that_spawn_a_task_and_exit_do_not_each_keep_a_chunk() {
    let _serial = serial();
    let rt = runtime(1);
    let spawn_from_a_new_thread = |rt: &corio::Runtime| {
        std::thread::scope(|s| {
            let thread = s.spawn(|| {
                // Allocated on this thread, which exits right after; freed on the worker (the
                // handle is dropped first), so this thread has no block to give back (or one,
                // freed here under load, which goes to the pool at exit).
                let (tx, rx) = std::sync::mpsc::channel();
                drop(rt.spawn(async move { tx.send(7u64).unwrap() }));
                assert_eq!(rx.recv().unwrap(), 7);
            });
            // Joined here, not by the end of the scope: `join` returns once the thread has
            // exited, its thread-locals' destructors included, and it is there that it hands
            // the rest of its chunk over. The scope waits only for the closure to return; on a
            // loaded machine (6 copies of this binary on 2 cores) the next thread then often
            // started before that, found no leftover and took a chunk of its own (up to 4 at
            // once), bounded by how many threads lagged in exit, not by their number.
            thread.join().unwrap();
        });
        assert_no_live_tasks(rt);
    };
    spawn_from_a_new_thread(&rt);
    let added = live_bytes_added(&rt, || {
        for _ in 0..100 {
            spawn_from_a_new_thread(&rt);
        }
    });
    // A thread's first spawn takes memory for task blocks; an exiting thread must leave what
    // it did not use for others, or a program that spawns from short-lived threads grows by
    // that much per thread (a 1 MiB chunk: 100 MiB here). Each thread has exited before the
    // next starts, so one chunk's leftover serves them all (a block each): at most one chunk
    // is added, when a leftover that an earlier test's thread left runs out, plus a few
    // vectors growing once (the pool's and the leftovers' lists: under 1 KiB).
    assert!(
        added < 2 << 20,
        "100 threads that each spawned one task grew live memory by {added} bytes"
    );
}

#[test]
fn batches_that_span_many_huge_chunks_reuse_them() {
    let _serial = serial();
    // 50,000 stackful tasks of ~300 bytes held at once are ~15 MB of blocks: a thread's first
    // 1 MiB chunk and several 2 MiB huge-page chunks.
    const LARGE: usize = 50_000;
    for workers in [1, 2] {
        let rt = runtime(workers);
        batches(&rt, LARGE, 1);
        let added = live_bytes_added(&rt, || batches(&rt, LARGE, 3));
        // Every batch after the first runs on the first one's blocks: no chunk is added (one
        // for blocks that wandered to the other worker's list, at most).
        assert!(
            added <= 2 << 20,
            "{workers} workers: three more batches of {LARGE} grew live memory by {added} bytes"
        );
    }
}

/// A channel future polled again and again by another executor with the same waker (a
/// `select`/`join` combinator there re-polls every branch when one wakes) allocates nothing
/// after its first poll. Another executor's waker is stored as a *relay* (its clone is user
/// code, which must not run under the channel's lock: docs/chan.md), and a new relay per
/// poll was an allocation per re-poll, where the stored waker's `will_wake` had made the
/// re-poll free before relays existed.
#[test]
fn a_channel_future_polled_again_by_another_executor_allocates_nothing() {
    use std::future::Future;
    use std::task::{Context, Poll};
    let _serial = serial();
    // A waker whose vtable is a `static`, as executors' are: `Waker::noop()`'s is a constant,
    // and a debug build may give its clone (what a relay holds) another address, so that
    // `will_wake` says no (it compares pointers, and is allowed to).
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    let (tx, rx) = corio::chan::bounded::<u32>(0);
    let mut recv = std::pin::pin!(rx.recv_async());
    let (tx2, rx2) = corio::chan::bounded::<u32>(0);
    let mut send = std::pin::pin!(tx2.send_async(7));
    let (tx3, mut rx3) = corio::chan::bounded::<u32>(0);
    let mut next = futures::StreamExt::next(&mut rx3);
    let (tx4, rx4) = corio::chan::bounded::<u32>(0);
    let (_tx5, rx5) = corio::chan::bounded::<u32>(0);
    let mut select = std::pin::pin!(async {
        corio::select_async! {
            recv(rx4) -> v => v.unwrap(),
            recv(rx5) -> _ => unreachable!(),
        }
    });
    // The first polls queue the operations, each with a relay.
    assert!(recv.as_mut().poll(&mut cx).is_pending());
    assert!(send.as_mut().poll(&mut cx).is_pending());
    assert!(std::pin::Pin::new(&mut next).poll(&mut cx).is_pending());
    assert!(select.as_mut().poll(&mut cx).is_pending());
    ALLOCS.store(0, SeqCst);
    COUNTING_HERE.with(|c| c.set(true));
    for _ in 0..1_000 {
        assert!(recv.as_mut().poll(&mut cx).is_pending());
        assert!(send.as_mut().poll(&mut cx).is_pending());
        assert!(std::pin::Pin::new(&mut next).poll(&mut cx).is_pending());
        assert!(select.as_mut().poll(&mut cx).is_pending());
    }
    COUNTING_HERE.with(|c| c.set(false));
    let allocs = ALLOCS.load(SeqCst);
    // They still complete.
    assert_eq!(tx.try_send(5), Ok(()));
    assert_eq!(recv.as_mut().poll(&mut cx), Poll::Ready(Ok(5)));
    assert_eq!(rx2.try_recv(), Ok(7));
    assert!(send.as_mut().poll(&mut cx).is_ready());
    assert_eq!(tx3.try_send(9), Ok(()));
    assert_eq!(
        std::pin::Pin::new(&mut next).poll(&mut cx),
        Poll::Ready(Some(9))
    );
    assert_eq!(tx4.try_send(3), Ok(()));
    assert_eq!(select.as_mut().poll(&mut cx), Poll::Ready(3));
    assert_eq!(
        allocs, 0,
        "4,000 re-polls with the same waker allocated {allocs} times"
    );
}

/// As above, for the sync primitives' waits and `JoinSet`: each keeps the relay it made for
/// another executor's waker, so polling again with that waker neither allocates a relay nor
/// clones one into the wait list.
#[test]
fn a_sync_future_polled_again_by_another_executor_allocates_nothing() {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    let _serial = serial();
    let rt = runtime(1);
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());

    let mutex = corio::sync::Mutex::new(0_u32);
    let held = mutex.try_lock().unwrap();
    let mut lock = std::pin::pin!(mutex.lock_async());
    let semaphore = corio::sync::Semaphore::new(0);
    let mut acquire = std::pin::pin!(semaphore.acquire_async());
    let notify = corio::sync::Notify::new();
    let mut notified = std::pin::pin!(notify.notified_async());
    let rwlock = corio::sync::RwLock::new(0_u32);
    let reading = rwlock.try_read().unwrap();
    let mut write = std::pin::pin!(rwlock.write_async());
    let (mut tx, mut rx) = corio::sync::oneshot::channel::<u32>();
    let (gate_tx, gate_rx) = corio::sync::oneshot::channel::<()>();
    let mut set = corio::JoinSet::new();
    set.spawn_on(async move { gate_rx.await.is_ok() }, rt.handle());

    let mut poll_all = |cx: &mut Context<'_>| {
        assert!(lock.as_mut().poll(cx).is_pending());
        assert!(acquire.as_mut().poll(cx).is_pending());
        assert!(notified.as_mut().poll(cx).is_pending());
        assert!(write.as_mut().poll(cx).is_pending());
        assert!(Pin::new(&mut rx).poll(cx).is_pending());
        assert!(tx.poll_closed(cx).is_pending());
        assert!(set.poll_join_next(cx).is_pending());
    };
    // The first polls queue each wait, with a relay.
    poll_all(&mut cx);
    ALLOCS.store(0, SeqCst);
    COUNTING_HERE.with(|c| c.set(true));
    for _ in 0..1_000 {
        poll_all(&mut cx);
    }
    COUNTING_HERE.with(|c| c.set(false));
    let allocs = ALLOCS.load(SeqCst);

    // They still complete.
    drop(held);
    assert!(matches!(lock.as_mut().poll(&mut cx), Poll::Ready(_)));
    semaphore.add_permits(1);
    assert!(matches!(acquire.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
    notify.notify_one();
    assert!(notified.as_mut().poll(&mut cx).is_ready());
    drop(reading);
    assert!(write.as_mut().poll(&mut cx).is_ready());
    tx.send(4).unwrap();
    assert_eq!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(Ok(4)));
    gate_tx.send(()).unwrap();
    let joined = corio::block_on(std::future::poll_fn(|cx| set.poll_join_next(cx)));
    assert!(joined.unwrap().unwrap());
    assert_eq!(
        allocs, 0,
        "7,000 re-polls with the same waker allocated {allocs} times"
    );
}

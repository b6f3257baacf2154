//! What cancelling a blocked coroutine does: `JoinHandle::abort`, then dropping a runtime
//! whose coroutines are still blocked.
//!
//! Cancellation unwinds the coroutine's stack, so its destructors run — on its own thread.
//! Built with `panic = "abort"` there is no unwinding: corio then leaks the coroutine's stack
//! instead (its destructors do not run) and says so in one line on stderr; the join handle
//! still reports the cancellation. `tests/rt_soundness_runtime.rs` builds and runs this program both
//! ways (`RUSTFLAGS="-C panic=abort" cargo run -p corio --example cancellation`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts its drops: whether a cancelled coroutine's destructors ran.
struct Destructor(Arc<AtomicUsize>);

impl Drop for Destructor {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A coroutine that holds a `Destructor` on its stack and blocks for ever.
fn blocked(drops: &Arc<AtomicUsize>, started: &Arc<AtomicUsize>) -> impl FnOnce() + Send + use<> {
    let drops = drops.clone();
    let started = started.clone();
    move || {
        let _d = Destructor(drops);
        started.fetch_add(1, Ordering::SeqCst);
        corio::block_on(std::future::pending::<()>());
    }
}

fn wait_for(count: &AtomicUsize, n: usize) {
    while count.load(Ordering::SeqCst) < n {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

fn main() {
    println!(
        "panic strategy: {}",
        if cfg!(panic = "abort") {
            "abort"
        } else {
            "unwind"
        }
    );
    let drops = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));

    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let handle = rt.go(blocked(&drops, &started));
    wait_for(&started, 1);
    handle.abort();
    let result = handle.join();
    println!(
        "abort: cancelled={} destructors run={}",
        result.is_err_and(|e| e.is_cancelled()),
        drops.load(Ordering::SeqCst)
    );

    let kept = rt.go(blocked(&drops, &started));
    wait_for(&started, 2);
    drop(rt);
    println!(
        "runtime drop: cancelled={} destructors run={}",
        kept.join().is_err_and(|e| e.is_cancelled()),
        drops.load(Ordering::SeqCst)
    );
}

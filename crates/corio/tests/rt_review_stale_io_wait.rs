//! A coroutine's record of the socket it waits on (`StackfulCtx::io_wait`) outliving the wait:
//! a binary of its own, whose allocator poisons and keeps every freed block, so that a use
//! after free reads the poison instead of whatever the block was reused for.

#[macro_use]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use corio::coroutine::Coroutine;
use corio::net::UdpSocket;

/// Fills a freed block with `0xA5` and never hands it out again.
struct Poisoning;

// SAFETY: forwards allocations to the system allocator; a freed block is only written (within
// its layout, which the caller's contract says it owns) and then leaked, never reused.
unsafe impl GlobalAlloc for Poisoning {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live block of `layout.size()` bytes the caller gives up.
        unsafe { std::ptr::write_bytes(ptr, 0xA5, layout.size()) };
    }
}

#[global_allocator]
static GLOBAL: Poisoning = Poisoning;

/// A blocking read inside a bare `Coroutine` that a task resumed finds the socket not ready,
/// leaves the task's waker with it and then refuses to suspend (a panic with advice,
/// `nested_misuse`) — after `suspend_blocked_on_io` recorded the socket's `ScheduledIo` for a
/// cancellation to withdraw from, and the panic left that record in place. The task catches
/// the panic and goes on; the socket, registered with another runtime, goes, and so does
/// that runtime (and with it the registry, whose memory held the `ScheduledIo`). Aborting the
/// task then raises the cancellation from its next suspension, which withdrew its waker from
/// the freed `ScheduledIo`: here a lock word of poison, on which the cancellation waited for
/// ever.
#[test]
fn a_wait_refused_inside_a_bare_coroutine_leaves_no_record_for_the_cancellation() {
    support::within(Duration::from_secs(30), || {
        let other = support::rt(1);
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        // Registered with `other`, and drained: a read that times out.
        let s = socket.clone();
        other.run(move || {
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            let e = s.recv(&mut [0u8; 8]).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
            s.set_read_timeout(None).unwrap();
        });
        let rt = support::rt(1);
        let (tx, rx) = std::sync::mpsc::channel();
        let task = rt.go(move || {
            let s = socket.clone();
            let mut nested: Coroutine<(), (), ()> = Coroutine::new(move |_, ()| {
                let _ = s.recv(&mut [0u8; 8]);
            });
            let refused = catch_unwind(AssertUnwindSafe(|| {
                nested.resume(());
            }));
            assert!(refused.is_err(), "the nested read did not refuse");
            drop(nested);
            // The last handle: the socket's registration with `other` is released.
            drop(socket);
            tx.send(()).unwrap();
            corio::sleep(Duration::from_secs(3600));
        });
        rx.recv().unwrap();
        // The registry goes with its runtime.
        drop(other);
        task.abort();
        let e = task.join().unwrap_err();
        assert!(e.is_cancelled(), "{e:?}");
    });
}

//! The coop budget on `corio::net` operations: a socket that is always ready — a fast sender,
//! a pipelining client — must not let the coroutine or task reading it hold its worker until
//! the reads stop succeeding. Every read and write takes a unit of the task's budget (tokio's
//! `coop::poll_proceed`), so the reader yields after a bounded number of ready operations and
//! the other coroutines of its worker run in between.

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use corio::net::UnixStream;

/// Bytes the reader finds already buffered: far more one-byte reads than one budget allows.
const BUFFERED: usize = 64 * 1024;

/// The reading end of a socket pair with `BUFFERED` bytes waiting, and the writing end (kept
/// open, so that the reads never see the end of the stream).
fn always_ready() -> (UnixStream, std::os::unix::net::UnixStream) {
    let (reader, mut writer) = std::os::unix::net::UnixStream::pair().unwrap();
    writer.write_all(&vec![7u8; BUFFERED]).unwrap();
    (UnixStream::from_std(reader).unwrap(), writer)
}

#[test]
fn a_coroutine_reading_an_always_ready_socket_lets_the_others_of_its_worker_run() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let ran_before_the_reader_finished = rt.run(|| {
        let (mut reader, _writer) = always_ready();
        let other_ran = Arc::new(AtomicBool::new(false));
        let flag = other_ran.clone();
        let other = corio::go(move || flag.store(true, Ordering::Release));
        let mut byte = [0u8; 1];
        let mut seen_before_end = false;
        for i in 0..BUFFERED {
            assert_eq!(reader.read(&mut byte).unwrap(), 1);
            assert_eq!(byte[0], 7);
            if i + 1 < BUFFERED && other_ran.load(Ordering::Acquire) {
                seen_before_end = true;
            }
        }
        other.join().unwrap();
        seen_before_end
    });
    assert!(
        ran_before_the_reader_finished,
        "a coroutine of the reader's worker waited until {BUFFERED} ready reads were done"
    );
}

#[test]
fn a_task_reading_an_always_ready_socket_lets_the_others_of_its_worker_run() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let reader_task = rt.block_on(async {
        corio::spawn(async {
            let (reader, _writer) = always_ready();
            let other_ran = Arc::new(AtomicBool::new(false));
            let flag = other_ran.clone();
            let other = corio::spawn(async move { flag.store(true, Ordering::Release) });
            let mut byte = [0u8; 1];
            let mut seen_before_end = false;
            for i in 0..BUFFERED {
                assert_eq!(reader.read_async(&mut byte).await.unwrap(), 1);
                if i + 1 < BUFFERED && other_ran.load(Ordering::Acquire) {
                    seen_before_end = true;
                }
            }
            other.await.unwrap();
            seen_before_end
        })
        .await
    });
    let ran_before_the_reader_finished = reader_task.unwrap();
    assert!(
        ran_before_the_reader_finished,
        "a task of the reader's worker waited until {BUFFERED} ready reads were done"
    );
}

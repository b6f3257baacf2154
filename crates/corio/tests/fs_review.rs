//! `corio::fs::File` against `std::fs::File`: positions after mixed calls, calls whose future
//! was dropped (a read's bytes are not lost, a write is not reordered past later calls), a
//! `File` dropped with a call in flight, errors (`NotFound`, `InvalidData`, `InvalidInput`),
//! large files, and where the blocking-style forms may be called.
//!
//! Several tests make the order of pool jobs deterministic with a runtime whose blocking pool
//! has one thread, which a gate job occupies while the test queues the call it then drops.

#[macro_use]
mod support;

use std::future::Future;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::pin::{Pin, pin};
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use support::{TempDir, within};

/// A hang is a failure well before the harness would notice.
const LIMIT: Duration = Duration::from_secs(20);

/// One worker and a blocking pool of one thread: pool jobs run one at a time, in the order
/// they were queued.
fn rt_one_pool_thread() -> corio::Runtime {
    corio::Runtime::builder()
        .workers(1)
        .max_blocking_threads(1)
        .hog_report(false)
        .build()
        .unwrap()
}

/// Polls `fut` once (the caller then drops it: a cancelled call).
fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Occupies the (single) pool thread until the returned sender sends or is dropped. Call it
/// inside the runtime.
fn hold_the_pool() -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    drop(corio::spawn_blocking(move || {
        let _ = rx.recv();
    }));
    tx
}

/// Lets the pool go after `delay`, from another thread (the caller may be about to wait for
/// it).
fn release_after(gate: mpsc::Sender<()>, delay: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        let _ = gate.send(());
    });
}

/// Waits until every job queued on `rt`'s pool so far has run (one pool thread: FIFO).
fn drain_the_pool(rt: &corio::Runtime) {
    rt.block_on(async { corio::spawn_blocking(|| ()).await.unwrap() });
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn digits(n: usize) -> Vec<u8> {
    (0..n).map(|i| b"0123456789abcdef"[i % 16]).collect()
}

#[test]
fn a_dropped_read_async_loses_no_bytes_the_next_read_returns_them() {
    within(LIMIT, || {
        let dir = TempDir::new("dropped-read");
        let path = dir.join("f");
        std::fs::write(&path, digits(16)).unwrap();
        let rt = rt_one_pool_thread();
        rt.block_on(async move {
            let mut f = corio::fs::File::open_async(&path).await.unwrap();
            let gate = hold_the_pool();
            {
                let mut buf = [0u8; 4];
                let read = pin!(f.read_async(&mut buf));
                assert!(poll_once(read).is_pending()); // queued behind the gate
            }
            drop(gate);
            // The dropped read's job ran before these (one pool thread), yet the caller never
            // saw its bytes: the position it sees has not moved, and the next read gets them.
            assert_eq!(f.seek_async(SeekFrom::Current(0)).await.unwrap(), 0);
            let mut buf = [0u8; 4];
            assert_eq!(f.read_async(&mut buf).await.unwrap(), 4);
            assert_eq!(&buf, b"0123");
            assert_eq!(f.read_async(&mut buf).await.unwrap(), 4);
            assert_eq!(&buf, b"4567");
            assert_eq!(f.seek_async(SeekFrom::Current(0)).await.unwrap(), 8);
        });
    });
}

#[test]
fn after_a_dropped_read_seek_and_write_use_the_callers_position() {
    within(LIMIT, || {
        let dir = TempDir::new("dropped-read-write");
        let path = dir.join("f");
        std::fs::write(&path, digits(16)).unwrap();
        let rt = rt_one_pool_thread();
        let p = path.clone();
        rt.block_on(async move {
            let mut f = corio::fs::File::options()
                .read(true)
                .write(true)
                .open_async(&p)
                .await
                .unwrap();
            let mut buf = [0u8; 2];
            f.read_async(&mut buf).await.unwrap(); // at 2
            let gate = hold_the_pool();
            {
                let mut buf = [0u8; 8];
                let read = pin!(f.read_async(&mut buf));
                assert!(poll_once(read).is_pending());
            }
            drop(gate);
            // A write goes where the caller left the cursor (2), not after the dropped read.
            f.write_all_async(b"XY").await.unwrap();
            // SeekFrom::Current counts from the caller's position too; a negative result is
            // InvalidInput (as std) and moves nothing.
            assert_eq!(f.seek_async(SeekFrom::Current(0)).await.unwrap(), 4);
            let e = f.seek_async(SeekFrom::Current(-5)).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert_eq!(f.seek_async(SeekFrom::Current(-1)).await.unwrap(), 3);
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"01XY456789abcdef");
    });
}

#[test]
fn a_dropped_read_async_of_a_fifo_keeps_what_it_read() {
    within(LIMIT, || {
        let dir = TempDir::new("dropped-fifo");
        let path = dir.join("fifo");
        mkfifo(&path);
        // Read-write: opening does not wait for a writer (Linux), and the pipe stays open.
        let reader = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut writer = std::fs::File::options().write(true).open(&path).unwrap();
        let rt = rt_one_pool_thread();
        let got = rt.block_on(async move {
            let mut f = corio::fs::File::from_std(reader);
            {
                let mut buf = [0u8; 64];
                let read = pin!(f.read_async(&mut buf));
                assert!(poll_once(read).is_pending()); // waits for data on the pool
            }
            writer.write_all(b"first").unwrap();
            corio::time::sleep_async(Duration::from_millis(100)).await;
            writer.write_all(b"second").unwrap();
            let mut buf = [0u8; 5];
            f.read_async(&mut buf).await.unwrap();
            buf
        });
        assert_eq!(&got, b"first", "the bytes the dropped read took were lost");
    });
}

#[test]
fn a_write_async_dropped_in_flight_lands_before_the_next_call() {
    within(LIMIT, || {
        let dir = TempDir::new("dropped-write");
        let path = dir.join("f");
        let rt = rt_one_pool_thread();
        let p = path.clone();
        let (mut f, gate) = rt.block_on(async move {
            let mut f = corio::fs::File::create_async(&p).await.unwrap();
            let gate = hold_the_pool();
            {
                let write = pin!(f.write_async(b"AAAA"));
                assert!(poll_once(write).is_pending()); // queued behind the gate
            }
            (f, gate)
        });
        release_after(gate, Duration::from_millis(100));
        // From a plain thread (in place): it must still come after the write in flight.
        f.write_all(b"BBBB").unwrap();
        assert_eq!(f.metadata().unwrap().len(), 8);
        drain_the_pool(&rt);
        assert_eq!(std::fs::read(&path).unwrap(), b"AAAABBBB");
    });
}

#[test]
fn set_len_after_a_dropped_write_async_is_not_undone_by_it() {
    within(LIMIT, || {
        let dir = TempDir::new("dropped-write-set-len");
        let path = dir.join("f");
        let rt = rt_one_pool_thread();
        let p = path.clone();
        let (f, gate) = rt.block_on(async move {
            let mut f = corio::fs::File::create_async(&p).await.unwrap();
            let gate = hold_the_pool();
            {
                let write = pin!(f.write_async(&[7u8; 4096]));
                assert!(poll_once(write).is_pending());
            }
            (f, gate)
        });
        release_after(gate, Duration::from_millis(100));
        f.set_len(0).unwrap();
        drain_the_pool(&rt);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        drop(f);
    });
}

#[test]
fn a_file_dropped_with_a_write_in_flight_writes_it_and_no_other_file() {
    // The pool job keeps the descriptor open: closing it early would let the next `open`
    // reuse its number, and the job would write into that other file.
    within(LIMIT, || {
        let dir = TempDir::new("drop-in-flight");
        let (first, second) = (dir.join("first"), dir.join("second"));
        let rt = rt_one_pool_thread();
        let p = first.clone();
        let gate = rt.block_on(async move {
            let mut f = corio::fs::File::create_async(&p).await.unwrap();
            let gate = hold_the_pool();
            {
                let write = pin!(f.write_async(b"for the first file"));
                assert!(poll_once(write).is_pending());
            }
            drop(f);
            gate
        });
        let mut other = std::fs::File::create(&second).unwrap();
        other.write_all(b"second").unwrap();
        gate.send(()).unwrap();
        drain_the_pool(&rt);
        drop(other);
        assert_eq!(std::fs::read(&first).unwrap(), b"for the first file");
        assert_eq!(std::fs::read(&second).unwrap(), b"second");
    });
}

/// The same script of reads, writes and seeks on a `std` file and a `corio` file; every
/// result and the final contents must agree.
fn script<F: Read + Write + Seek>(f: &mut F) -> Vec<String> {
    let mut log = Vec::new();
    let mut buf = [0u8; 5];
    log.push(format!(
        "{:?}",
        f.write(b"hello world").map_err(|e| e.kind())
    ));
    log.push(format!(
        "{:?}",
        f.seek(SeekFrom::Start(6)).map_err(|e| e.kind())
    ));
    log.push(format!("{:?}", f.read(&mut buf).map_err(|e| e.kind())));
    log.push(format!("{:?}", String::from_utf8_lossy(&buf)));
    log.push(format!("{:?}", f.stream_position().map_err(|e| e.kind())));
    log.push(format!(
        "{:?}",
        f.seek(SeekFrom::End(-5)).map_err(|e| e.kind())
    ));
    log.push(format!("{:?}", f.write(b"WORLD!!").map_err(|e| e.kind())));
    log.push(format!(
        "{:?}",
        f.seek(SeekFrom::Current(-100)).map_err(|e| e.kind())
    ));
    log.push(format!("{:?}", f.stream_position().map_err(|e| e.kind())));
    log.push(format!(
        "{:?}",
        f.seek(SeekFrom::End(-100)).map_err(|e| e.kind())
    ));
    log.push(format!(
        "{:?}",
        f.seek(SeekFrom::End(4)).map_err(|e| e.kind())
    ));
    log.push(format!("{:?}", f.write(b"!").map_err(|e| e.kind())));
    log.push(format!("{:?}", f.read(&mut buf).map_err(|e| e.kind())));
    log.push(format!("{:?}", f.rewind().map_err(|e| e.kind())));
    let mut all = Vec::new();
    log.push(format!(
        "{:?}",
        f.read_to_end(&mut all).map_err(|e| e.kind())
    ));
    log.push(format!("{all:?}"));
    log.push(format!(
        "{:?}",
        f.seek(SeekFrom::Start(2)).map_err(|e| e.kind())
    ));
    let mut s = String::new();
    log.push(format!(
        "{:?}",
        f.read_to_string(&mut s).map_err(|e| e.kind())
    ));
    log.push(format!("{:?}", f.flush().map_err(|e| e.kind())));
    log
}

fn std_script(path: &Path) -> (Vec<String>, Vec<u8>) {
    let mut f = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap();
    let log = script(&mut f);
    (log, std::fs::read(path).unwrap())
}

#[test]
fn reads_writes_and_seeks_agree_with_std_in_a_coroutine_and_on_a_plain_thread() {
    within(LIMIT, || {
        let dir = TempDir::new("script");
        let want = std_script(&dir.join("std"));
        let open = |path: &Path| {
            corio::fs::File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .unwrap()
        };
        // A plain thread, outside any runtime.
        let path = dir.join("thread");
        let log = script(&mut open(&path));
        assert_eq!((log, std::fs::read(&path).unwrap()), want);
        // Coroutines, on both scheduler flavours.
        for workers in support::FLAVOURS {
            let path = dir.join(&format!("coroutine{workers}"));
            let p = path.clone();
            let log = support::rt(workers).run(move || script(&mut open(&p)));
            assert_eq!((log, std::fs::read(&path).unwrap()), want);
        }
    });
}

#[test]
fn errors_are_stds_not_found_and_invalid_data() {
    within(LIMIT, || {
        let dir = TempDir::new("errors");
        let missing = dir.join("missing");
        let latin1 = dir.join("latin1");
        std::fs::write(&latin1, b"caf\xe9").unwrap();
        let (m, l) = (missing.clone(), latin1.clone());
        support::rt(1).run(move || {
            assert_eq!(corio::fs::read(&m).unwrap_err().kind(), ErrorKind::NotFound);
            assert_eq!(
                corio::fs::File::open(&m).unwrap_err().kind(),
                ErrorKind::NotFound
            );
            let e = corio::fs::read_to_string(&l).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidData);
            let mut s = String::new();
            let e = corio::fs::File::open(&l).unwrap().read_to_string(&mut s);
            assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidData);
            let new = corio::fs::File::options()
                .write(true)
                .create_new(true)
                .open(&l);
            assert_eq!(new.unwrap_err().kind(), ErrorKind::AlreadyExists);
        });
        let text = support::rt(1).block_on(async move {
            let e = corio::fs::read_async(&missing).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotFound);
            corio::fs::read_to_string_async(&latin1).await
        });
        assert_eq!(text.unwrap_err().kind(), ErrorKind::InvalidData);
    });
}

#[test]
fn sixty_four_mib_are_written_and_read_whole() {
    within(LIMIT, || {
        let dir = TempDir::new("large");
        let data: Vec<u8> = (0..64 << 20).map(|i: u32| (i % 251) as u8).collect();
        let (a, b) = (dir.join("a"), dir.join("b"));
        let (pa, pb, d) = (a.clone(), b.clone(), data.clone());
        let (whole, by_file) = support::rt(2).run(move || {
            corio::fs::write(&pa, &d).unwrap();
            let mut f = corio::fs::File::create(&pb).unwrap();
            f.write_all(&d).unwrap();
            f.sync_data().unwrap();
            drop(f);
            let mut back = Vec::new();
            corio::fs::File::open(&pb)
                .unwrap()
                .read_to_end(&mut back)
                .unwrap();
            (corio::fs::read(&pa).unwrap(), back)
        });
        assert!(whole == data, "fs::write/fs::read of 64 MiB");
        assert!(by_file == data, "write_all/read_to_end of 64 MiB");
        let pb = b.clone();
        let n = support::rt(1).block_on(async move {
            let mut f = corio::fs::File::open_async(&pb).await.unwrap();
            let mut buf = vec![0u8; 64 << 20];
            let mut n = 0;
            loop {
                match f.read_async(&mut buf[n..]).await.unwrap() {
                    0 => break n,
                    k => n += k,
                }
            }
        });
        assert_eq!(n, data.len());
    });
}

#[test]
fn sync_metadata_and_set_len_have_async_forms_that_wait_like_std() {
    within(LIMIT, || {
        let dir = TempDir::new("sync");
        let path = dir.join("f");
        let p = path.clone();
        support::rt(1).block_on(async move {
            let mut f = corio::fs::File::create_async(&p).await.unwrap();
            f.write_all_async(b"0123456789").await.unwrap();
            f.sync_data_async().await.unwrap();
            f.sync_all_async().await.unwrap();
            f.set_len_async(4).await.unwrap();
            assert_eq!(f.metadata_async().await.unwrap().len(), 4);
            f.set_len_async(6).await.unwrap();
            // The cursor stays at 10 (as std): the next write leaves a hole.
            f.write_all_async(b"!").await.unwrap();
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"0123\0\0\0\0\0\0!");
    });
}

#[test]
fn blocking_style_calls_in_an_async_task_panic_with_advice_and_run_in_block_on() {
    within(LIMIT, || {
        let dir = TempDir::new("stackless");
        let path = dir.join("f");
        std::fs::write(&path, "x").unwrap();
        let rt = support::rt(1);
        // `block_on`'s future runs on the calling thread, which may block: in place.
        let p = path.clone();
        assert_eq!(
            rt.block_on(async move { corio::fs::read(&p).unwrap() }),
            b"x"
        );
        let p = path.clone();
        let joined =
            rt.block_on(async move { corio::spawn(async move { corio::fs::read(&p) }).await });
        let payload = joined.unwrap_err().into_panic();
        let msg = support::payload_text(&*payload);
        assert!(msg.contains("_async"), "{msg}");
    });
}

#[test]
fn a_file_prints_like_a_std_file_not_its_buffer() {
    within(LIMIT, || {
        let dir = TempDir::new("debug");
        let path = dir.join("f");
        std::fs::write(&path, vec![1u8; 1 << 20]).unwrap();
        let mut f = corio::fs::File::open(&path).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        f.read_exact(&mut buf).unwrap();
        let shown = format!("{f:?}");
        assert!(shown.len() < 300, "{} bytes of Debug output", shown.len());
    });
}

#[test]
fn a_file_is_send_sync_and_unwind_safe_as_a_std_file() {
    fn as_std_file<T: Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    as_std_file::<std::fs::File>();
    as_std_file::<corio::fs::File>();
}

#[test]
fn the_async_forms_are_send() {
    fn send<T: Send>(_: T) {}
    let mut f = corio::fs::File::from_std(tempfile_std());
    let mut buf = [0u8; 1];
    send(f.read_async(&mut buf));
    send(f.write_async(b""));
    send(f.seek_async(SeekFrom::Start(0)));
    send(f.sync_all_async());
    send(f.metadata_async());
}

fn tempfile_std() -> std::fs::File {
    std::fs::File::open("/dev/null").unwrap()
}

const RECORD: usize = 64;

fn record(writer: u8, i: usize) -> [u8; RECORD] {
    let mut r = [b'.'; RECORD];
    let head = format!("w{writer} r{i:05}");
    r[..head.len()].copy_from_slice(head.as_bytes());
    r[RECORD - 1] = b'\n';
    r
}

#[test]
fn coroutines_sharing_a_file_through_a_shared_reference_write_and_read_whole_records() {
    within(LIMIT, || {
        let dir = TempDir::new("shared");
        let path = dir.join("f");
        let p = path.clone();
        const PER_WRITER: usize = 500;
        let read_back = support::rt(2).run(move || {
            let f = std::sync::Arc::new(
                corio::fs::File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&p)
                    .unwrap(),
            );
            let writers: Vec<_> = (0..2u8)
                .map(|w| {
                    let f = f.clone();
                    corio::go(move || {
                        for i in 0..PER_WRITER {
                            (&*f).write_all(&record(w, i)).unwrap();
                        }
                    })
                })
                .collect();
            writers.into_iter().for_each(|w| w.join().unwrap());
            assert_eq!(
                f.metadata().unwrap().len(),
                (2 * PER_WRITER * RECORD) as u64
            );
            (&*f).rewind().unwrap();
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    let f = f.clone();
                    corio::go(move || {
                        let mut got = Vec::new();
                        let mut r = [0u8; RECORD];
                        loop {
                            match (&*f).read(&mut r).unwrap() {
                                0 => break got,
                                n => {
                                    assert_eq!(n, RECORD, "a record read in parts");
                                    got.push(r);
                                }
                            }
                        }
                    })
                })
                .collect();
            let mut all: Vec<[u8; RECORD]> = readers
                .into_iter()
                .flat_map(|r| r.join().unwrap())
                .collect();
            all.sort();
            all
        });
        let mut want: Vec<[u8; RECORD]> = (0..2u8)
            .flat_map(|w| (0..PER_WRITER).map(move |i| record(w, i)))
            .collect();
        want.sort();
        assert!(read_back == want, "records torn, lost or read twice");
    });
}

#[test]
fn a_coroutine_cancelled_in_a_read_leaves_its_bytes_to_the_next_reader() {
    within(LIMIT, || {
        let dir = TempDir::new("cancelled-coroutine");
        let path = dir.join("fifo");
        mkfifo(&path);
        let reader = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut writer = std::fs::File::options().write(true).open(&path).unwrap();
        let got = support::rt(2).run(move || {
            let f = std::sync::Arc::new(corio::fs::File::from_std(reader));
            let f2 = f.clone();
            let (started_tx, started_rx) = corio::chan::bounded::<()>(1);
            let cancelled = corio::go(move || {
                started_tx.send(()).unwrap();
                let mut buf = [0u8; 64];
                let _ = (&*f2).read(&mut buf); // waits on the pool until cancelled
                unreachable!("nothing was written yet");
            });
            started_rx.recv().unwrap();
            corio::sleep(Duration::from_millis(50)); // let it reach the pool
            cancelled.abort();
            assert!(cancelled.join().unwrap_err().is_cancelled());
            writer.write_all(b"first").unwrap();
            corio::sleep(Duration::from_millis(100));
            writer.write_all(b"second").unwrap();
            let mut buf = [0u8; 5];
            (&*f).read_exact(&mut buf).unwrap();
            buf
        });
        assert_eq!(
            &got, b"first",
            "the bytes the cancelled read took were lost"
        );
    });
}

#[test]
fn async_forms_work_on_a_plain_thread_and_in_a_coroutine_through_corio_block_on() {
    within(LIMIT, || {
        let dir = TempDir::new("plain-async");
        let sub = dir.join("a/b");
        let p = sub.clone();
        support::rt(1).run(move || {
            corio::block_on(async {
                corio::fs::create_dir_all_async(&p).await.unwrap();
                corio::fs::write_async(p.join("f"), "x").await.unwrap();
                corio::fs::remove_file_async(p.join("f")).await.unwrap();
                let e = corio::fs::remove_file_async(p.join("f")).await.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::NotFound);
            })
        });
        assert!(sub.is_dir());
        let path = dir.join("f");
        let text = corio::block_on(async {
            corio::fs::write_async(&path, "plain").await.unwrap();
            let mut f = corio::fs::File::open_async(&path).await.unwrap();
            f.seek_async(SeekFrom::Start(1)).await.unwrap();
            let mut buf = [0u8; 4];
            f.read_async(&mut buf).await.unwrap();
            buf
        });
        assert_eq!(&text, b"lain");
    });
}

#[test]
fn after_a_dropped_read_the_next_read_sees_the_file_as_it_is_now() {
    // As if the dropped read had not been made: a later `set_len` or a write through another
    // handle is seen by the next read, not bytes the dropped read took before them.
    within(LIMIT, || {
        let dir = TempDir::new("dropped-read-fresh");
        let path = dir.join("f");
        std::fs::write(&path, digits(16)).unwrap();
        let rt = rt_one_pool_thread();
        let p = path.clone();
        let got = rt.block_on(async move {
            let mut f = corio::fs::File::options()
                .read(true)
                .write(true)
                .open_async(&p)
                .await
                .unwrap();
            let gate = hold_the_pool();
            {
                let mut buf = [0u8; 8];
                let read = pin!(f.read_async(&mut buf));
                assert!(poll_once(read).is_pending());
            }
            drop(gate);
            f.set_len_async(6).await.unwrap();
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .write_all(b"XY")
                .unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 16];
            loop {
                match f.read_async(&mut buf).await.unwrap() {
                    0 => break got,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
        });
        assert_eq!(got, b"XY2345");
    });
}

#[test]
fn write_all_async_retries_an_interrupted_write_as_std_write_all_does() {
    // A signal whose handler is installed without SA_RESTART interrupts a write blocked on a
    // full pipe (EINTR, nothing written); `std::io::Write::write_all` retries that.
    extern "C" fn ignore(_: libc::c_int) {}
    within(LIMIT, || {
        // SAFETY: a handler that does nothing is async-signal-safe; SIGUSR1 is sent only to
        // the pool thread below.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = 0; // no SA_RESTART
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(
                libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
                0
            );
        }
        let dir = TempDir::new("eintr");
        let path = dir.join("fifo");
        mkfifo(&path);
        let writer = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let reader = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::File::options()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .unwrap()
        };
        // Fill the pipe.
        let mut filler = 0;
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut nb = std::fs::File::options()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .unwrap();
            loop {
                match nb.write(&[b'.'; 4096]) {
                    Ok(n) => filler += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        let rt = rt_one_pool_thread();
        let result = rt.block_on(async move {
            // The pool's one thread, which will run the write.
            // SAFETY: pthread_self has no preconditions.
            let pool_thread = corio::spawn_blocking(|| unsafe { libc::pthread_self() } as u64)
                .await
                .unwrap();
            let drained = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200)); // the write is blocked by now
                // SAFETY: the pool thread is alive (idle-exit takes 10 s).
                let sent =
                    unsafe { libc::pthread_kill(pool_thread as libc::pthread_t, libc::SIGUSR1) };
                assert_eq!(sent, 0);
                std::thread::sleep(Duration::from_millis(100));
                let (mut reader, mut got) = (reader, Vec::new());
                let mut buf = [0u8; 65536];
                let give_up = std::time::Instant::now() + Duration::from_secs(10);
                while got.len() < filler + 5 && std::time::Instant::now() < give_up {
                    match reader.read(&mut buf) {
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(1))
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                got
            });
            let mut f = corio::fs::File::from_std(writer);
            let result = f.write_all_async(b"hello").await;
            (result, drained)
        });
        let (result, drained) = result;
        result.expect("write_all_async gave up on an interrupted write");
        let got = drained.join().unwrap();
        assert_eq!(&got[filler..], b"hello");
    });
}

#[test]
fn open_options_take_a_mode_and_custom_flags_as_std_on_unix() {
    use std::os::unix::fs::PermissionsExt;
    within(LIMIT, || {
        let dir = TempDir::new("mode");
        let (private, link) = (dir.join("private"), dir.join("link"));
        let (p, l) = (private.clone(), link.clone());
        support::rt(1).run(move || {
            let f = corio::fs::File::options()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&p)
                .unwrap();
            assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600);
            std::os::unix::fs::symlink(&p, &l).unwrap();
            let e = corio::fs::File::options()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&l)
                .unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
            let mut std_options = std::fs::OpenOptions::new();
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut std_options, libc::O_NOFOLLOW);
            std_options.read(true);
            let e = corio::fs::OpenOptions::from(std_options)
                .open(&l)
                .unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        });
    });
}

#[test]
fn a_file_lends_its_descriptor_as_a_std_file_does() {
    use std::os::fd::{AsFd, AsRawFd};
    within(LIMIT, || {
        let dir = TempDir::new("fd");
        let path = dir.join("f");
        std::fs::write(&path, "four").unwrap();
        let f = corio::fs::File::open(&path).unwrap();
        assert!(f.as_raw_fd() >= 0);
        let dup = std::fs::File::from(f.as_fd().try_clone_to_owned().unwrap());
        assert_eq!(dup.metadata().unwrap().len(), 4);
    });
}

//! `corio::fs`: whole-file calls and `File` with Read/Write/Seek, blocking-style from
//! coroutines and plain threads and async from tasks; a coroutine waiting on the disk does not
//! hold its worker.

#[macro_use]
mod support;

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use support::{EVENTUALLY, within};

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("corio-fs-{}-{name}", std::process::id()))
}

rt_common! {
    #[test]
    fn a_file_written_in_parts_reads_back_and_seeks_from_a_coroutine() {
        within(EVENTUALLY, || {
            let path = temp(&format!("parts{WORKERS}"));
            let p = path.clone();
            rt().run(move || {
                let mut f = corio::fs::File::create(&p).unwrap();
                for i in 0..100u32 {
                    f.write_all(&i.to_le_bytes()).unwrap();
                }
                f.sync_all().unwrap();
                assert_eq!(f.metadata().unwrap().len(), 400);
                drop(f);
                let mut f = corio::fs::File::open(&p).unwrap();
                f.seek(SeekFrom::Start(4 * 42)).unwrap();
                let mut word = [0u8; 4];
                f.read_exact(&mut word).unwrap();
                assert_eq!(u32::from_le_bytes(word), 42);
                f.seek(SeekFrom::Start(0)).unwrap();
                let mut all = Vec::new();
                f.read_to_end(&mut all).unwrap();
                assert_eq!(all.len(), 400);
                assert_eq!(corio::fs::read(&p).unwrap(), all);
            });
            std::fs::remove_file(path).unwrap();
        });
    }

    #[test]
    fn async_tasks_use_the_async_forms() {
        within(EVENTUALLY, || {
            let path = temp(&format!("async{WORKERS}"));
            let p = path.clone();
            let text = rt().block_on(async move {
                corio::fs::write_async(&p, b"one ").await.unwrap();
                let mut f = corio::fs::File::options().append(true).open_async(&p).await.unwrap();
                f.write_all_async(b"two").await.unwrap();
                let mut f = corio::fs::File::open_async(&p).await.unwrap();
                f.seek_async(SeekFrom::Start(4)).await.unwrap();
                let mut buf = [0u8; 3];
                assert_eq!(f.read_async(&mut buf).await.unwrap(), 3);
                assert_eq!(&buf, b"two");
                corio::fs::read_to_string_async(&p).await.unwrap()
            });
            assert_eq!(text, "one two");
            std::fs::remove_file(path).unwrap();
        });
    }

    #[test]
    fn a_coroutine_reading_a_fifo_does_not_hold_its_worker() {
        // A FIFO with no writer yet: opening it for reading blocks until one comes. The open
        // runs on the blocking pool, so another coroutine on the same worker runs meanwhile
        // and is the one that opens the writing end.
        within(EVENTUALLY, || {
            let path = temp(&format!("fifo{WORKERS}"));
            let _ = std::fs::remove_file(&path);
            let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            // SAFETY: a valid C string path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let p = path.clone();
            let got = rt().run(move || {
                let p2 = p.clone();
                let reader = corio::go(move || corio::fs::read(&p2).unwrap());
                corio::yield_now();
                let mut w = corio::fs::File::options().write(true).open(&p).unwrap();
                w.write_all(b"through the pool").unwrap();
                drop(w);
                reader.join().unwrap()
            });
            assert_eq!(got, b"through the pool");
            std::fs::remove_file(path).unwrap();
        });
    }
}

#[test]
fn plain_threads_call_it_in_place() {
    let path = temp("thread");
    corio::fs::write(&path, "x").unwrap();
    assert_eq!(corio::fs::read_to_string(&path).unwrap(), "x");
    corio::fs::remove_file(&path).unwrap();
}

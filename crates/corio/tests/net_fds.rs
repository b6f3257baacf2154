//! File descriptors: dropping a runtime closes every descriptor it opened (its own and the
//! sockets of the coroutines and tasks it cancels), and `accept` at `EMFILE` backs off and
//! keeps serving — or, in nonblocking mode, returns the error (in a child process whose
//! descriptor limit is lowered).
//!
//! Both tests count or limit the whole process's descriptors, so they run one at a time.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use corio::net::{TcpListener, TcpStream};
use support::{EVENTUALLY, open_fds, within};

static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn dropping_the_runtime_closes_every_fd_it_opened() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            let before = open_fds();
            let rt = support::rt(workers);
            let opened_before = before.len();
            rt.run(move || {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let listener = std::sync::Arc::new(listener);
                // Server coroutines waiting in `read`, clients waiting in `read`, a coroutine
                // and a task waiting in `accept`: all cancelled by the runtime's drop.
                let l = listener.clone();
                corio::go(move || {
                    for _ in 0..20 {
                        let (s, _) = l.accept().unwrap();
                        corio::go(move || {
                            let mut buf = [0u8; 8];
                            let _ = (&s).read(&mut buf);
                        });
                    }
                    let _ = l.accept();
                });
                for _ in 0..10 {
                    let s = TcpStream::connect(addr).unwrap();
                    corio::go(move || {
                        let mut buf = [0u8; 8];
                        let _ = (&s).read(&mut buf);
                    });
                    corio::spawn(async move {
                        let s = TcpStream::connect_async(addr).await.unwrap();
                        let mut buf = [0u8; 8];
                        let _ = s.read_async(&mut buf).await;
                    });
                }
                let other = TcpListener::bind("127.0.0.1:0").unwrap();
                corio::spawn(async move {
                    let _ = other.accept_async().await;
                });
                // 3 runtime fds, 2 listeners, 20 clients, 20 accepted.
                let deadline = Instant::now() + EVENTUALLY;
                while open_fds().len() < opened_before + 45 {
                    assert!(Instant::now() < deadline, "the sockets never all opened");
                    corio::sleep(Duration::from_millis(10));
                }
            });
            drop(rt);
            // The runtime's own three (epoll, eventfd, timerfd) close when its last reference
            // goes: blocking-pool threads, if any ran, hold one until they notice the
            // shutdown, a moment after `drop` returns (they are not joined).
            let deadline = Instant::now() + Duration::from_secs(5);
            while open_fds() != before && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(open_fds(), before, "workers: {workers}");
        }
    });
}

/// The child's side of `accept_backs_off_at_emfile_and_keeps_serving` (run by it, with
/// `CORIO_EMFILE_CHILD` set; ignored otherwise).
#[test]
#[ignore = "run in a child process by accept_backs_off_at_emfile_and_keeps_serving"]
fn emfile_child() {
    assert!(std::env::var_os("CORIO_EMFILE_CHILD").is_some());
    let rt = support::rt(1);
    rt.run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        println!("port {}", listener.local_addr().unwrap().port());
        std::io::stdout().flush().unwrap();
        let (first, _) = listener.accept().unwrap();
        // Use up every descriptor: the limit at the highest one open, the holes filled.
        let highest = open_fds()
            .iter()
            .filter_map(|f| f.parse::<u64>().ok())
            .max()
            .unwrap();
        let limit = libc::rlimit {
            rlim_cur: highest + 1,
            rlim_max: libc::RLIM_INFINITY,
        };
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
        let limit = libc::rlimit {
            rlim_max: r.rlim_max,
            ..limit
        };
        // SAFETY: a valid rlimit, lowering the soft limit only.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
        let mut fillers = Vec::new();
        loop {
            // SAFETY: dup of stdin; the result is checked and kept (closed at exit).
            let fd = unsafe { libc::dup(0) };
            if fd < 0 {
                assert_eq!(
                    std::io::Error::last_os_error().raw_os_error(),
                    Some(libc::EMFILE)
                );
                break;
            }
            fillers.push(fd);
        }
        // In nonblocking mode, which never waits, `accept` returns the error at once, as
        // `std`'s (Linux's accept takes the descriptor first: no connection need be queued).
        listener.set_nonblocking(true).unwrap();
        let e = listener.accept().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
        listener.set_nonblocking(false).unwrap();
        // The second connection waits in the backlog: `accept` hits EMFILE and backs off.
        let usage = cpu_time();
        let second = corio::go(move || listener.accept().map(|_| ()));
        corio::sleep(Duration::from_secs(1));
        let spent = cpu_time() - usage;
        drop(first); // one descriptor free again
        second.join().unwrap().unwrap();
        println!("served 2, cpu {} ms", spent.as_millis());
        // A spinning accept would have used most of a core for the second.
        assert!(
            spent < Duration::from_millis(300),
            "accept spun: {spent:?} of CPU in 1 s"
        );
    });
}

fn cpu_time() -> Duration {
    // SAFETY: all-zero is a valid rusage; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn accept_backs_off_at_emfile_and_keeps_serving() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    within(EVENTUALLY, || {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "emfile_child", "--nocapture"])
            .env("CORIO_EMFILE_CHILD", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let port: u16 = loop {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the child printed no port"
            );
            if let Some(p) = line.trim().strip_prefix("port ") {
                break p.parse().unwrap();
            }
        };
        let _a = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _b = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let start = Instant::now();
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        let status = child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(status.success(), "child failed: {rest}\n{err}");
        assert!(rest.contains("served 2"), "{rest}");
        assert!(start.elapsed() >= Duration::from_secs(1));
    });
}

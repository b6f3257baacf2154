//! The stream sockets' read and write system calls, issued directly.
//!
//! # Why not `libc::recv` / `libc::send` (what `std`'s `Read`/`Write` call)
//!
//! glibc's `recv`, `send`, `read` and `write` are pthread *cancellation points*: each call
//! switches the thread to asynchronous cancellation around the system call and back
//! (`__pthread_enable_asynccancel` / `__pthread_disable_asynccancel`), about 65 instructions a
//! call pair in callgrind, plus `std`'s own wrapper layers — ~160 instructions per keep-alive
//! HTTP request (one read, one write), against a system call entry of a few. corio never
//! cancels threads (Rust code cannot survive `pthread_cancel` unwinding through it anyway), so
//! the bookkeeping buys nothing. On x86-64 Linux the two calls here are one `syscall`
//! instruction each; elsewhere they are the libc functions.
//!
//! They are the same system calls glibc issues (`recvfrom`, `sendto`), so `strace` and `perf
//! stat -e syscalls:*` see what they saw before. The write passes `MSG_NOSIGNAL`, as `std`'s
//! `TcpStream` does: a peer that has gone away is `EPIPE`, never `SIGPIPE` (for a Unix stream
//! too, where `std` uses `write(2)` and relies on Rust ignoring `SIGPIPE`); so does the
//! vectored write, a `sendmsg` where `std` uses `writev(2)`, which has no flags. `EINTR` is
//! returned as `ErrorKind::Interrupted`, which the callers' loops retry, as before. Under
//! Miri, which cannot run inline assembly, the libc functions are used.

use std::io;
use std::os::fd::RawFd;

/// The most buffers one `writev(2)` (or `sendmsg`) takes on Linux (`IOV_MAX`; std's
/// `write_vectored` passes no more).
pub(crate) const IOV_MAX: usize = 1024;

/// `recv(fd, buf, len, 0)`: reads up to `len` bytes into `buf`.
///
/// # Safety
///
/// `buf` must be valid for writes of `len` bytes (it may be uninitialised: only the first `n`
/// bytes of a successful `Ok(n)` are written).
#[inline]
pub(crate) unsafe fn recv(fd: RawFd, buf: *mut u8, len: usize) -> io::Result<usize> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: recvfrom(fd, buf, len, 0, NULL, NULL) writes at most `len` bytes to `buf`,
        // which the caller guarantees writable; a bad fd is an error, not undefined behaviour.
        let ret = unsafe {
            syscall6(
                libc::SYS_recvfrom as usize,
                fd as usize,
                buf as usize,
                len,
                0,
                0,
                0,
            )
        };
        result(ret)
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri))))]
    {
        // SAFETY: as above, through libc.
        libc_result(unsafe { libc::recv(fd, buf.cast(), len, 0) })
    }
}

/// `recv` for a Unix stream socket: as [`recv`], but it reads on past a message that carried
/// ancillary data, which the kernel ends a read at however much data follows it.
///
/// # A read the kernel ends early
///
/// The readiness protocol (`io/registry.rs`) takes a stream read shorter than its buffer for
/// a drained socket and waits for the next edge. A Unix stream read ends at the first message
/// that carried descriptors (`SCM_RIGHTS`; a reader that asks for none gets them closed), and
/// with `SO_PASSCRED` at a change of writer, with data left behind it whose edge has come and
/// gone: the next read then waited for the peer to send more (for ever, when the peer waits
/// for a reply). Such a read is the one that reports `MSG_CTRUNC` (the ancillary data found
/// no room), so this uses `recvmsg`, which returns the flag, and after a short read that
/// reports it reads again, until the buffer is full, the socket says `EAGAIN` (drained now, so
/// the short result is true), the end of the stream, or an error (left for the next call).
/// Without ancillary data it is one system call, as `recv`.
///
/// # Safety
///
/// As [`recv`]: `buf` must be valid for writes of `len` bytes.
#[inline]
pub(crate) unsafe fn recv_unix_stream(fd: RawFd, buf: *mut u8, len: usize) -> io::Result<usize> {
    let mut total = 0;
    loop {
        // SAFETY: `buf + total` is valid for writes of `len - total` bytes (the caller's
        // contract; `total <= len`).
        match unsafe { recvmsg(fd, buf.add(total), len - total) } {
            Ok((n, truncated)) => {
                total += n;
                if !truncated || n == 0 || total == len {
                    return Ok(total);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // `EAGAIN` after a truncated read: drained now. Another error: the next call's.
            Err(_) if total > 0 => return Ok(total),
            Err(e) => return Err(e),
        }
    }
}

/// One `recvmsg(2)` into `buf` with no room for ancillary data: the bytes read, and whether
/// the message's ancillary data was cut (`MSG_CTRUNC`).
///
/// # Safety
///
/// `buf` must be valid for writes of `len` bytes.
#[inline]
unsafe fn recvmsg(fd: RawFd, buf: *mut u8, len: usize) -> io::Result<(usize, bool)> {
    let mut iov = libc::iovec {
        iov_base: buf.cast(),
        iov_len: len,
    };
    // SAFETY: all-zero is a valid `msghdr` (no name, no control buffer).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    // SAFETY: `msg` and the `iov` it points to are valid for the call; the kernel writes only
    // `buf` (the caller's contract) and `msg.msg_flags`.
    let n = result(unsafe {
        syscall6(
            libc::SYS_recvmsg as usize,
            fd as usize,
            (&raw mut msg) as usize,
            0,
            0,
            0,
            0,
        )
    })?;
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri))))]
    // SAFETY: as above.
    let n = libc_result(unsafe { libc::recvmsg(fd, &mut msg, 0) })?;
    Ok((n, msg.msg_flags & libc::MSG_CTRUNC != 0))
}

/// `send(fd, buf, len, MSG_NOSIGNAL)`: writes some of `buf`.
#[inline]
pub(crate) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: sendto(fd, buf, len, MSG_NOSIGNAL, NULL, 0) only reads `buf`'s `len` bytes,
        // borrowed for this call; a bad fd is an error, not undefined behaviour.
        let ret = unsafe {
            syscall6(
                libc::SYS_sendto as usize,
                fd as usize,
                buf.as_ptr() as usize,
                buf.len(),
                libc::MSG_NOSIGNAL as usize,
                0,
                0,
            )
        };
        result(ret)
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri))))]
    {
        // SAFETY: as above, through libc.
        libc_result(unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) })
    }
}

/// `sendmsg(fd, {bufs}, MSG_NOSIGNAL)`: writes some of `bufs` (at most the first
/// [`IOV_MAX`], as `writev(2)` takes), in order. `std`'s
/// `write_vectored` is `writev(2)`, which has no flags: a peer that has gone away raised
/// `SIGPIPE` there, where `send` gives `EPIPE`.
#[inline]
pub(crate) fn send_vectored(fd: RawFd, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: all-zero is a valid `msghdr` (no name, no control buffer).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` is ABI-compatible with `iovec` on Unix (its documented guarantee); the kernel
    // only reads through this pointer, so the `*mut` it asks for writes nothing.
    msg.msg_iov = bufs.as_ptr().cast_mut().cast();
    msg.msg_iovlen = bufs.len().min(IOV_MAX);
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: sendmsg(fd, &msg, MSG_NOSIGNAL) only reads `msg` and the buffers it points
        // to, all borrowed for this call; a bad fd is an error, not undefined behaviour.
        let ret = unsafe {
            syscall6(
                libc::SYS_sendmsg as usize,
                fd as usize,
                (&raw const msg) as usize,
                libc::MSG_NOSIGNAL as usize,
                0,
                0,
                0,
            )
        };
        result(ret)
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri))))]
    {
        // SAFETY: as above, through libc.
        libc_result(unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) })
    }
}

/// A libc call's return: a count, or -1 with `errno` set.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri))))]
#[inline]
fn libc_result(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// A raw system call's return: a count, or `-errno` (the kernel's convention: -4095..-1).
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
#[inline]
fn result(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::from_raw_os_error(-ret as i32))
    } else {
        Ok(ret as usize)
    }
}

/// The x86-64 Linux system call: number in `rax`, arguments in `rdi`, `rsi`, `rdx`, `r10`,
/// `r8`, `r9`; the kernel returns in `rax` and clobbers `rcx` and `r11`.
///
/// # Safety
///
/// The system call `n` with these arguments must be sound: any memory it reads or writes
/// through them must be valid for that access.
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
#[inline]
unsafe fn syscall6(
    n: usize,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> isize {
    let ret: isize;
    // SAFETY: the caller vouches for the call's arguments; the asm names every register the
    // `syscall` instruction reads or clobbers, does not touch the stack, and may read and
    // write memory (no `nomem`/`readonly`), so the compiler keeps `buf`'s accesses ordered
    // around it.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a1,
            in("rsi") a2,
            in("rdx") a3,
            in("r10") a4,
            in("r8") a5,
            in("r9") a6,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    #[cfg_attr(miri, ignore)] // sockets with flags: beyond what Miri's shims model
    fn send_and_recv_move_bytes_and_report_errors_as_errno() {
        let (a, mut b) = UnixStream::pair().unwrap();
        assert_eq!(send(a.as_raw_fd(), b"hello").unwrap(), 5);
        let mut got = [0u8; 16];
        assert_eq!(b.read(&mut got).unwrap(), 5);
        assert_eq!(&got[..5], b"hello");

        b.write_all(b"back").unwrap();
        // SAFETY: `got` is writable for its length.
        let n = unsafe { recv(a.as_raw_fd(), got.as_mut_ptr(), got.len()) }.unwrap();
        assert_eq!(&got[..n], b"back");

        // Nothing to read on a nonblocking socket: EAGAIN, as `WouldBlock`.
        a.set_nonblocking(true).unwrap();
        // SAFETY: as above.
        let e = unsafe { recv(a.as_raw_fd(), got.as_mut_ptr(), got.len()) }.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        // The peer gone: EOF on read, EPIPE on write.
        drop(b);
        // SAFETY: as above.
        let eof = unsafe { recv(a.as_raw_fd(), got.as_mut_ptr(), got.len()) };
        assert_eq!(eof.unwrap(), 0);
        assert_eq!(
            send(a.as_raw_fd(), b"x").unwrap_err().raw_os_error(),
            Some(libc::EPIPE)
        );
        // A bad descriptor: EBADF.
        assert_eq!(
            send(-1, b"x").unwrap_err().raw_os_error(),
            Some(libc::EBADF)
        );
    }
}

//! The descriptor traits every socket type has, as its `std` counterpart: `AsRawFd` and
//! `AsFd` borrow the descriptor; `FromRawFd` and `From<OwnedFd>` adopt one, made nonblocking
//! as `from_std` does (the first wait inside a runtime registers it, as for any socket);
//! `IntoRawFd` and `From<$ty> for OwnedFd` hand it back, as each type's `into_std` does.
//!
//! # Handing a descriptor back
//!
//! A socket that has waited inside a runtime sits in that runtime's epoll set, and epoll
//! forgets a descriptor only when the socket's last descriptor closes: one handed back as it
//! is would keep waking that runtime (for nothing) for as long as its new owner uses it. So
//! handing it back removes it from the set (`EPOLL_CTL_DEL`) and releases its registration
//! (`io/registry.rs`, "Leaving the epoll set"; an event already taken for it is then stale and
//! changes nothing). If the runtime's driver is gone, so is its epoll instance, with every
//! entry: nothing to remove. The socket can then be adopted again, by this runtime or another
//! (it registers afresh there), or used with `std` alone.
//!
//! Choices:
//!
//! - **Blocking mode.** The socket comes back *blocking*, as `std` makes its sockets: a corio
//!   socket's calls wait, and the `std` socket it becomes waits too (tokio's `into_std` leaves
//!   it nonblocking, which a `std` user meets as a `WouldBlock` on the first read that finds
//!   no data). `from_std` makes it nonblocking again. A socket in corio's nonblocking mode
//!   (`set_nonblocking(true)`) comes back nonblocking: its calls did not wait, and the `std`
//!   socket's do not either. `from_std` starts in blocking mode whatever the `std` socket's.
//! - **Timeouts** set with `set_read_timeout`/`set_write_timeout` are corio's own (the socket
//!   is nonblocking underneath) and do not carry over; set them again on the `std` socket.
//! - **Shared sockets.** Handles from `try_clone` share one descriptor (`docs/io.md`), and
//!   other handles may be waiting on it. `into_std` on one of several handles cannot take the
//!   descriptor from the others: it returns `ErrorKind::ResourceBusy`, and the handle it
//!   consumed goes *quietly* — unlike a dropped handle it does not close the socket for the
//!   others, which keep it open and working (as `Arc::into_inner` returns `None` and leaves
//!   the other references be). Nothing is taken from them, so nothing can leave them waiting.
//!   On a socket another handle closed, `into_std` is `ErrorKind::NotConnected`, as every call.
//! - **`IntoRawFd` cannot fail**, so with other handles left it returns a *duplicate* of the
//!   descriptor (`F_DUPFD_CLOEXEC`): the same socket, which the other handles keep using.
//!   The duplicate stays nonblocking (the mode belongs to the socket, and the other handles'
//!   waits rely on it), and the socket stays in the epoll set while the other handles live;
//!   the last of them takes it out before closing its descriptor. Their close reaches the
//!   duplicate as it reaches every handle: one dropped while others remain shuts the socket
//!   down (`docs/io.md`, "`try_clone` shares the socket"). It panics only if the process
//!   has no descriptor left for the duplicate. The last handle's `into_raw_fd` is
//!   `into_std`'s, without the errors: a socket another handle closed comes back shut down.

/// `AsRawFd`, `AsFd`, `FromRawFd`, `From<OwnedFd>`, `IntoRawFd` and `From<$ty> for OwnedFd`
/// for `$ty`, whose socket is `self.$sock` (a `Shared<$std>`) and whose `from_std` wraps a
/// `$std`.
macro_rules! fd_traits {
    ($ty:ty, $sock:ident, $std:ty) => {
        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(self.$sock.get())
            }
        }

        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(self.$sock.get())
            }
        }

        impl std::os::fd::FromRawFd for $ty {
            /// Adopts `fd`, made nonblocking (as `from_std`).
            ///
            /// # Safety
            ///
            /// As `std`'s: `fd` is an open socket of this kind, owned by the caller, which
            /// gives it up.
            unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> Self {
                // SAFETY: the caller's contract, passed on.
                let socket = unsafe { <$std as std::os::fd::FromRawFd>::from_raw_fd(fd) };
                <$ty>::adopt(socket)
            }
        }

        impl From<std::os::fd::OwnedFd> for $ty {
            /// Adopts `fd`, made nonblocking (as `from_std`).
            fn from(fd: std::os::fd::OwnedFd) -> Self {
                <$ty>::adopt(<$std>::from(fd))
            }
        }

        impl $ty {
            /// `from_std` for the conversions that cannot fail, as `std`'s cannot: `FIONBIO`
            /// fails only on a descriptor that is no socket at all (one opened with `O_PATH`),
            /// whose every call then fails as `std`'s would (`EBADF`) without waiting, so it
            /// is adopted as it is.
            fn adopt(socket: $std) -> Self {
                let _ = socket.set_nonblocking(true);
                Self {
                    $sock: $crate::io::source::Shared::new(socket),
                }
            }
        }

        impl std::os::fd::IntoRawFd for $ty {
            /// Hands the descriptor back, out of corio's epoll sets and in blocking mode
            /// (unless `set_nonblocking(true)`), as `into_std`; if other handles share the socket (`try_clone`), a duplicate of it,
            /// nonblocking (see `corio::net`'s `fd` module doc, "Handing a descriptor back").
            ///
            /// # Panics
            ///
            /// If a duplicate is needed and the process has no descriptor left for it.
            fn into_raw_fd(self) -> std::os::fd::RawFd {
                std::os::fd::IntoRawFd::into_raw_fd(std::os::fd::OwnedFd::from(self))
            }
        }

        impl From<$ty> for std::os::fd::OwnedFd {
            /// As `IntoRawFd::into_raw_fd`.
            ///
            /// # Panics
            ///
            /// If a duplicate is needed and the process has no descriptor left for it.
            fn from(socket: $ty) -> std::os::fd::OwnedFd {
                socket.$sock.into_fd()
            }
        }
    };
}

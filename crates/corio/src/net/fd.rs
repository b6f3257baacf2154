//! The descriptor traits every socket type has, as its `std` counterpart: `AsRawFd` and
//! `AsFd` borrow the descriptor; `FromRawFd` and `From<OwnedFd>` adopt one, made nonblocking
//! as `from_std` does (the first wait inside a runtime registers it, as for any socket).
//!
//! `IntoRawFd` and `From<$ty> for OwnedFd` are missing on purpose: a socket that has waited
//! inside a runtime sits in that runtime's epoll set, and the descriptor handed out would stay
//! there (epoll forgets a descriptor only when its last duplicate closes), with handles from
//! `try_clone` still naming it. Giving it back needs the registration to remove itself
//! (`EPOLL_CTL_DEL`), which `crate::io` does not offer yet.

/// `AsRawFd`, `AsFd`, `FromRawFd` and `From<OwnedFd>` for `$ty`, whose socket is `self.$sock`
/// (a `Shared<$std>`) and whose `from_std` wraps a `$std`.
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
                <$ty>::from_std(socket).expect("FIONBIO on an open descriptor cannot fail")
            }
        }

        impl From<std::os::fd::OwnedFd> for $ty {
            /// Adopts `fd`, made nonblocking (as `from_std`).
            fn from(fd: std::os::fd::OwnedFd) -> Self {
                <$ty>::from_std(<$std>::from(fd))
                    .expect("FIONBIO on an open descriptor cannot fail")
            }
        }
    };
}

//! The owned halves of a byte stream — `into_split`, `OwnedReadHalf`, `OwnedWriteHalf`,
//! `reunite` and `ReuniteError` — written once as a macro and instantiated in `tcp.rs` and
//! `unix.rs`, which makes them `corio::net::tcp::*` and `corio::net::unix::*` (tokio's
//! `tokio::net::tcp` and `tokio::net::unix` hold theirs the same way).
//!
//! # Two handles, one socket
//!
//! A half is a stream (`$stream`) whose `Shared` handle is of a kind of its own
//! (`io/source.rs`, `OnDrop`): `into_split` keeps the stream's handle for the read half and
//! makes a second handle to the same `Source` for the write half (`Shared::split`). The two
//! can wait at once, from two coroutines or tasks on any workers: a reader waits on the read
//! direction's slot and a writer on the write direction's, as two `try_clone` handles would.
//! What differs from `try_clone` is the drop, as in tokio: the read half's does nothing, the
//! write half's shuts the write direction down (the peer reads EOF), and the socket closes
//! when both are gone (the last handle's drop closes the descriptor).
//!
//! A half derefs to its stream for the calls any handle may make (`peer_addr`, options,
//! `read_async`...); its own `Read`/`Write` and `AsyncRead`/`AsyncWrite` are the stream's
//! (`net/stream.rs`'s trait macros, instantiated for the half).
//!
//! # Reuniting
//!
//! Two halves are of the same socket when their handles share one `Source`
//! (`Shared::same_socket`, an `Arc::ptr_eq`: tokio's test, on its `Arc` of the stream). Then
//! `Shared::reunite` makes the read half's handle whole again (a drop that closes the socket
//! for other handles, as `try_clone`'s) and lets the write half's go without shutting
//! anything down: the result is one handle, as the stream was before `into_split`, so what
//! needs the last handle works again (`into_std`, unless `try_clone` made others). Halves of
//! two sockets are handed back unchanged in the error (`ReuniteError(read, write)`, as a
//! channel's `SendError` hands its value back): nothing was shut down.
//!
//! Halves from two `into_split`s of one socket (two `try_clone` handles, each split) reunite
//! too: they are the same socket, and each handle's drop keeps its meaning.
//!
//! A generic `OwnedReadHalf<S>` would have needed a public (sealed) trait for `S` and would
//! read as `OwnedReadHalf<TcpStream>` in every signature and error; the two concrete types
//! per stream are what tokio users know, and the macro keeps them from being written twice.

/// `into_split` for `$stream` (whose socket is `self.$sock`, a `Shared`), and the types it
/// returns, in the invoking module. `$pair` is the body of a doc example's closure that
/// returns a connected `(stream, peer)`: a corio `$stream` and its `std` peer.
macro_rules! owned_halves {
    ($stream:ident, $sock:ident, $pair:literal) => {
        impl $stream {
            /// Splits into a read half and a write half, usable from two coroutines or tasks
            /// at once (on any workers). As tokio's: dropping the write half shuts the write
            /// direction down (the peer reads EOF) and leaves the read half working; the socket
            /// closes when both halves are gone. [`OwnedReadHalf::reunite`] puts them back
            /// together.
            ///
            #[doc = concat!(
                "```\n",
                "use std::io::{Read, Write};\n",
                "\n",
                "let pair = || {\n", $pair, "\n};\n",
                "let (stream, peer) = pair();\n",
                "// The peer echoes what it reads, on a plain thread, until EOF.\n",
                "let echo = std::thread::spawn(move || std::io::copy(&mut &peer, &mut &peer));\n",
                "let (mut read, mut write) = stream.into_split();\n",
                "let rt = corio::Runtime::builder().workers(2).build().unwrap();\n",
                "let echoed = rt.run(move || {\n",
                "    // A reader coroutine and a writer coroutine, each with its half.\n",
                "    let reader = corio::go(move || {\n",
                "        let mut got = Vec::new();\n",
                "        read.read_to_end(&mut got).unwrap();\n",
                "        got\n",
                "    });\n",
                "    write.write_all(b\"hello\").unwrap();\n",
                "    drop(write); // the peer reads EOF: its echo ends, and so does the read\n",
                "    reader.join().unwrap()\n",
                "});\n",
                "assert_eq!(echoed, b\"hello\");\n",
                "echo.join().unwrap().unwrap();\n",
                "```"
            )]
            pub fn into_split(mut self) -> (OwnedReadHalf, OwnedWriteHalf) {
                let write = $stream {
                    $sock: self.$sock.split(),
                };
                (OwnedReadHalf(self), OwnedWriteHalf(write))
            }
        }

        #[doc = concat!(
            "The read half of [`", stringify!($stream), "::into_split`]; derefs to the ",
            "stream for its other methods. Dropping it does nothing to the socket."
        )]
        #[derive(Debug)]
        pub struct OwnedReadHalf($stream);

        #[doc = concat!(
            "The write half of [`", stringify!($stream), "::into_split`]; derefs to the ",
            "stream for its other methods. Dropping it shuts the write direction down (the ",
            "peer reads EOF)."
        )]
        #[derive(Debug)]
        pub struct OwnedWriteHalf($stream);

        /// The error of [`OwnedReadHalf::reunite`] and [`OwnedWriteHalf::reunite`]: the
        /// halves are of two different sockets. Both come back, as they were (nothing was
        /// shut down).
        #[derive(Debug)]
        pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

        impl std::fmt::Display for ReuniteError {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("tried to reunite halves that are not from the same socket")
            }
        }

        impl std::error::Error for ReuniteError {}

        impl OwnedReadHalf {
            /// Puts the stream back together from this half and the write half of the same
            /// socket: one handle again, as before `into_split` (so `into_std` works on it if
            /// no `try_clone` handle shares the socket). The write direction stays as it was:
            /// reuniting shuts nothing down.
            ///
            /// # Errors
            ///
            /// [`ReuniteError`], holding both halves unchanged, if `other` is of another
            /// socket.
            ///
            #[doc = concat!(
                "```\n",
                "let pair = || {\n", $pair, "\n};\n",
                "let (one, _peer_one) = pair();\n",
                "let (two, _peer_two) = pair();\n",
                "let (read_one, write_one) = one.into_split();\n",
                "let (read_two, write_two) = two.into_split();\n",
                "// Halves of two sockets come back in the error.\n",
                "let err = read_one.reunite(write_two).unwrap_err();\n",
                "let (read_one, write_two) = (err.0, err.1);\n",
                "// Halves of one socket make its stream: one handle, which can be handed back.\n",
                "let one = read_one.reunite(write_one).unwrap();\n",
                "let two = write_two.reunite(read_two).unwrap();\n",
                "let _std_one = one.into_std().unwrap();\n",
                "let _std_two = two.into_std().unwrap();\n",
                "```"
            )]
            pub fn reunite(self, other: OwnedWriteHalf) -> Result<$stream, ReuniteError> {
                reunite(self, other)
            }
        }

        impl OwnedWriteHalf {
            /// [`OwnedReadHalf::reunite`], asked of the other half.
            ///
            /// # Errors
            ///
            /// [`ReuniteError`], holding both halves unchanged, if `other` is of another
            /// socket.
            pub fn reunite(self, other: OwnedReadHalf) -> Result<$stream, ReuniteError> {
                reunite(other, self)
            }
        }

        /// The two `reunite`s (the module doc of `net/split.rs`, "Reuniting").
        fn reunite(read: OwnedReadHalf, write: OwnedWriteHalf) -> Result<$stream, ReuniteError> {
            if !read.0.$sock.same_socket(&write.0.$sock) {
                return Err(ReuniteError(read, write));
            }
            let OwnedReadHalf(mut stream) = read;
            let OwnedWriteHalf(other) = write;
            stream.$sock.reunite(other.$sock);
            Ok(stream)
        }

        impl std::ops::Deref for OwnedReadHalf {
            type Target = $stream;

            fn deref(&self) -> &$stream {
                &self.0
            }
        }

        impl std::ops::Deref for OwnedWriteHalf {
            type Target = $stream;

            fn deref(&self) -> &$stream {
                &self.0
            }
        }

        impl std::io::Read for OwnedReadHalf {
            /// The stream's blocking-style `read`.
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                std::io::Read::read(&mut &self.0, buf)
            }
        }

        impl std::io::Write for OwnedWriteHalf {
            /// The stream's blocking-style `write`.
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::io::Write::write(&mut &self.0, buf)
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                std::io::Write::write_vectored(&mut &self.0, bufs)
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }

        futures_read_face!(OwnedReadHalf);
        futures_write_face!(OwnedWriteHalf);
        tokio_read_face!(OwnedReadHalf);
        tokio_write_face!(OwnedWriteHalf);
    };
}

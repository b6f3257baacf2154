//! The `hyper_hello` example's server: hyper 1.x on corio tasks.
//!
//! Shared, as a module, by `examples/hyper_hello.rs`, the example tests and corio-bench's
//! `http` case.
//!
//! hyper does no IO and owns no runtime: it asks for them through the traits of `hyper::rt`.
//! This file wires corio into each of them, in a few lines apiece:
//!
//! | hyper needs | corio gives | here |
//! |---|---|---|
//! | `rt::Executor` (spawn a background future) | `corio::spawn` | [`CorioExecutor`] |
//! | `rt::Timer` (header-read timeouts) | `corio::time::sleep_async` | [`CorioTimer`] |
//! | `rt::Read` + `rt::Write` | `corio::net::TcpStream`'s `futures_io::AsyncRead`/`AsyncWrite` | [`CorioIo`] |
//!
//! Every connection is a task spawned through the executor; hyper's HTTP/1 state machine
//! drives it; a read with no data returns `Pending` until the netpoller wakes the task.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::rt::{Executor, ReadBufCursor};
use hyper::{Request, Response, StatusCode};

use corio::net::TcpListener;

/// Accepts connections forever, serving each with hyper's HTTP/1 on its own task.
pub async fn serve(listener: TcpListener) {
    loop {
        let stream = match listener.accept_async().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("hyper_hello: accept: {e}");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(CorioTimer)
            .pipeline_flush(true)
            .serve_connection(CorioIo(stream), hyper::service::service_fn(hello));
        CorioExecutor.execute(async move {
            // A client that goes away mid-request is not the server's failure.
            let _ = conn.await;
        });
    }
}

/// The one endpoint: `GET /plaintext` → `Hello, World!`; hyper adds Date and Content-Length.
pub async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let builder = Response::builder()
        .header("Server", "corio-hyper")
        .header("Content-Type", "text/plain");
    let response = if req.uri().path() == "/plaintext" {
        builder.body(Full::new(Bytes::from_static(b"Hello, World!")))
    } else {
        builder
            .status(StatusCode::NOT_FOUND)
            .body(Full::new(Bytes::new()))
    };
    Ok(response.expect("a valid response"))
}

/// `hyper::rt::Executor` on corio: every future becomes a detached corio task.
#[derive(Clone, Copy, Debug)]
pub struct CorioExecutor;

impl<F> Executor<F> for CorioExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        drop(corio::spawn(fut));
    }
}

/// `hyper::rt::Timer` on corio's timers.
#[derive(Clone, Copy, Debug)]
pub struct CorioTimer;

impl hyper::rt::Timer for CorioTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CorioSleep(corio::time::sleep_async(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CorioSleep(corio::time::sleep_until_async(deadline)))
    }
}

/// A corio sleep, as hyper's `Sleep` (a marker trait over `Future<Output = ()>`).
struct CorioSleep(corio::time::Sleep);

impl Future for CorioSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for CorioSleep {}

/// hyper's `rt::Read`/`rt::Write` over any `futures_io::AsyncRead + AsyncWrite` — here
/// `corio::net::TcpStream`.
#[derive(Debug)]
pub struct CorioIo<T>(pub T);

/// The most bytes one read asks for: `futures_io` reads into initialised memory, so the part
/// of hyper's buffer handed to a read is zeroed first; this bounds that work per read.
const READ_CHUNK: usize = 16 * 1024;

impl<T: futures_io::AsyncRead + Unpin> hyper::rt::Read for CorioIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: we only write into the slice (zeroes, then what the read returns) and never
        // de-initialise any of it, which is all `ReadBufCursor::as_mut` asks.
        let spare: &mut [MaybeUninit<u8>] = unsafe { buf.as_mut() };
        let len = spare.len().min(READ_CHUNK);
        let spare = &mut spare[..len];
        for b in spare.iter_mut() {
            b.write(0);
        }
        // SAFETY: every byte of `spare` was initialised just above, and `MaybeUninit<u8>` has
        // the layout of `u8`.
        let bytes: &mut [u8] = unsafe { &mut *(spare as *mut [MaybeUninit<u8>] as *mut [u8]) };
        match Pin::new(&mut self.0).poll_read(cx, bytes) {
            Poll::Ready(Ok(n)) => {
                // SAFETY: the read initialised (filled) the first `n <= len` bytes of the
                // cursor's spare capacity.
                unsafe { buf.advance(n) };
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: futures_io::AsyncWrite + Unpin> hyper::rt::Write for CorioIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}

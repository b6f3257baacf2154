//! The `echo_async` example's server: the echo server of `servers/echo.rs`, written as async
//! tasks instead of stackful coroutines.
//!
//! Shared, as a module, by `examples/echo_async.rs`, the example tests and corio-bench. Each
//! connection is a task (a state machine a few hundred bytes large, no stack of its own); its
//! `read_async(..).await` returns `Pending` to the worker until the netpoller wakes the task.

use corio::net::{TcpListener, TcpStream};

/// Accepts connections forever, each served by its own task.
pub async fn serve(listener: TcpListener) {
    loop {
        match listener.accept_async().await {
            // The task is detached: it ends when its client goes away.
            Ok((stream, _)) => drop(corio::spawn(echo(stream))),
            Err(e) => eprintln!("echo_async: accept: {e}"),
        }
    }
}

/// Writes back everything `stream` sends until it closes (or fails).
pub async fn echo(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut buf = [0u8; 4096];
    loop {
        match stream.read_async(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stream.write_all_async(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

//! A line-based chat server: every client is a stackful coroutine.
//!
//! ```text
//! cargo run --release -p corio --example chat -- [ADDR]
//! nc 127.0.0.1 7001     # in two or more terminals
//! ```
//!
//! listens on `ADDR` (default `127.0.0.1:7001`). Each client is greeted with its name
//! (`guest1`, `guest2`, ...); every line it sends is relayed to every other client as
//! `guest1: line`, and the others hear when it joins and leaves.
//!
//! # Design
//!
//! A client's coroutine reads lines with an ordinary `BufReader::read_line` — blocking-style;
//! only the coroutine waits. The room is a `Mutex<Vec<(id, Arc<TcpStream>)>>`: a sender locks
//! it only to copy the list of members, never while writing, because a write may suspend the
//! coroutine, and a coroutine suspended while holding a `std` mutex would block every other
//! coroutine of its worker that tries to take it. The members share their sockets through
//! `Arc` (a `&TcpStream` reads and writes), not `try_clone`: dropping any clone of a corio
//! socket closes it. A member that cannot be written to is dropped from the room. A slow
//! reader slows the senders that write to it; a real server would give each member an
//! outgoing queue and a writer coroutine.

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use corio::net::{TcpListener, TcpStream};

/// Everyone connected, by id.
type Room = Arc<Mutex<Vec<(u64, Arc<TcpStream>)>>>;

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7001".into());
    corio::run(move || {
        let listener = TcpListener::bind(&addr)?;
        println!("chat: listening on {}", listener.local_addr()?);
        serve(listener);
        Ok(())
    })
}

/// Accepts clients forever, each in its own coroutine.
pub fn serve(listener: TcpListener) {
    let room: Room = Arc::default();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                // Relaxed: ids only need to be distinct.
                let id = NEXT.fetch_add(1, Ordering::Relaxed);
                let room = room.clone();
                drop(corio::go(move || client(id, Arc::new(stream), room)));
            }
            Err(e) => eprintln!("chat: accept: {e}"),
        }
    }
}

/// One client's life: greet, join, relay its lines, leave.
fn client(id: u64, stream: Arc<TcpStream>, room: Room) {
    let name = format!("guest{id}");
    if (&*stream)
        .write_all(format!("welcome, you are {name}\n").as_bytes())
        .is_err()
    {
        return;
    }
    broadcast(&room, id, &format!("* {name} joined\n"));
    room.lock().unwrap().push((id, stream.clone()));
    let mut lines = BufReader::new(&*stream);
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = line.trim_end();
                if !text.is_empty() {
                    broadcast(&room, id, &format!("{name}: {text}\n"));
                }
            }
        }
    }
    room.lock().unwrap().retain(|(other, _)| *other != id);
    broadcast(&room, id, &format!("* {name} left\n"));
}

/// Sends `msg` to every member but `from`; drops members that cannot be written to.
fn broadcast(room: &Room, from: u64, msg: &str) {
    let members: Vec<(u64, Arc<TcpStream>)> = room.lock().unwrap().clone();
    for (id, stream) in members {
        if id != from && (&*stream).write_all(msg.as_bytes()).is_err() {
            room.lock().unwrap().retain(|(other, _)| *other != id);
        }
    }
}

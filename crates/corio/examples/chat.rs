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
//! Each client has two coroutines, both written blocking-style (only the coroutine waits):
//!
//! - its *reader* reads lines with an ordinary `BufReader` and relays each one to the room;
//! - its *writer* takes the messages meant for it from its own channel, a
//!   `corio::chan::bounded` of [`QUEUE`] messages, and writes them to the socket, one whole
//!   message after another.
//!
//! Relaying a line puts it in every other member's channel. A member that reads more slowly
//! than the room talks makes the relaying client wait when its channel is full (it pushes
//! back, so nobody's lines are lost); one whose channel stays full for [`STALLED`] does not
//! read at all, and is dropped from the room and its connection shut down (its writer,
//! stuck in a write the client does not take, fails and ends; its reader sees the end), so it
//! stalls the others once, for that long, and never again. One writer per socket also keeps
//! messages whole: two senders writing to one socket directly could splice their lines when
//! a write went through only in part.
//!
//! The room is a `Mutex<HashMap<id, Arc<Member>>>`, locked only for a moment (to copy the
//! list of members, to join, to leave), never across a send or a write: a coroutine suspended while holding a `std` mutex would block every other coroutine
//! of its worker that tried to take it. The reader and the writer share the socket through
//! `Arc` (a `&TcpStream` reads and writes), not `try_clone`: dropping any clone of a corio
//! socket closes it.
//!
//! A line longer than [`MAX_LINE`] bytes ends the client's connection (nothing is buffered
//! beyond it); a line that is not UTF-8 is relayed with `U+FFFD` in place of what is not.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use corio::chan::{self, Sender};
use std::net::Shutdown;

use corio::net::{TcpListener, TcpStream};

/// Messages a client may have waiting to be written; a relaying client waits for room beyond.
pub const QUEUE: usize = 1024;

/// How long a member's queue may stay full before the member is taken for one that does not
/// read, and dropped.
pub const STALLED: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest line a client may send, in bytes, newline included.
pub const MAX_LINE: usize = 64 * 1024;

/// A member of the room: its queue of messages to write, and its socket (to shut it down if
/// it does not read).
struct Member {
    queue: Sender<Arc<str>>,
    stream: Arc<TcpStream>,
}

/// Everyone connected, by id.
type Room = Arc<Mutex<HashMap<u64, Arc<Member>>>>;

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

/// Accepts clients forever, each in its own coroutines.
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
    let (tx, rx) = chan::bounded::<Arc<str>>(QUEUE);
    if tx
        .try_send(format!("welcome, you are {name}\n").into())
        .is_err()
    {
        return;
    }
    // The writer: this client's messages, whole and in order, until the room lets go of its
    // queue (the client left, or was dropped for not reading) or a write fails.
    let out = stream.clone();
    drop(corio::go(move || {
        for msg in rx {
            if (&*out).write_all(msg.as_bytes()).is_err() {
                break;
            }
        }
        // Ends the reader's wait too, if the client was dropped for not reading.
        let _ = out.shutdown(Shutdown::Both);
    }));
    broadcast(&room, id, &format!("* {name} joined\n"));
    let member = Member {
        queue: tx,
        stream: stream.clone(),
    };
    room.lock().unwrap().insert(id, Arc::new(member));
    let mut lines = BufReader::new(&*stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most MAX_LINE bytes: an endless line is not buffered without bound.
        match (&mut lines)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => break,
            Ok(_) if line.last() != Some(&b'\n') && line.len() == MAX_LINE => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    broadcast(&room, id, &format!("{name}: {text}\n"));
                }
            }
        }
    }
    // Dropping its queue ends the writer (after what is queued), which closes the socket.
    room.lock().unwrap().remove(&id);
    broadcast(&room, id, &format!("* {name} left\n"));
}

/// Queues `msg` for every member but `from`, waiting while a member's queue is full; a member
/// whose queue stays full for [`STALLED`] is dropped from the room.
fn broadcast(room: &Room, from: u64, msg: &str) {
    let msg: Arc<str> = msg.into();
    let members: Vec<(u64, Arc<Member>)> = room
        .lock()
        .unwrap()
        .iter()
        .filter(|(id, _)| **id != from)
        .map(|(id, member)| (*id, member.clone()))
        .collect();
    for (id, member) in members {
        if let Err(chan::SendTimeoutError::Timeout(_)) =
            member.queue.send_timeout(msg.clone(), STALLED)
        {
            room.lock().unwrap().remove(&id);
            let _ = member.stream.shutdown(Shutdown::Both);
        }
    }
}

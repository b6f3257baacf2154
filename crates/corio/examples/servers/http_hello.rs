//! The `http_hello` example's server: HTTP/1.1 keep-alive on stackful coroutines, parsed with
//! `httparse`.
//!
//! Shared, as a module, by `examples/http_hello.rs`, the example tests and corio-bench's
//! `http` case.
//!
//! # One connection, one coroutine
//!
//! A connection's coroutine is the loop a synchronous server would run on a thread: read into
//! a buffer, parse every complete request in it, append each response to an output buffer,
//! write the output buffer in one `write_all`, read again. A read that finds no data suspends
//! only this coroutine. Because every complete request in the buffer is answered before the
//! next read, pipelined requests are answered in order with one write per batch.
//!
//! # Requests
//!
//! - `GET /plaintext` (or `HEAD`) → `200`, `Hello, World!`, with Content-Length, Content-Type,
//!   Date and Server. Any other path → `404`.
//! - A request with a `Content-Length` body has its body skipped; one with `Transfer-Encoding`
//!   is not supported here and gets `400`, as does a `Content-Length` that is not plain
//!   digits, is larger than [`MAX_HEAD`], or is given twice with different values (a framing
//!   error a proxy in front could read otherwise: request smuggling).
//! - A malformed request, or a request head larger than [`MAX_HEAD`] bytes (a 1 MiB header),
//!   gets `400 Bad Request` and its connection is closed; every other connection goes on.
//! - `Connection: close` (alone or in a list of tokens), or HTTP/1.0 without
//!   `Connection: keep-alive`, closes the connection after the response (after reading what
//!   the client still sends, so that the kernel does not reset the connection under the
//!   response: [`linger`]); an HTTP/1.0 client that asked to keep it is answered with
//!   `Connection: keep-alive`. A client that closes mid-request is simply let go.

use std::cell::Cell;
use std::io::{Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use corio::net::{TcpListener, TcpStream};

/// The largest request head (request line and headers) accepted, in bytes.
pub const MAX_HEAD: usize = 64 * 1024;

/// The most headers a request may have.
const MAX_HEADERS: usize = 32;

const BODY: &[u8] = b"Hello, World!";

/// Accepts connections forever, each served by its own coroutine. Call it from a coroutine.
pub fn serve(listener: TcpListener) {
    for stream in listener.incoming() {
        match stream {
            // Detached: the coroutine ends with its connection. Spread over the workers by
            // count: a connection lives long and apart from the acceptor, and would otherwise
            // start next to it (`corio::Builder::spread`).
            Ok(stream) => {
                let spawned = corio::Builder::new()
                    .spread()
                    .spawn(move || serve_connection(stream));
                if let Err(e) = spawned {
                    eprintln!("http_hello: no coroutine for a connection: {e}");
                }
            }
            Err(e) => eprintln!("http_hello: accept: {e}"),
        }
    }
}

/// What to do after answering a request.
#[derive(PartialEq)]
enum After {
    KeepAlive,
    Close,
}

/// Serves one connection until the client closes it, sends something malformed, or asks to
/// close.
pub fn serve_connection(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut input: Vec<u8> = vec![0; 4096];
    let mut filled = 0;
    let mut output: Vec<u8> = Vec::with_capacity(4096);
    loop {
        let n = match stream.read(&mut input[filled..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        filled += n;
        // Answer every complete request in the buffer, in order; their responses, made in
        // the same instant, share one Date.
        let date = http_date();
        let mut start = 0;
        let mut after = After::KeepAlive;
        while start < filled && after == After::KeepAlive {
            match parse(&input[start..filled], &date, &mut output) {
                Parsed::Answered(used, a) => {
                    start += used;
                    after = a;
                }
                Parsed::Partial => break,
            }
        }
        if !output.is_empty() {
            if stream.write_all(&output).is_err() {
                return;
            }
            output.clear();
        }
        if after == After::Close {
            linger(&mut stream);
            return;
        }
        // Keep the unparsed rest at the front; grow the buffer for a head that needs it.
        input.copy_within(start..filled, 0);
        filled -= start;
        if filled == input.len() {
            input.resize(input.len() * 2, 0);
        }
    }
}

/// Closes our side, then reads and discards what the client still sends (at most
/// [`LINGER_BYTES`], for at most a second of quiet) before the socket is dropped.
///
/// Closing a socket with unread input makes the kernel answer with a reset, and a reset can
/// destroy the response before the client reads it — a client that sent a 1 MiB header would
/// see "connection reset" instead of our `400`. Go's net/http lingers the same way.
fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(1)));
    let mut sink = [0u8; 4096];
    let mut left = LINGER_BYTES;
    while left > 0 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// The most input [`linger`] discards.
const LINGER_BYTES: usize = 4 << 20;

/// The outcome of parsing the front of the input.
enum Parsed {
    /// A request was answered (into the output buffer): the bytes it used, and what next.
    Answered(usize, After),
    /// The request is not complete yet.
    Partial,
}

/// Parses one request at the front of `buf` and appends its response, dated `date`, to `out`.
fn parse(buf: &[u8], date: &[u8; 29], out: &mut Vec<u8>) -> Parsed {
    // Uninitialised: httparse writes the headers it finds (an initialised array is a 1 KiB
    // memset per request).
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let head = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Parsed::Partial,
        // Too large, malformed, or too many headers.
        _ => return bad_request(date, out),
    };
    let http10 = req.version == Some(0);
    let mut close = http10;
    let mut body = None::<usize>;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            // A list of tokens (RFC 9110, 7.6.1): `close` anywhere in it closes.
            for token in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                    break;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // Digits only (no sign, no list), one value (two that differ are a framing
            // error: RFC 9112, 6.3), and no larger than a head: a body is skipped, not
            // stored, and a length near `usize::MAX` must not wrap `head + body`.
            match content_length(h.value) {
                Some(n) if n <= MAX_HEAD && body.is_none_or(|b| b == n) => body = Some(n),
                _ => return bad_request(date, out),
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return bad_request(date, out);
        }
    }
    let body = body.unwrap_or(0);
    if buf.len() < head + body {
        // The body has not all arrived.
        return Parsed::Partial;
    }
    let found = req.path == Some("/plaintext") && matches!(req.method, Some("GET" | "HEAD"));
    let with_body = req.method != Some("HEAD");
    // An HTTP/1.0 client that asked to keep the connection is told it stays open (1.0's
    // default is to close: without the header it would read until the close).
    let connection = match (close, http10) {
        (true, _) => Connection::Close,
        (false, true) => Connection::KeepAlive,
        (false, false) => Connection::Default,
    };
    if found {
        respond(out, OK_HEAD, BODY, date, with_body, connection);
    } else {
        respond(out, NOT_FOUND_HEAD, b"", date, with_body, connection);
    }
    let after = if close {
        After::Close
    } else {
        After::KeepAlive
    };
    Parsed::Answered(head + body, after)
}

fn bad_request(date: &[u8; 29], out: &mut Vec<u8>) -> Parsed {
    respond(out, BAD_REQUEST_HEAD, b"", date, true, Connection::Close);
    Parsed::Answered(0, After::Close)
}

/// A `Content-Length` value: ASCII digits only, at most 19 of them (so that it fits a `u64`
/// whatever it says; the caller bounds it by [`MAX_HEAD`]).
fn content_length(value: &[u8]) -> Option<usize> {
    let digits = value.trim_ascii();
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    usize::try_from(n).ok()
}

/// The `Connection` header a response carries.
#[derive(Clone, Copy)]
enum Connection {
    /// None: HTTP/1.1's default, the connection stays open.
    Default,
    /// `Connection: close`: this response is the last.
    Close,
    /// `Connection: keep-alive`: for an HTTP/1.0 client that asked for it.
    KeepAlive,
}

/// The fixed part of each response this server makes, up to the Date header's value: the
/// status line, and headers whose values never change (each status has one body).
macro_rules! head {
    ($status:literal, $length:literal) => {
        concat!(
            "HTTP/1.1 ",
            $status,
            "\r\nServer: corio\r\nContent-Type: text/plain\r\nContent-Length: ",
            $length,
            "\r\nDate: "
        )
        .as_bytes()
    };
}
const OK_HEAD: &[u8] = head!("200 OK", 13);
const NOT_FOUND_HEAD: &[u8] = head!("404 Not Found", 0);
const BAD_REQUEST_HEAD: &[u8] = head!("400 Bad Request", 0);
// `OK_HEAD`'s Content-Length.
const _: () = assert!(BODY.len() == 13);

/// Appends a response to `out`: `head` (one of the `*_HEAD`s, whose Content-Length is
/// `body`'s), the date, and the body.
fn respond(
    out: &mut Vec<u8>,
    head: &[u8],
    body: &[u8],
    date: &[u8; 29],
    with_body: bool,
    connection: Connection,
) {
    out.extend_from_slice(head);
    out.extend_from_slice(date);
    match connection {
        Connection::Default => {}
        Connection::Close => out.extend_from_slice(b"\r\nConnection: close"),
        Connection::KeepAlive => out.extend_from_slice(b"\r\nConnection: keep-alive"),
    }
    out.extend_from_slice(b"\r\n\r\n");
    if with_body {
        out.extend_from_slice(body);
    }
}

/// The current time as an HTTP date (`Wed, 02 Dec 2026 17:04:05 GMT`), formatted at most once
/// per second per thread (hyper's `CachedDate` does the same): a response costs one clock
/// read and a comparison, with no lock and no subtraction.
///
/// The cache is per OS thread, not per coroutine: it holds no state a coroutine could carry
/// across a suspension, only the text of the current second.
pub fn http_date() -> [u8; 29] {
    thread_local! {
        /// When the cached text stops being current, and the text.
        static CACHE: Cell<(SystemTime, [u8; 29])> = const { Cell::new((UNIX_EPOCH, [0; 29])) };
    }
    let now = SystemTime::now();
    CACHE.with(|cache| {
        let (next_second, text) = cache.get();
        if now < next_second {
            return text;
        }
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let text = format_http_date(secs);
        cache.set((UNIX_EPOCH + Duration::from_secs(secs + 1), text));
        text
    })
}

/// Formats seconds since the Unix epoch as an IMF-fixdate (RFC 9110 §5.6.7).
pub fn format_http_date(secs: u64) -> [u8; 29] {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let text = format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    let mut out = [0u8; 29];
    out.copy_from_slice(text.as_bytes());
    out
}

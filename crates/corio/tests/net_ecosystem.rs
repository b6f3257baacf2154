//! The tokio-io ecosystem, unchanged, on corio's sockets and tasks.
//!
//! `corio::net`'s streams implement `tokio::io::AsyncRead`/`AsyncWrite` (feature `tokio-io`,
//! tokio without its runtime) so that the crates written against those traits run on corio as
//! they are. Each test here takes one such crate and runs a client and a server over loopback
//! TCP, both as corio tasks on a corio runtime — never a tokio runtime — and checks every byte:
//!
//! | crate | what runs | test |
//! |---|---|---|
//! | tokio-util | `Framed<TcpStream, LinesCodec>`, and `FramedRead`/`FramedWrite` on `into_split` halves | `lines_codec_*` |
//! | hyper-util | `TokioIo<TcpStream>` between hyper 1.x's HTTP/1 server and client | `hyper_*` |
//! | tokio-rustls | `TlsAcceptor`/`TlsConnector` (rustls on `ring`, a CA made by rcgen at test time) | `tls_*` |
//!
//! Every body runs on the 1:N scheduler (one worker: client and server share it) and on two
//! workers, each under a watchdog that fails the test instead of hanging. No test measures time.
#![cfg(feature = "tokio-io")]

mod support;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use corio::net::{TcpListener, TcpStream};
use futures::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Framed, FramedRead, FramedWrite, LinesCodec};

/// How long one flavour's run of a test may take before it counts as a hang: generous, for a
/// debug build of rustls on a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `case` as a corio task on a runtime of each flavour, each under the watchdog, and
/// resumes the task's panic if it panicked.
fn on_every_flavour<F, Fut>(case: F)
where
    F: Fn() -> Fut + Copy + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    for workers in support::FLAVOURS {
        eprintln!("{workers} worker(s)");
        support::within(LIMIT, move || {
            support::rt(workers).block_on(async move { join(corio::spawn(case())).await })
        });
    }
}

/// The output of a task, or its panic resumed here.
async fn join<T>(task: corio::JoinHandle<T>) -> T {
    match task.await {
        Ok(value) => value,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("{e}"),
    }
}

/// A listener on a free loopback port and its address.
fn listen() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// A server task that accepts one connection on `listener` and hands it to `serve`.
fn serve_one<Fut>(
    listener: TcpListener,
    serve: impl FnOnce(TcpStream) -> Fut + Send + 'static,
) -> corio::JoinHandle<Fut::Output>
where
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    corio::spawn(async move {
        let (stream, _) = listener.accept_async().await.unwrap();
        serve(stream).await
    })
}

/// A deterministic payload of `len` bytes (no period that a reordering could hide behind).
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = support::Rng::new(seed);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

// ---------------------------------------------------------------------------------------------
// tokio-util: codecs.

/// How many lines each codec test exchanges.
const LINES: usize = 1_000;

/// Line `i`: numbered, of varied length and not only ASCII; every 250th is 20,000 bytes long,
/// more than a codec's 8 KiB buffer, so it arrives over several reads.
fn line(i: usize) -> String {
    let filler = if i.is_multiple_of(250) {
        "x".repeat(20_000)
    } else {
        "é·".repeat(i % 37)
    };
    format!("{i:04} {filler}")
}

#[test]
fn lines_codec_framed_echoes_a_thousand_lines_in_lockstep() {
    on_every_flavour(|| async {
        let (listener, addr) = listen();
        let server = serve_one(listener, |stream| async move {
            let mut lines = Framed::new(stream, LinesCodec::new());
            let mut echoed = 0;
            while let Some(line) = lines.next().await {
                lines.send(line.unwrap()).await.unwrap();
                echoed += 1;
            }
            echoed
        });

        let stream = TcpStream::connect_async(addr).await.unwrap();
        let mut lines = Framed::new(stream, LinesCodec::new());
        for i in 0..LINES {
            let sent = line(i);
            lines.send(sent.as_str()).await.unwrap();
            let got = lines.next().await.expect("the server hung up").unwrap();
            assert_eq!(got, sent, "line {i}");
        }
        // Flushes and shuts the write side down (`poll_shutdown`): the server sees the end of
        // its stream, stops and closes, and this side then sees the end of its own.
        SinkExt::<&str>::close(&mut lines).await.unwrap();
        assert!(lines.next().await.is_none());
        assert_eq!(join(server).await, LINES);
    });
}

#[test]
fn lines_codec_framed_read_and_write_on_split_halves_carry_a_thousand_lines_pipelined() {
    on_every_flavour(|| async {
        let (listener, addr) = listen();
        let server = serve_one(listener, |stream| async move {
            let (read, write) = stream.into_split();
            let mut from = FramedRead::new(read, LinesCodec::new());
            let mut to = FramedWrite::new(write, LinesCodec::new());
            // Forwards every line as it comes; a codec error would end `send_all` with it.
            to.send_all(&mut from).await.unwrap();
            SinkExt::<String>::close(&mut to).await.unwrap();
        });

        let (read, write) = TcpStream::connect_async(addr).await.unwrap().into_split();
        // The writer is a task of its own (on two workers, often on the other one) and never
        // waits for an echo: lines and echoes are in flight at once.
        let writer = corio::spawn(async move {
            let mut to = FramedWrite::new(write, LinesCodec::new());
            for i in 0..LINES {
                to.feed(line(i)).await.unwrap();
            }
            SinkExt::<String>::close(&mut to).await.unwrap();
        });
        let mut from = FramedRead::new(read, LinesCodec::new());
        let mut count = 0;
        while let Some(got) = from.next().await {
            assert_eq!(got.unwrap(), line(count), "line {count}");
            count += 1;
        }
        assert_eq!(count, LINES);
        join(writer).await;
        join(server).await;
    });
}

// ---------------------------------------------------------------------------------------------
// hyper-util: `TokioIo`.

/// The test service: `GET /hello` answers a greeting, `POST /echo` its request body, anything
/// else 404.
async fn service(
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = req.into_parts();
    let response = match (parts.method, parts.uri.path()) {
        (hyper::Method::GET, "/hello") => hyper::Response::new(Full::from("hello from corio")),
        (hyper::Method::POST, "/echo") => {
            let body = body.collect().await?.to_bytes();
            hyper::Response::new(Full::new(body))
        }
        _ => {
            let mut response = hyper::Response::new(Full::default());
            *response.status_mut() = hyper::StatusCode::NOT_FOUND;
            response
        }
    };
    Ok(response)
}

/// Sends `request` on `sender` and returns the response's status and whole body.
async fn fetch(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    request: hyper::Request<Full<Bytes>>,
) -> (hyper::StatusCode, Bytes) {
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, body)
}

fn request(
    method: hyper::Method,
    path: &str,
    body: impl Into<Bytes>,
) -> hyper::Request<Full<Bytes>> {
    hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "localhost")
        .body(Full::new(body.into()))
        .unwrap()
}

/// hyper's client over `io`: three requests on one keep-alive connection, statuses and bodies
/// checked; the connection's task is the caller's to join.
async fn three_requests<T>(io: T) -> corio::JoinHandle<()>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
    // The connection's IO is driven by its own task, as hyper's client asks.
    let conn = corio::spawn(async move { conn.await.unwrap() });

    let (status, body) = fetch(&mut sender, request(hyper::Method::GET, "/hello", "")).await;
    assert_eq!(status, hyper::StatusCode::OK);
    assert_eq!(body, "hello from corio");

    // 256 KiB each way: more than a socket buffer takes at once, so both sides wait on the
    // netpoller mid-body.
    let sent = payload(256 * 1024, 1);
    let (status, body) = fetch(
        &mut sender,
        request(hyper::Method::POST, "/echo", sent.clone()),
    )
    .await;
    assert_eq!(status, hyper::StatusCode::OK);
    assert!(body == sent, "the echoed body differs");

    let (status, body) = fetch(&mut sender, request(hyper::Method::GET, "/nothing", "")).await;
    assert_eq!(status, hyper::StatusCode::NOT_FOUND);
    assert!(body.is_empty());

    // Dropping the sender ends the connection: its task finishes and closes the socket.
    drop(sender);
    conn
}

#[test]
fn hyper_serves_http1_to_a_hyper_client_through_tokio_io() {
    on_every_flavour(|| async {
        let (listener, addr) = listen();
        let server = serve_one(listener, |stream| async move {
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(service))
                .await
                .unwrap();
        });
        let stream = TcpStream::connect_async(addr).await.unwrap();
        let conn = three_requests(TokioIo::new(stream)).await;
        join(conn).await;
        // The client's close ends the server's connection without an error.
        join(server).await;
    });
}

// ---------------------------------------------------------------------------------------------
// tokio-rustls.

/// A TLS acceptor for "localhost" and a connector that trusts it: a CA and a leaf certificate
/// signed by it, made afresh by rcgen (ring), with rustls on ring. `versions` are the protocol
/// versions the client offers.
fn tls_pair(
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> (tokio_rustls::TlsAcceptor, tokio_rustls::TlsConnector) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "corio test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain: Vec<CertificateDer<'static>> = vec![leaf.der().clone(), ca.der().clone()];
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, PrivateKeyDer::from(leaf_key))
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(server)),
        tokio_rustls::TlsConnector::from(Arc::new(client)),
    )
}

/// A TLS echo: the server copies what it reads back until the client's `close_notify`; the
/// client writes `LEN` bytes from one task while it reads the echo in another, then checks
/// every byte and the negotiated version.
async fn tls_echo(version: &'static rustls::SupportedProtocolVersion) {
    const LEN: usize = 64 * 1024;
    let (acceptor, connector) = tls_pair(&[version]);
    let (listener, addr) = listen();
    let server = serve_one(listener, move |stream| async move {
        let tls = acceptor.accept(stream).await.unwrap();
        let (mut read, mut write) = tokio::io::split(tls);
        let copied = tokio::io::copy(&mut read, &mut write).await.unwrap();
        // `close_notify`, then the TCP write side down.
        write.shutdown().await.unwrap();
        copied
    });

    let stream = TcpStream::connect_async(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, stream).await.unwrap();
    assert_eq!(tls.get_ref().1.protocol_version(), Some(version.version));
    let (mut read, mut write) = tokio::io::split(tls);
    let sent = payload(LEN, 2);
    let to_send = sent.clone();
    let writer = corio::spawn(async move {
        // Odd-sized writes, so that records and writes do not line up.
        for chunk in to_send.chunks(1000) {
            write.write_all(chunk).await.unwrap();
        }
        write.shutdown().await.unwrap();
    });
    let mut echoed = Vec::with_capacity(LEN);
    read.read_to_end(&mut echoed).await.unwrap();
    join(writer).await;
    assert_eq!(echoed.len(), LEN);
    assert!(echoed == sent, "the echo differs from what was sent");
    assert_eq!(join(server).await, LEN as u64);
}

#[test]
fn tls_echo_over_tokio_rustls_with_tls13_carries_64_kib_both_ways() {
    on_every_flavour(|| tls_echo(&rustls::version::TLS13));
}

#[test]
fn tls_echo_over_tokio_rustls_with_tls12_carries_64_kib_both_ways() {
    on_every_flavour(|| tls_echo(&rustls::version::TLS12));
}

#[test]
fn hyper_serves_https_through_tokio_rustls_and_tokio_io() {
    on_every_flavour(|| async {
        let (acceptor, connector) = tls_pair(&[&rustls::version::TLS13]);
        let (listener, addr) = listen();
        let server = serve_one(listener, move |stream| async move {
            let tls = acceptor.accept(stream).await.unwrap();
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), hyper::service::service_fn(service))
                .await
                .unwrap();
        });
        let stream = TcpStream::connect_async(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, stream).await.unwrap();
        let conn = three_requests(TokioIo::new(tls)).await;
        join(conn).await;
        join(server).await;
    });
}

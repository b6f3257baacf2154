//! Where `corio::net` looks names up: a host name through `getaddrinfo` on the blocking pool
//! (it blocks its thread, and in a coroutine that thread is a worker other coroutines are
//! pinned to); an address written out (a `SocketAddr`, `"127.0.0.1:80"`, `("::1", 80)`)
//! without any lookup, pool or `corio::blocking`.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use corio::net::{TcpListener, TcpStream, UdpSocket};

fn runtime() -> corio::Runtime {
    corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .build()
        .unwrap()
}

/// Tasks spawned on the current runtime so far (blocking-pool jobs are tasks).
fn spawned() -> u64 {
    corio::Handle::current().metrics().spawned
}

/// Blocking-style: how many tasks `f` spawned (0: it looked nothing up on the pool).
fn spawns_of(f: impl FnOnce()) -> u64 {
    let before = spawned();
    f();
    spawned() - before
}

#[test]
fn a_coroutine_looks_a_host_name_up_on_the_blocking_pool() {
    let rt = runtime();
    rt.run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        corio::go(move || while listener.accept().is_ok() {});
        let n = spawns_of(|| drop(TcpStream::connect(format!("localhost:{port}")).unwrap()));
        assert_eq!(n, 1, "\"localhost:{port}\": one pool job");
        let n = spawns_of(|| drop(TcpStream::connect(("localhost", port)).unwrap()));
        assert_eq!(n, 1, "(\"localhost\", {port}): one pool job");
        let n = spawns_of(|| drop(UdpSocket::bind("localhost:0").unwrap()));
        assert_eq!(n, 1, "binding to \"localhost:0\": one pool job");
        let n = spawns_of(|| drop(TcpListener::bind(("localhost", 0)).unwrap()));
        assert_eq!(n, 1, "listening on (\"localhost\", 0): one pool job");
    });
}

#[test]
fn an_address_written_out_is_not_looked_up() {
    let rt = runtime();
    rt.run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        corio::go(move || while listener.accept().is_ok() {});
        let text = addr.to_string();
        let cases: [(&str, &dyn Fn() -> TcpStream); 6] = [
            ("SocketAddr", &|| TcpStream::connect(addr).unwrap()),
            #[allow(clippy::needless_borrows_for_generic_args)] // the &T impl is the point
            ("&SocketAddr", &|| TcpStream::connect(&addr).unwrap()),
            ("&str", &|| TcpStream::connect(text.as_str()).unwrap()),
            ("String", &|| TcpStream::connect(text.clone()).unwrap()),
            ("(&str, u16)", &|| {
                TcpStream::connect(("127.0.0.1", addr.port())).unwrap()
            }),
            ("(Ipv4Addr, u16)", &|| {
                TcpStream::connect((Ipv4Addr::LOCALHOST, addr.port())).unwrap()
            }),
        ];
        for (what, connect) in cases {
            assert_eq!(spawns_of(|| drop(connect())), 0, "{what}");
        }
        let list = [SocketAddr::from(([127, 0, 0, 1], 1)), addr];
        let n = spawns_of(|| drop(TcpStream::connect(&list[..]).unwrap()));
        assert_eq!(n, 0, "&[SocketAddr]: tried in turn, the second answers");
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let n = spawns_of(|| {
            socket.send_to(b"x", addr).unwrap();
            socket.send_to(b"x", "127.0.0.1:9").unwrap();
            socket.connect(addr).unwrap();
        });
        assert_eq!(n, 0, "UDP send_to and connect");
    });
}

#[test]
fn async_connect_looks_up_only_host_names_and_takes_borrowed_names() {
    let rt = runtime();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        corio::spawn(async move { while listener.accept_async().await.is_ok() {} });
        let before = spawned();
        drop(TcpStream::connect_async(addr).await.unwrap());
        assert_eq!(spawned() - before, 0, "a SocketAddr needs no pool job");
        let host = String::from("localhost");
        let before = spawned();
        // A borrowed name: the lookup owns a copy of it, so no `'static` bound.
        drop(
            TcpStream::connect_async((host.as_str(), addr.port()))
                .await
                .unwrap(),
        );
        assert_eq!(spawned() - before, 1, "a host name: one pool job");
    });
}

#[test]
fn names_that_do_not_resolve_give_the_lookup_error() {
    let rt = runtime();
    rt.run(|| {
        for bad in ["no port", "127.0.0.1:notaport"] {
            let e = TcpStream::connect(bad).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bad}: {e}");
        }
        let empty: &[SocketAddr] = &[];
        let e = TcpStream::connect(empty).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
        // A name that exists nowhere (the `.invalid` TLD is reserved): the resolver's error,
        // whichever it is, after the pool job.
        let started = std::time::Instant::now();
        assert!(TcpStream::connect("corio-test.invalid:80").is_err());
        assert!(started.elapsed() < Duration::from_secs(60));
    });
}

#[test]
fn the_async_forms_of_bind_and_udp_connect_and_send_to_look_host_names_up_on_the_pool() {
    let rt = runtime();
    rt.block_on(async {
        let before = spawned();
        let listener = TcpListener::bind_async("localhost:0").await.unwrap();
        assert_eq!(
            spawned() - before,
            1,
            "TcpListener::bind_async(\"localhost:0\")"
        );
        let before = spawned();
        let a = UdpSocket::bind_async(("localhost", 0)).await.unwrap();
        let b = UdpSocket::bind_async("127.0.0.1:0").await.unwrap();
        assert_eq!(
            spawned() - before,
            1,
            "one of the two UDP binds is a host name"
        );
        let port = b.local_addr().unwrap().port();
        let before = spawned();
        a.send_to_async(b"by name", ("localhost", port))
            .await
            .unwrap();
        a.send_to_async(b"by address", b.local_addr().unwrap())
            .await
            .unwrap();
        assert_eq!(
            spawned() - before,
            1,
            "send_to_async: the name, not the address"
        );
        let mut buf = [0u8; 16];
        for want in [&b"by name"[..], b"by address"] {
            let (n, _) = b.recv_from_async(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], want);
        }
        let before = spawned();
        a.connect_async(("localhost", port)).await.unwrap();
        assert_eq!(
            spawned() - before,
            1,
            "UdpSocket::connect_async with a host name"
        );
        a.send_async(b"connected").await.unwrap();
        let (n, _) = b.recv_from_async(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"connected");
        drop(listener);
    });
}

#[test]
fn a_blocking_style_call_that_must_look_a_name_up_panics_with_advice_in_an_async_task() {
    let rt = runtime();
    let message = rt
        .block_on(rt.spawn(async {
            let hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(|_| {}));
            let caught = std::panic::catch_unwind(|| TcpListener::bind("localhost:0"));
            std::panic::set_hook(hook);
            let payload = caught.expect_err("a lookup on the worker");
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            // An address written out needs no lookup, and works there.
            drop(TcpListener::bind("127.0.0.1:0").unwrap());
            text
        }))
        .unwrap();
    assert!(message.contains("_async"), "{message}");
}

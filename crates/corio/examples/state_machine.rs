//! The article's `async def fetch()` (section 无栈协程), three ways, plus the generator that
//! joins them:
//!
//! 1. an `async fn`: rustc writes the state machine, and `poll` is the article's `send()`;
//! 2. the article's hand-written state machine translated to Rust: an `enum` of states and a
//!    `send` method (the same protocol as the `Resume` trait, which it also implements);
//! 3. a stackful `Coroutine`, which suspends from inside a nested plain function;
//! 4. a stackless `Generator`: the `async` body of 1 behind the `send()` of 2 — rustc writes
//!    the `enum` of 2 for you.
//!
//! Then the sizes: an async frame holds only what crosses an `await`; a stackful coroutine
//! holds a whole stack. Run with `cargo run -p corio --example state_machine`.
//!
//! A stackless body cannot suspend from a plain function (`.await` outside `async` does not
//! compile): see the `compile_fail` doctest under "Suspending from a plain function" in
//! `corio::generator`.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use corio::coroutine::{Coroutine, CoroutineResult, Yielder};
use corio::generator::{Co, Generator, Resume};

// --- the "IO" --------------------------------------------------------------------------------

/// What `fetch` waits for: the article's awaitables, as values an event loop can act on.
#[derive(Debug)]
enum Awaitable {
    /// `read_socket()`.
    ReadSocket,
    /// `process(data)`.
    Process(String),
}

/// The event loop's half of an awaitable: does the IO or the work and gives the result.
fn complete(awaitable: Awaitable) -> String {
    match awaitable {
        Awaitable::ReadSocket => "GET /index.html".to_string(),
        Awaitable::Process(data) => format!("200 OK for {data:?}"),
    }
}

// --- 1. async fn -----------------------------------------------------------------------------

/// `async def fetch()`, word for word.
#[allow(clippy::let_and_return)] // kept as the article writes it
async fn fetch() -> String {
    let data = read_socket().await;
    let result = process(data).await;
    result
}

/// `read_socket()` as a future.
fn read_socket() -> NotReadyOnce {
    NotReadyOnce::new(Awaitable::ReadSocket)
}

/// `process(data)` as a future.
fn process(data: String) -> NotReadyOnce {
    NotReadyOnce::new(Awaitable::Process(data))
}

/// A leaf future that is not ready at its first poll (as a socket with no data yet) and
/// completes its awaitable at the next.
struct NotReadyOnce {
    awaitable: Option<Awaitable>,
    result: Option<String>,
}

impl NotReadyOnce {
    fn new(awaitable: Awaitable) -> NotReadyOnce {
        NotReadyOnce {
            awaitable: Some(awaitable),
            result: None,
        }
    }
}

impl Future for NotReadyOnce {
    type Output = String;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<String> {
        let this = self.get_mut();
        match this.awaitable.take() {
            Some(awaitable) => {
                println!("    {awaitable:?} is not ready: Pending");
                this.result = Some(complete(awaitable));
                cx.waker().wake_by_ref(); // "the IO is done": poll me again
                Poll::Pending
            }
            None => Poll::Ready(this.result.take().expect("polled after completion")),
        }
    }
}

/// Polls `future` until it is ready: the event loop of the article, for a Rust future.
///
/// Polls `future` until it is ready, printing each poll: the article's `send()` loop made
/// visible (a no-op waker; the futures here are ready at their second poll). The corio
/// runtime's version is `corio::block_on`, used at the end of `main`.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 0;
    loop {
        polls += 1;
        println!("  loop: poll #{polls} (send)");
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

// --- 2. the article's hand-written state machine ---------------------------------------------

/// `class fetch_coroutine`, translated: one variant per state, each holding only what the
/// following states need (the article's `self.data`/`self.result` become variant fields, and
/// the one that nothing reads later disappears).
enum FetchCoroutine {
    /// `state == 0`: not started.
    Start,
    /// `state == 1`: suspended at `await read_socket()`.
    AwaitingRead,
    /// `state == 2`: suspended at `await process(data)`.
    AwaitingProcess,
    /// Finished (`StopIteration` raised).
    Done,
}

impl FetchCoroutine {
    /// `def send(self, value)`: runs to the next suspension and returns what to wait for, or
    /// finishes with the result (Python's `StopIteration(result)`).
    fn send(&mut self, value: Option<String>) -> CoroutineResult<Awaitable, String> {
        match std::mem::replace(self, FetchCoroutine::Done) {
            FetchCoroutine::Start => {
                // First entry: suspend at read_socket().
                *self = FetchCoroutine::AwaitingRead;
                CoroutineResult::Yield(Awaitable::ReadSocket)
            }
            FetchCoroutine::AwaitingRead => {
                // read_socket() done: `value` is its result; suspend at process(data).
                let data = value.expect("send(data) after read_socket");
                *self = FetchCoroutine::AwaitingProcess;
                CoroutineResult::Yield(Awaitable::Process(data))
            }
            FetchCoroutine::AwaitingProcess => {
                // process() done: `value` is its result; finish.
                let result = value.expect("send(result) after process");
                CoroutineResult::Return(result)
            }
            FetchCoroutine::Done => panic!("send() on a finished coroutine"),
        }
    }
}

/// The same protocol as `Coroutine::resume` and `Generator::resume`.
impl Resume<Option<String>> for FetchCoroutine {
    type Yield = Awaitable;
    type Return = String;

    fn resume(&mut self, input: Option<String>) -> CoroutineResult<Awaitable, String> {
        self.send(input)
    }

    fn is_done(&self) -> bool {
        matches!(self, FetchCoroutine::Done)
    }
}

/// The event loop of the article's sequence diagram, for anything with its `send()`:
/// `send(None)` to start, then each awaitable's result, until the coroutine returns.
fn event_loop(mut co: impl Resume<Option<String>, Yield = Awaitable, Return = String>) -> String {
    let mut value = None;
    loop {
        let shown = value
            .as_deref()
            .map_or("None".to_string(), |v| format!("{v:?}"));
        println!("  loop: send({shown})");
        match co.resume(value.take()) {
            CoroutineResult::Yield(awaitable) => {
                println!("    suspended on {awaitable:?}; loop completes it");
                value = Some(complete(awaitable));
            }
            CoroutineResult::Return(result) => {
                assert!(co.is_done());
                return result;
            }
        }
    }
}

// --- 3. stackful -----------------------------------------------------------------------------

type FetchYielder = Yielder<Option<String>, Awaitable>;

/// `fetch`, as plain functions: nothing is `async`.
fn fetch_stackful(y: &FetchYielder) -> String {
    let data = read_socket_blocking(y);
    process_blocking(y, data)
}

/// A plain function two calls below the coroutine's entry that suspends the whole coroutine:
/// its caller's frames stay on the coroutine's stack until it is resumed.
fn read_socket_blocking(y: &FetchYielder) -> String {
    y.suspend(Awaitable::ReadSocket).expect("resumed with data")
}

fn process_blocking(y: &FetchYielder, data: String) -> String {
    y.suspend(Awaitable::Process(data))
        .expect("resumed with the result")
}

// --- 4. stackless generator ------------------------------------------------------------------

type FetchCo = Co<Option<String>, Awaitable>;

/// `fetch` as a generator body: the nested helpers must be `async` too (the function colour).
async fn fetch_generator(co: &FetchCo) -> String {
    let data = co
        .suspend(Awaitable::ReadSocket)
        .await
        .expect("resumed with data");
    co.suspend(Awaitable::Process(data))
        .await
        .expect("resumed with the result")
}

// --- sizes -----------------------------------------------------------------------------------

/// Pending once (asking to be polled again, as a future must), then ready.
async fn yield_once() {
    let mut once = true;
    std::future::poll_fn(move |cx| {
        if std::mem::take(&mut once) {
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
}

/// A 1 KiB buffer used before the `await` and dropped in its own block: not in the frame.
async fn scratch_before_await() -> u32 {
    let sum = {
        let buf = [1u8; 1024];
        buf.iter().map(|&b| u32::from(b)).sum()
    };
    yield_once().await;
    sum
}

/// The same buffer, still in scope at the `await` (rustc keeps a local for its whole scope,
/// even if it is not read afterwards): in the frame.
async fn scratch_in_scope_at_await() -> u32 {
    let buf = [1u8; 1024];
    let sum = buf.iter().map(|&b| u32::from(b)).sum();
    yield_once().await;
    sum
}

fn main() {
    println!("1. async fn fetch(), driven by poll (the article's send):");
    let result = block_on(fetch());
    println!("  -> {result:?}\n");

    println!("2. the article's hand-written state machine (enum + send):");
    let result = event_loop(FetchCoroutine::Start);
    println!("  -> {result:?}\n");

    println!("3. stackful Coroutine (suspends inside nested plain functions):");
    let result = event_loop(Coroutine::new(|y, _first: Option<String>| {
        fetch_stackful(y)
    }));
    println!("  -> {result:?}\n");

    println!("4. stackless Generator (async body, send() protocol):");
    let result = event_loop(Generator::new(|co, _first: Option<String>| async move {
        fetch_generator(&co).await
    }));
    println!("  -> {result:?}\n");

    println!("sizes (bytes):");
    let async_fn = fetch();
    println!(
        "  async fn fetch() future:        {:>7}  (inline; holds the awaited leaf future, no stack)",
        size_of_val(&async_fn)
    );
    drop(async_fn);
    println!(
        "  hand-written FetchCoroutine:    {:>7}  (only the state: the values travel in send())",
        size_of::<FetchCoroutine>()
    );
    let mut generator =
        Generator::new(|co, _first: Option<String>| async move { fetch_generator(&co).await });
    let created = generator.frame_size();
    let _ = generator.resume(None);
    println!(
        "  Generator (fetch):              {:>7}  + heap frame {} (suspended; {created} before the first resume)",
        size_of_val(&generator),
        generator.frame_size()
    );
    let mut stackful = Coroutine::new(|y, _first: Option<String>| fetch_stackful(y));
    let _ = stackful.resume(None);
    println!(
        "  Coroutine (fetch):              {:>7}  + stack {} reserved, {} in use at the suspension (pages committed on touch)",
        size_of_val(&stackful),
        stackful.stack_size(),
        stackful.stack_in_use()
    );
    println!(
        "  async fn, 1 KiB buffer dropped before the await: {:>5}",
        size_of_val(&scratch_before_await())
    );
    println!(
        "  async fn, 1 KiB buffer in scope at the await:    {:>5}",
        size_of_val(&scratch_in_scope_at_await())
    );
    assert!(corio::block_on(scratch_before_await()) == 1024);
    assert!(corio::block_on(scratch_in_scope_at_await()) == 1024);

    println!("\non the corio runtime (one worker):");
    let rt = corio::Runtime::builder()
        .workers(1)
        .build()
        .expect("runtime");
    let (stackless, stackful) = rt.run(|| {
        // The async fn as a stackless task, awaited from a stackful coroutine with block_on...
        let stackless = corio::block_on(corio::spawn(fetch())).expect("task");
        // ...and the same fetch as blocking-style code in a stackful coroutine: each "IO" is a
        // future that the coroutine waits for with corio::block_on, suspending only itself.
        let stackful = corio::go(|| {
            let data = corio::block_on(read_socket());
            corio::block_on(process(data))
        })
        .join()
        .expect("coroutine");
        (stackless, stackful)
    });
    println!("  stackless task: {stackless:?}\n  stackful coroutine: {stackful:?}");
    assert_eq!(stackless, stackful);
}

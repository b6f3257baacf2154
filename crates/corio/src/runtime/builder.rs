//! `Builder`: how many workers, how large the stacks, what to call the threads.

use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use super::trace::TraceConfig;
use super::{Config, Runtime};
use crate::task::error::{drop_payload, payload_text};
use corio_context::stack::DEFAULT_STACK_SIZE;

/// Configures a [`Runtime`].
///
/// ```
/// let rt = corio::Runtime::builder()
///     .workers(1)               // the 1:N model: one thread runs every coroutine
///     .stack_size(128 << 10)    // default stack of `corio::go` coroutines
///     .thread_name("app")
///     .build()
///     .unwrap();
/// assert_eq!(rt.metrics().workers, 1);
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    workers: Option<usize>,
    stack_size: usize,
    thread_name: String,
    max_blocking_threads: usize,
    hog_report: Option<bool>,
    hooks: ThreadHooks,
    preemptible: bool,
    io_spin: bool,
    trace: Option<Option<TraceConfig>>,
}

/// A user callback kept by the builder and the runtime (`Debug` without showing the closure).
pub(crate) struct Hook<F: ?Sized>(pub(crate) Arc<F>);

impl<F: ?Sized> Clone for Hook<F> {
    fn clone(&self) -> Hook<F> {
        Hook(self.0.clone())
    }
}

impl<F: ?Sized> fmt::Debug for Hook<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<callback>")
    }
}

/// What the runtime runs around its worker and blocking-pool threads: their names and the
/// user's start and stop callbacks.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadHooks {
    name_fn: Option<Hook<dyn Fn() -> String + Send + Sync>>,
    on_start: Option<Hook<dyn Fn() + Send + Sync>>,
    on_stop: Option<Hook<dyn Fn() + Send + Sync>>,
}

impl ThreadHooks {
    /// The name of a new thread: the user's `thread_name_fn`, else `default`. A panic of the
    /// user's function is this thread's start failing (an error, not an unwind through the
    /// runtime's bookkeeping: `tests/rt_review_lifecycle.rs`).
    pub(crate) fn thread_name(&self, default: impl FnOnce() -> String) -> io::Result<String> {
        match &self.name_fn {
            Some(name) => catch_unwind(AssertUnwindSafe(|| (name.0)())).map_err(|payload| {
                let e = io::Error::other(format!(
                    "the thread_name_fn panicked: {}",
                    panic_text(&*payload)
                ));
                drop_payload(payload);
                e
            }),
            None => Ok(default()),
        }
    }

    /// Runs a thread's `body` between the start and stop callbacks (the stop callback also
    /// runs if `body` unwinds). A callback that panics is reported on stderr and the thread
    /// goes on: a worker or pool thread that died in its start callback left the runtime
    /// counting it (a drop that never finished, a pool job never run).
    pub(crate) fn run_thread<R>(&self, body: impl FnOnce() -> R) -> R {
        struct Stop<'a>(&'a ThreadHooks);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                if let Some(stop) = &self.0.on_stop {
                    call_hook("on_thread_stop", &*stop.0);
                }
            }
        }
        if let Some(start) = &self.on_start {
            call_hook("on_thread_start", &*start.0);
        }
        let _stop = Stop(self);
        body()
    }
}

/// Calls a thread callback; its panic is reported, not propagated (see `run_thread`).
fn call_hook(what: &str, hook: &(dyn Fn() + Send + Sync)) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(hook)) {
        let thread = std::thread::current();
        eprintln!(
            "corio: the {what} callback panicked on thread {:?}: {}; the thread goes on",
            thread.name().unwrap_or("<unnamed>"),
            panic_text(&*payload)
        );
        drop_payload(payload);
    }
}

/// A panic payload's message, for a report.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload_text(payload).unwrap_or("(not a string)")
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: workers from `CORIO_WORKERS` or the CPU count, 256 KiB stacks, threads
    /// named `corio-N`, up to 512 blocking-pool threads, hog reports on (`CORIO_HOG_REPORT=0`
    /// turns them off), no scheduler trace unless `CORIO_SCHEDTRACE` asks for one.
    pub fn new() -> Builder {
        Builder {
            workers: None,
            stack_size: DEFAULT_STACK_SIZE,
            thread_name: "corio".into(),
            max_blocking_threads: 512,
            hog_report: None,
            hooks: ThreadHooks::default(),
            preemptible: false,
            io_spin: true,
            trace: None,
        }
    }

    /// The number of worker threads (Go's `GOMAXPROCS`). 1 is the 1:N model. Without it:
    /// `CORIO_WORKERS`, else the number of CPUs.
    pub fn workers(&mut self, n: usize) -> &mut Builder {
        self.workers = Some(n);
        self
    }

    /// The stack size of coroutines spawned without one (`corio::go`).
    pub fn stack_size(&mut self, bytes: usize) -> &mut Builder {
        self.stack_size = bytes;
        self
    }

    /// The prefix of the runtime's thread names: workers are `prefix-N`, blocking-pool threads
    /// `prefix-blocking`, the monitor `prefix-sysmon`.
    pub fn thread_name(&mut self, name: impl Into<String>) -> &mut Builder {
        self.thread_name = name.into();
        self
    }

    /// Names worker and blocking-pool threads with what `f` returns, called once per new
    /// thread (the monitor thread keeps the [`thread_name`](Builder::thread_name) prefix).
    ///
    /// If `f` panics, that thread is not started: `build` returns the error for a worker; a
    /// spare worker or a blocking-pool thread is reported on stderr, as when the system
    /// refuses a thread.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// static N: AtomicUsize = AtomicUsize::new(0);
    /// let rt = corio::Runtime::builder()
    ///     .workers(1)
    ///     .thread_name_fn(|| format!("app-{}", N.fetch_add(1, Ordering::Relaxed)))
    ///     .build()
    ///     .unwrap();
    /// let name = rt.run(|| std::thread::current().name().unwrap().to_string());
    /// assert!(name.starts_with("app-"));
    /// ```
    pub fn thread_name_fn<F>(&mut self, f: F) -> &mut Builder
    where
        F: Fn() -> String + Send + Sync + 'static,
    {
        self.hooks.name_fn = Some(Hook(Arc::new(f)));
        self
    }

    /// Runs `f` on every worker and blocking-pool thread when it starts, before it runs any
    /// task (tokio's `on_thread_start`). If `f` panics, the panic is reported on stderr and
    /// the thread goes on to serve the runtime.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let s = started.clone();
    /// let rt = corio::Runtime::builder()
    ///     .workers(2)
    ///     .on_thread_start(move || {
    ///         s.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// rt.run(|| ());
    /// drop(rt);
    /// assert!(started.load(Ordering::SeqCst) >= 1);
    /// ```
    pub fn on_thread_start<F>(&mut self, f: F) -> &mut Builder
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.hooks.on_start = Some(Hook(Arc::new(f)));
        self
    }

    /// Runs `f` on every worker and blocking-pool thread just before it exits (also if it
    /// exits by a panic). If `f` panics, the panic is reported on stderr.
    pub fn on_thread_stop<F>(&mut self, f: F) -> &mut Builder
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.hooks.on_stop = Some(Hook(Arc::new(f)));
        self
    }

    /// The most threads the blocking pool may run at once (at least 1: `build` refuses 0).
    pub fn max_blocking_threads(&mut self, n: usize) -> &mut Builder {
        self.max_blocking_threads = n;
        self
    }

    /// Whether sysmon reports, on stderr, tasks that hold their worker's thread without
    /// yielding: for 50 ms of the thread's CPU time, or for a second asleep in the kernel (a
    /// std lock held across a suspension, a blocking system call). Not while a task panics.
    pub fn hog_report(&mut self, on: bool) -> &mut Builder {
        self.hog_report = Some(on);
        self
    }

    /// Writes a line of the runtime's counters to stderr every `period` (Go's
    /// `GODEBUG=schedtrace`), and with `tasks` also every live task, a line each (Go's
    /// `scheddetail`; [`TaskInfo`](crate::TaskInfo)'s format). `Duration::ZERO` turns the trace
    /// off. Without this call the `CORIO_SCHEDTRACE` environment variable decides: a period in
    /// milliseconds, optionally followed by `,tasks` (`CORIO_SCHEDTRACE=1000,tasks`).
    ///
    /// ```text
    /// corio SCHED 1000ms: workers=2 unparked=1 spares=0 live=3 global=0 queues=[0 1] spawned=12 polls=[300 40] steals=0 parks=4 handoffs=0 io_polls=10
    ///   task 1 "main" stackful, running, worker 0, spawned at src/main.rs:4:5
    /// ```
    ///
    /// The trace runs on a thread of its own, which wakes once a period (so a traced idle
    /// runtime is not free of wake-ups), and shares the program's descriptor table (so it
    /// gives up what [`run_here`](Builder::run_here) saves on a one-worker runtime's system
    /// calls). For watching a program, not for measuring it. `docs/scheduler.md`, "Seeing the
    /// scheduler", reads a trace.
    ///
    /// ```
    /// let rt = corio::Runtime::builder()
    ///     .workers(1)
    ///     .sched_trace(std::time::Duration::from_millis(500), false)
    ///     .build()
    ///     .unwrap();
    /// rt.run(|| corio::sleep(std::time::Duration::from_millis(20)));
    /// ```
    pub fn sched_trace(&mut self, period: Duration, tasks: bool) -> &mut Builder {
        self.trace = Some((!period.is_zero()).then_some(TraceConfig { period, tasks }));
        self
    }

    /// Whether the only worker of a one-worker runtime, out of work while its sockets are
    /// busy, polls them for up to 50 µs before it sleeps (default: yes). The watch answers a
    /// client's next request without the sleep and the wake-up it would cost on the client's
    /// CPU (`docs/net-bench.md`, "Seventh pass"); it spends up to 50 µs of the worker's CPU
    /// per lull, and only after socket activity: an idle runtime still makes no wake-ups.
    /// Turn it off where that CPU time matters more than latency (many runtimes sharing a
    /// CPU). Runtimes with more workers search for work as before either way.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).io_spin(false).build().unwrap();
    /// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
    /// ```
    pub fn io_spin(&mut self, on: bool) -> &mut Builder {
        self.io_spin = on;
        self
    }

    /// Makes every stackful coroutine of this runtime preemptible by signal unless it is
    /// `migratable`: as if each were spawned with
    /// [`TaskBuilder::preemptible`](crate::Builder::preemptible). Has no effect where signal
    /// preemption is unsupported (targets other than x86_64 Linux).
    ///
    /// ```
    /// let mut builder = corio::Runtime::builder();
    /// // SAFETY: no coroutine of this program holds a thread-local borrow, lock or guard
    /// // between runtime operations (see `TaskBuilder::preemptible`).
    /// unsafe { builder.preemptible_coroutines() };
    /// let rt = builder.workers(1).build().unwrap();
    /// rt.run(|| {
    ///     let spinner = corio::go(|| {
    ///         // A pure loop, no runtime operation: on the same thread, others still run.
    ///         let start = std::time::Instant::now();
    ///         while start.elapsed() < std::time::Duration::from_millis(100) {
    ///             std::hint::spin_loop();
    ///         }
    ///     });
    ///     corio::go(|| ()).join().unwrap();
    ///     spinner.join().unwrap();
    /// });
    /// ```
    ///
    /// # Safety
    ///
    /// The contract of [`TaskBuilder::preemptible`](crate::Builder::preemptible) must hold for
    /// every stackful coroutine the runtime runs, including those spawned by libraries.
    pub unsafe fn preemptible_coroutines(&mut self) -> &mut Builder {
        self.preemptible = true;
        self
    }

    /// Starts the runtime.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for 0 workers, a `CORIO_WORKERS` that is not a positive number, a
    /// `CORIO_SCHEDTRACE` that does not parse, a stack size above the maximum, or
    /// `max_blocking_threads(0)`; an OS error if threads or the driver cannot be created, or a
    /// `thread_name_fn` that panics while naming a worker.
    pub fn build(&mut self) -> io::Result<Runtime> {
        Runtime::from_config(self.config()?)
    }

    /// Runs `f` as the main stackful coroutine of a new runtime whose first worker is the
    /// calling thread, and shuts the runtime down when `f` returns, as a Go program ends with
    /// `main`: the coroutines and tasks still alive are cancelled (coroutines unwound on their
    /// own threads), then `f`'s value is returned. tokio's `current_thread` runtime and may's
    /// one-worker scheduler also run on the caller's thread.
    ///
    /// With one worker the runtime is then a single thread that runs tasks, beside sysmon,
    /// which gives itself its own descriptor table, holding none of the program's files. That
    /// makes every system call on a socket cheaper: Linux borrows the file of a descriptor
    /// from a table only one thread uses, and takes and drops a reference on it otherwise
    /// (1.1–1.2 % more messages a second for a one-worker echo server, `docs/net-bench.md`).
    /// In exchange, sysmon then never runs code of the program's: it does not poll the sockets
    /// or fire the timers of a worker stuck in one long task (nothing else could run what they
    /// wake), and so a thread outside the runtime waiting on a corio timer or socket waits for
    /// that task too. Hog reports still reach stderr. The blocking pool, other workers and the
    /// program's own threads share the table as usual.
    ///
    /// ```
    /// let total = corio::Runtime::builder().workers(1).run_here(|| {
    ///     let here = std::thread::current().id();
    ///     let a = corio::go(move || (std::thread::current().id() == here) as u32);
    ///     let b = corio::spawn(async { 41 });
    ///     a.join().unwrap() + b.join().unwrap()
    /// });
    /// assert_eq!(total.unwrap(), 42); // `a` ran on the calling thread: the only worker
    /// ```
    ///
    /// # Errors
    ///
    /// As [`build`](Builder::build).
    ///
    /// # Panics
    ///
    /// With `f`'s panic, after the shutdown; if called from inside a task or on a worker.
    #[track_caller]
    pub fn run_here<F, T>(&mut self, f: F) -> io::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Runtime::run_here(self.config()?, f)
    }

    pub(crate) fn config(&self) -> io::Result<Config> {
        let workers = match self.workers {
            Some(n) => n,
            None => match std::env::var("CORIO_WORKERS") {
                Ok(v) => v.trim().parse::<usize>().map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("corio: CORIO_WORKERS={v:?} is not a positive number"),
                    )
                })?,
                Err(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
            },
        };
        if workers == 0 || workers > 4096 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("corio: a runtime needs between 1 and 4096 workers, not {workers}"),
            ));
        }
        if self.max_blocking_threads == 0 {
            // A pool that may run no thread would never run a job (it was taken as 1).
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "corio: max_blocking_threads must be at least 1",
            ));
        }
        corio_context::stack::validate_size(self.stack_size)?;
        let hog_report = self
            .hog_report
            .unwrap_or_else(|| std::env::var("CORIO_HOG_REPORT").map_or(true, |v| v.trim() != "0"));
        let trace = match self.trace {
            Some(trace) => trace,
            None => match std::env::var("CORIO_SCHEDTRACE") {
                Ok(v) => TraceConfig::parse(&v)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
                Err(_) => None,
            },
        };
        Ok(Config {
            workers,
            // Spare workers take work stuck behind hogs and blocking calls (sysmon starts them
            // one at a time, only while all others are busy and work waits). Four per worker:
            // enough for a hog on every worker and its spare, and then some; never with one
            // worker, whose promise is a single thread.
            spares: if workers == 1 { 0 } else { 4 * workers },
            stack_size: self.stack_size,
            thread_name: self.thread_name.clone(),
            max_blocking_threads: self.max_blocking_threads,
            hog_report,
            hooks: self.hooks.clone(),
            preemptible: self.preemptible && super::preempt::enable(),
            io_spin: self.io_spin,
            caller_worker: false,
            trace,
        })
    }
}

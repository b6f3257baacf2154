//! The scheduler trace: a line of the runtime's counters on stderr at a fixed period, and
//! optionally every live task (Go's `GODEBUG=schedtrace=X,scheddetail=1`; DESIGN.md decision
//! 8).
//!
//! # Why a thread of its own
//!
//! Go's sysmon prints the trace. corio's sysmon sleeps without a timeout while the runtime is
//! idle (an idle runtime makes no wake-ups), and on a one-worker `run_here` runtime it has a
//! descriptor table of its own without the program's stderr (`fd_table.rs`). A trace is asked
//! for to watch a program, idle or not, so it gets a thread that wakes once a period and
//! writes with `std::io::stderr`, and leaves sysmon's timing alone. That thread shares the
//! program's descriptor table, so a traced `run_here` runtime loses the single-user table's
//! cheaper system calls; a trace is for looking, not for benchmarks.
//!
//! # The line
//!
//! ```text
//! corio SCHED 1000ms: workers=2 unparked=1 spares=0 live=3 global=0 queues=[0 1] spawned=12 polls=[300 40] steals=0 parks=4 handoffs=0 io_polls=10
//! ```
//!
//! The time since the runtime started, then [`Metrics`](super::Metrics) fields: `unparked`
//! workers not asleep, `spares` spare workers sysmon started, `live` tasks, `global` the global
//! queue's length, `queues` each worker's run queue length, `polls` each worker's task polls
//! so far (then each started spare's). With the task list on, each live task follows on a line of its own, indented
//! ([`TaskInfo`](super::TaskInfo)'s `Display`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{Handle, Shared};

/// What the trace prints, and how often (`Builder::sched_trace`, `CORIO_SCHEDTRACE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TraceConfig {
    pub(crate) period: Duration,
    pub(crate) tasks: bool,
}

impl TraceConfig {
    /// Parses `CORIO_SCHEDTRACE`: a period in milliseconds, optionally followed by `,tasks`
    /// (`"1000"`, `"250,tasks"`). `Ok(None)` for `0`.
    pub(crate) fn parse(value: &str) -> Result<Option<TraceConfig>, String> {
        let mut parts = value.trim().split(',').map(str::trim);
        let ms = parts.next().unwrap_or("");
        let ms: u64 = ms.parse().map_err(|_| {
            format!(
                "corio: CORIO_SCHEDTRACE={value:?}: expected a period in milliseconds, \
                 optionally followed by \",tasks\" (e.g. \"1000\" or \"1000,tasks\")"
            )
        })?;
        let tasks = match parts.next() {
            None => false,
            Some("tasks") => true,
            Some(other) => {
                return Err(format!(
                    "corio: CORIO_SCHEDTRACE={value:?}: unknown option {other:?} \
                     (the only one is \"tasks\")"
                ));
            }
        };
        if let Some(extra) = parts.next() {
            return Err(format!(
                "corio: CORIO_SCHEDTRACE={value:?}: unexpected {extra:?} after the options"
            ));
        }
        Ok((ms > 0).then(|| TraceConfig {
            period: Duration::from_millis(ms),
            tasks,
        }))
    }
}

/// The trace thread's handle, kept by the runtime until shutdown stops it.
#[derive(Default)]
pub(crate) struct Tracer {
    stop: Mutex<bool>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Tracer {
    /// Starts the trace thread for `shared`, if its configuration asks for a trace. The thread
    /// holds the runtime until [`Tracer::stop`].
    pub(crate) fn start(shared: &Arc<Shared>) -> std::io::Result<()> {
        let Some(config) = shared.config.trace else {
            return Ok(());
        };
        let name = format!("{}-trace", shared.config.thread_name);
        let shared_for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(shared_for_thread, config))?;
        *lock(&shared.tracer.thread) = Some(thread);
        Ok(())
    }

    /// Stops and joins the trace thread, if there is one (from shutdown, never from it).
    pub(crate) fn stop(&self) {
        *lock(&self.stop) = true;
        self.wake.notify_all();
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(shared: Arc<Shared>, config: TraceConfig) {
    let handle = Handle { shared };
    let tracer = &handle.shared.tracer;
    let mut stopped = lock(&tracer.stop);
    loop {
        stopped = tracer
            .wake
            .wait_timeout_while(stopped, config.period, |stop| !*stop)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if *stopped {
            return;
        }
        let text = render(&handle, config.tasks);
        // One write per period, so that lines of other threads do not land inside it. A
        // failed write (stderr closed) is not the program's problem.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

/// `values` separated by spaces.
fn spaced<T: std::fmt::Display>(values: impl Iterator<Item = T>) -> String {
    let mut text = String::new();
    for (i, value) in values.enumerate() {
        let _ = write!(text, "{}{value}", if i == 0 { "" } else { " " });
    }
    text
}

/// The trace's text for one period: its line, and with `tasks` the task list.
pub(crate) fn render(handle: &Handle, tasks: bool) -> String {
    let shared = &handle.shared;
    let m = handle.metrics();
    let queues = spaced(shared.workers[..m.workers].iter().map(|w| w.steal.len()));
    // The workers, then the spares sysmon has started (`Metrics::worker_polls` lists every
    // spare slot, started or not).
    let polls = spaced(
        shared
            .workers
            .iter()
            .zip(&m.worker_polls)
            .filter(|(w, _)| !w.spare || w.started.load(Ordering::Relaxed))
            .map(|(_, polls)| polls),
    );
    let mut text = format!(
        "corio SCHED {}ms: workers={} unparked={} spares={} live={} global={} queues=[{queues}] \
         spawned={} polls=[{polls}] steals={} parks={} handoffs={} io_polls={}\n",
        shared.epoch.elapsed().as_millis(),
        m.workers,
        m.unparked_workers,
        m.spares_started,
        m.live_tasks,
        m.global_queue,
        m.spawned,
        m.steals,
        m.parks,
        m.handoffs,
        m.io_polls,
    );
    if tasks {
        let mut all = handle.tasks();
        all.sort_unstable_by_key(|t| t.id);
        for task in all {
            let _ = writeln!(text, "  {task}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_variable_parses_or_says_why_not() {
        let ms = Duration::from_millis;
        assert_eq!(
            TraceConfig::parse("1000"),
            Ok(Some(TraceConfig {
                period: ms(1000),
                tasks: false
            }))
        );
        assert_eq!(
            TraceConfig::parse(" 250 , tasks "),
            Ok(Some(TraceConfig {
                period: ms(250),
                tasks: true
            }))
        );
        assert_eq!(TraceConfig::parse("0"), Ok(None));
        assert!(TraceConfig::parse("").unwrap_err().contains("milliseconds"));
        assert!(
            TraceConfig::parse("1s")
                .unwrap_err()
                .contains("milliseconds")
        );
        assert!(
            TraceConfig::parse("10,detail")
                .unwrap_err()
                .contains("\"detail\"")
        );
        assert!(
            TraceConfig::parse("10,tasks,x")
                .unwrap_err()
                .contains("\"x\"")
        );
    }
}

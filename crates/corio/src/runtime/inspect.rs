//! A list of a runtime's live tasks, for people looking at a running program (DESIGN.md
//! decision 8: "a dump of every live coroutine ... on demand").
//!
//! # What it reads
//!
//! Every live task is in the runtime's owned-task list (`owned.rs`), which shutdown already
//! walks to cancel what no queue holds. [`Handle::tasks`] walks it the same way, a shard at a
//! time under that shard's lock, and copies what the task header says of each task: its id,
//! name, kind and spawn location, which never change, its home worker, written once, and one
//! load of its state word. Nothing on a task's own path is touched or slowed: the walk takes
//! only the shard locks that a spawn and a task's end take, for as long as copying one
//! shard's headers lasts.
//!
//! # What it cannot say
//!
//! The list is a snapshot taken over time, shard by shard: a task spawned or finished during
//! the walk may or may not be in it, and the states are each as of the moment the task was
//! read, not one moment for all. The stack depth of a suspended coroutine is not shown: it
//! lives in the coroutine's body, which only the task's own poll may touch.

use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use super::Handle;
use crate::task::core::{Header, Kind};

/// One live task of a runtime, as [`Handle::tasks`] found it.
///
/// Its `Display` is one line, as in `corio::RuntimeBuilder::sched_trace`'s task lists:
///
/// ```text
/// task 7 "conn" stackful, waiting, worker 0, spawned at src/main.rs:12:9
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task's id (the same as its `JoinHandle::id` and `corio::current().id()`).
    pub id: u64,
    /// Its name, if it was spawned with one ([`TaskBuilder::name`](crate::Builder::name)).
    pub name: Option<Arc<str>>,
    /// What kind of task it is.
    pub kind: TaskKind,
    /// What it was doing when it was read.
    pub state: TaskState,
    /// The worker a started stackful coroutine (or a `spawn_local` task) is pinned to; `None`
    /// for tasks that may run on any worker.
    pub worker: Option<usize>,
    /// Where it was spawned.
    pub location: &'static Location<'static>,
}

/// What kind of task a [`TaskInfo`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskKind {
    /// A stackful coroutine (`corio::go`, `TaskBuilder::spawn`).
    Stackful,
    /// A stackless task (`corio::spawn`, `spawn_local`).
    Stackless,
    /// A closure on the blocking pool (`corio::spawn_blocking`).
    Blocking,
}

/// What a task was doing when [`Handle::tasks`] read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskState {
    /// Suspended until something wakes it: a timer, a socket, a channel, a lock, a join.
    Waiting,
    /// Woken or yielded, waiting in a queue for a worker to run it.
    Runnable,
    /// Being run by a worker (or by the blocking pool) right now.
    Running,
    /// Cancelled (aborted, or its runtime shutting down); its destructors have not all run.
    Cancelling,
    /// Finished; its handle has not taken the output yet, or the runtime has not released it.
    Finished,
}

impl TaskInfo {
    fn of(header: &Header) -> TaskInfo {
        let state = header.state.load();
        TaskInfo {
            id: header.id,
            name: header.name.clone(),
            kind: match header.kind {
                Kind::Stackful { .. } => TaskKind::Stackful,
                Kind::Stackless | Kind::LocalStackless => TaskKind::Stackless,
                Kind::Blocking => TaskKind::Blocking,
            },
            state: if state.is_complete() {
                TaskState::Finished
            } else if state.is_cancelled() {
                TaskState::Cancelling
            } else if state.is_running() {
                TaskState::Running
            } else if state.is_notified() {
                TaskState::Runnable
            } else {
                TaskState::Waiting
            },
            worker: header.pinned_home(),
            location: header.location,
        }
    }
}

impl fmt::Display for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TaskKind::Stackful => "stackful",
            TaskKind::Stackless => "stackless",
            TaskKind::Blocking => "blocking",
        })
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TaskState::Waiting => "waiting",
            TaskState::Runnable => "runnable",
            TaskState::Running => "running",
            TaskState::Cancelling => "cancelling",
            TaskState::Finished => "finished",
        })
    }
}

impl fmt::Display for TaskInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}", self.id)?;
        if let Some(name) = &self.name {
            write!(f, " {name:?}")?;
        }
        write!(f, " {}, {}", self.kind, self.state)?;
        if let Some(worker) = self.worker {
            write!(f, ", worker {worker}")?;
        }
        write!(f, ", spawned at {}", self.location)
    }
}

impl Handle {
    /// The runtime's live tasks: every coroutine and task spawned and not yet released, in no
    /// particular order (see [`TaskInfo`]).
    ///
    /// A snapshot taken shard by shard (the runtime keeps its live tasks in several lists):
    /// tasks spawned or finishing meanwhile may be missing or present, and each state is as
    /// of the moment that task was read. It costs the running tasks nothing beyond the locks
    /// a spawn takes; it allocates the list it returns.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// let _entered = rt.enter(); // spawns below go to `rt`
    /// let (tx, rx) = corio::chan::bounded::<()>(0);
    /// let waiter = corio::Builder::new().name("waiter").spawn(move || rx.recv()).unwrap();
    /// # while !rt.handle().tasks().iter().any(|t| t.state == corio::TaskState::Waiting) {
    /// #     std::thread::yield_now();
    /// # }
    /// let tasks = rt.handle().tasks();
    /// let info = tasks.iter().find(|t| t.id == waiter.id()).unwrap();
    /// assert_eq!(info.name.as_deref(), Some("waiter"));
    /// assert_eq!(info.kind, corio::TaskKind::Stackful);
    /// assert_eq!(info.state, corio::TaskState::Waiting); // in `recv`
    /// println!("{info}"); // task 1 "waiter" stackful, waiting, worker 0, spawned at ...
    /// drop(tx);
    /// assert!(waiter.join().unwrap().is_err());
    /// ```
    pub fn tasks(&self) -> Vec<TaskInfo> {
        let _no_preempt = super::preempt::guard();
        let mut tasks = Vec::with_capacity(self.shared.owned.len());
        self.shared
            .owned
            .for_each(|header| tasks.push(TaskInfo::of(header)));
        tasks
    }
}

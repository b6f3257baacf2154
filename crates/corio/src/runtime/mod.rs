//! The runtime: schedulers, workers, sysmon.

pub(crate) mod sched;

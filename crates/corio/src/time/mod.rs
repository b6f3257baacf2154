//! Timers.

pub(crate) mod heap;

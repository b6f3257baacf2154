//! The GMP scheduler.

pub(crate) mod inject;
pub(crate) mod placement;
pub(crate) mod queue;
pub(crate) mod ring;
pub(crate) mod slot;

//! TEMPORARY stand-in for the global queue (the real one is being written in parallel).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::queue::{Local, Overflow};

pub(crate) struct Inject<T> {
    queue: Mutex<VecDeque<T>>,
    len: AtomicUsize,
    closed: AtomicBool,
}

impl<T> Inject<T> {
    pub(crate) fn new() -> Inject<T> {
        Inject { queue: Mutex::new(VecDeque::new()), len: AtomicUsize::new(0), closed: AtomicBool::new(false) }
    }
    pub(crate) fn push(&self, t: T) -> Result<(), T> {
        let mut q = self.queue.lock().unwrap();
        if self.closed.load(Ordering::Acquire) {
            return Err(t);
        }
        q.push_back(t);
        self.len.store(q.len(), Ordering::Release);
        Ok(())
    }
    pub(crate) fn pop(&self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.queue.lock().unwrap();
        let t = q.pop_front();
        self.len.store(q.len(), Ordering::Release);
        t
    }
    pub(crate) fn pop_batch_into(&self, dst: &mut Local<T>, max: usize) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.queue.lock().unwrap();
        let first = q.pop_front()?;
        let n = q.len().min(max.saturating_sub(1)).min(dst.remaining_slots());
        dst.push_back_batch(q.drain(..n));
        self.len.store(q.len(), Ordering::Release);
        Some(first)
    }
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(crate) fn close(&self) {
        let _q = self.queue.lock().unwrap();
        self.closed.store(true, Ordering::Release);
    }
}

impl<T> Overflow<T> for Inject<T> {
    fn push(&self, task: T) {
        let _ = Inject::push(self, task);
    }
    fn push_batch<I: Iterator<Item = T>>(&self, iter: I) {
        let mut q = self.queue.lock().unwrap();
        q.extend(iter);
        self.len.store(q.len(), Ordering::Release);
    }
}

//! A FIFO ring for a worker's yielded queue, owner-only.
//!
//! The yielded queue is on the stackful yield's hottest path: a direct switch
//! (`WorkerCtx::direct_yield`) looks at its front and then puts the leaving coroutine at its
//! back and takes the front off — once per yield. `VecDeque` does that with its general
//! index arithmetic: every access maps a logical index to a physical one with a compare and a
//! conditional move (its capacity need not be a power of two), and a push checks for growth.
//! Callgrind counted about 26 instructions per yield in it.
//!
//! [`Ring`] keeps the capacity a power of two and its `head` always a physical index below
//! it, so the front is `buf[head]` with no arithmetic at all, and a position `i` places back
//! is `(head + i) & mask` (`mask = cap - 1`, a field). Its one special operation is
//! [`Ring::rotate`]: the front out and a new element in at the back in one step, which never
//! grows the ring (the length stays the same; with a full ring the back's slot *is* the
//! front's, read before it is written).
//!
//! The slots are `MaybeUninit`: exactly the `len` slots from `head` on (modulo the capacity)
//! hold values. The unit tests below run under Miri (`cargo +nightly miri test -p corio --lib
//! ring`), which checks every read of a slot against that invariant.

use std::mem::MaybeUninit;

/// A growable FIFO ring buffer (see the module docs).
pub(crate) struct Ring<T> {
    /// The slots; its length (the capacity) is 0 or a power of two.
    buf: Box<[MaybeUninit<T>]>,
    /// The physical index of the front: below the capacity (0 while it is 0).
    head: usize,
    /// How many slots from `head` on hold values.
    len: usize,
    /// The capacity minus one (0 while it is 0): `slot`'s mask, kept so that the hot path
    /// does not compute it from the capacity at each use.
    mask: usize,
}

impl<T> Ring<T> {
    /// An empty ring; allocates on the first push.
    pub(crate) fn new() -> Ring<T> {
        Ring {
            buf: Box::new([]),
            head: 0,
            len: 0,
            mask: 0,
        }
    }

    /// How many elements the ring holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the ring holds no element.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The physical index of logical position `i` (which may equal `len`, the back's next
    /// slot). The capacity must not be 0.
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        (self.head + i) & self.mask
    }

    /// The front element.
    #[cfg(test)]
    pub(crate) fn front(&self) -> Option<&T> {
        if self.len == 0 {
            return None;
        }
        // SAFETY: `head` is below the capacity and, with `len > 0`, its slot holds a value.
        Some(unsafe { self.buf.get_unchecked(self.head).assume_init_ref() })
    }

    /// The front element, for a caller that knows the ring is not empty.
    ///
    /// # Safety
    ///
    /// The ring must not be empty.
    #[inline]
    pub(crate) unsafe fn front_unchecked(&self) -> &T {
        debug_assert!(self.len != 0);
        // SAFETY: `head` is below the capacity and, with `len > 0` (the caller's promise), its
        // slot holds a value.
        unsafe { self.buf.get_unchecked(self.head).assume_init_ref() }
    }

    /// Adds `value` at the back, growing the ring if it is full.
    #[inline]
    pub(crate) fn push_back(&mut self, value: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let at = self.slot(self.len);
        // SAFETY: `at` is below the capacity (masked), and the slot after the `len` held ones
        // is free (the ring is not full).
        unsafe { self.buf.get_unchecked_mut(at) }.write(value);
        self.len += 1;
    }

    /// Removes the front element.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        // SAFETY: with `len > 0`, `head`'s slot holds a value; it is free once `head` moves
        // on below (read exactly once).
        let value = unsafe { self.buf.get_unchecked(self.head).assume_init_read() };
        self.head = self.slot(1);
        self.len -= 1;
        Some(value)
    }

    /// Removes the back element (the one pushed last).
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let at = self.slot(self.len);
        // SAFETY: `at` is below the capacity (masked) and was the last of the `len` held
        // slots; with `len` shortened it is free (read exactly once).
        Some(unsafe { self.buf.get_unchecked(at).assume_init_read() })
    }

    /// `push_back(back)` then `pop_front()` in one step, without growing: returns the front.
    ///
    /// # Safety
    ///
    /// The ring must not be empty (the caller has seen its front, through
    /// [`front_unchecked`](Self::front_unchecked): the length is not read again, which an
    /// atomic load between the two would otherwise force).
    #[inline]
    pub(crate) unsafe fn rotate(&mut self, back: T) -> T {
        debug_assert!(self.len != 0);
        // SAFETY: with `len > 0` (the caller's promise), `head`'s slot holds a value, read once
        // here; then the slot `len` places on (which is `head`'s own if the ring is full) is
        // free for `back`. Both indices are below the capacity (masked).
        unsafe {
            let front = self.buf.get_unchecked(self.head).assume_init_read();
            let at = self.slot(self.len);
            self.buf.get_unchecked_mut(at).write(back);
            self.head = self.slot(1);
            front
        }
    }

    /// Doubles the capacity (at least 8 slots), moving the elements to the front of the new
    /// buffer in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(8);
        let mut buf: Box<[MaybeUninit<T>]> = (0..cap).map(|_| MaybeUninit::uninit()).collect();
        for (i, slot) in buf.iter_mut().enumerate().take(self.len) {
            let from = self.slot(i);
            // SAFETY: the `len` slots from `head` on hold values; each is read once, and the
            // old buffer (of `MaybeUninit`s) is then dropped without dropping them.
            slot.write(unsafe { self.buf.get_unchecked(from).assume_init_read() });
        }
        self.buf = buf;
        self.head = 0;
        self.mask = cap - 1;
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        while let Some(value) = self.pop_front() {
            drop(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;
    use std::rc::Rc;

    #[test]
    fn pops_in_push_order_across_growth_and_wraparound() {
        let mut ring = Ring::new();
        let mut next_in = 0;
        let mut next_out = 0;
        // Pushes outrun pops, so the ring grows while its head is in the middle.
        for round in 0..50 {
            for _ in 0..3 {
                ring.push_back(Box::new(next_in));
                next_in += 1;
            }
            for _ in 0..(1 + round % 3) {
                if let Some(v) = ring.pop_front() {
                    assert_eq!(*v, next_out);
                    next_out += 1;
                }
            }
            assert_eq!(ring.len(), next_in - next_out);
            assert_eq!(
                ring.front().map(|v| **v),
                (!ring.is_empty()).then_some(next_out)
            );
        }
        while let Some(v) = ring.pop_front() {
            assert_eq!(*v, next_out);
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        assert!(ring.is_empty());
        assert!(ring.front().is_none());
    }

    #[test]
    fn pop_back_takes_the_element_pushed_last_across_wraparound() {
        let mut ring = Ring::new();
        for i in 0..6 {
            ring.push_back(Box::new(i));
        }
        for i in 0..5 {
            assert_eq!(ring.pop_front().map(|v| *v), Some(i));
        }
        // The head is at 5 of 8: the next pushes wrap around.
        for i in 6..12 {
            ring.push_back(Box::new(i));
        }
        assert_eq!(ring.pop_back().map(|v| *v), Some(11));
        assert_eq!(ring.pop_back().map(|v| *v), Some(10));
        ring.push_back(Box::new(12));
        let rest: Vec<i32> = std::iter::from_fn(|| ring.pop_front().map(|v| *v)).collect();
        assert_eq!(rest, [5, 6, 7, 8, 9, 12]);
        assert!(ring.pop_back().is_none());
    }

    #[test]
    fn rotate_takes_the_front_and_queues_the_new_element_at_the_back() {
        for len in 1..=9 {
            // 8 is a full ring (the back's slot is the front's); 9 grew it to 16.
            let mut ring = Ring::new();
            for i in 0..len {
                ring.push_back(Box::new(i));
            }
            let mut expected: std::collections::VecDeque<usize> = (0..len).collect();
            for i in len..len + 40 {
                // SAFETY: the ring holds `len` > 0 elements.
                let out = unsafe { ring.rotate(Box::new(i)) };
                expected.push_back(i);
                assert_eq!(Some(*out), expected.pop_front());
                assert_eq!(ring.len(), len);
                assert_eq!(ring.front().map(|v| **v), expected.front().copied());
                // SAFETY: as above.
                assert_eq!(**unsafe { ring.front_unchecked() }, expected[0]);
            }
            let rest: Vec<usize> = std::iter::from_fn(|| ring.pop_front().map(|v| *v)).collect();
            assert_eq!(rest, Vec::from(expected));
        }
    }

    #[test]
    fn dropping_the_ring_drops_every_element_it_holds_once() {
        let counted = Rc::new(());
        {
            let mut ring = Ring::new();
            for _ in 0..11 {
                ring.push_back(counted.clone());
            }
            drop(ring.pop_front());
            // SAFETY: the ring holds 10 elements.
            drop(unsafe { ring.rotate(counted.clone()) });
            assert_eq!(Rc::strong_count(&counted), 11);
        }
        assert_eq!(Rc::strong_count(&counted), 1);
    }
}

//! Prints a backtrace taken three calls deep inside a coroutine: it continues past the
//! coroutine's entry into the function that resumed it. Also a target for `gdb`'s `bt`
//! (`break inner_most`).
use corio_context::coroutine::{Coroutine, Yielder};

#[inline(never)]
fn inner_most(y: &Yielder<(), ()>) {
    println!("{}", std::backtrace::Backtrace::force_capture());
    y.suspend(());
}

#[inline(never)]
fn middle(y: &Yielder<(), ()>) {
    inner_most(y);
    std::hint::black_box(());
}

#[inline(never)]
fn resumer(co: &mut Coroutine<(), (), ()>) {
    co.resume(());
    std::hint::black_box(());
}

fn main() {
    let mut co = Coroutine::new(|y, ()| middle(y));
    resumer(&mut co);
}

//! Quick timing smoke test.
use corio_context::coroutine::Coroutine;
use std::time::Instant;
fn main() {
    let n = 20_000_000u64;
    let mut co: Coroutine<u64, u64, ()> = Coroutine::new(|y, mut x| loop { x = y.suspend(x + 1); });
    let t = Instant::now();
    let mut v = 0;
    for _ in 0..n { v = co.resume(v).as_yield().unwrap(); }
    let e = t.elapsed();
    println!("corio switch: {:.2} ns per switch (v={v})", e.as_nanos() as f64 / n as f64 / 2.0);
    let mut c2 = corosensei::Coroutine::new(|y: &corosensei::Yielder<u64, u64>, mut x: u64| loop { x = y.suspend(x + 1); });
    let t = Instant::now();
    let mut v = 0;
    for _ in 0..n { v = match c2.resume(v) { corosensei::CoroutineResult::Yield(x) => x, _ => 0 }; }
    let e = t.elapsed();
    println!("corosensei switch: {:.2} ns per switch (v={v})", e.as_nanos() as f64 / n as f64 / 2.0);
    let m = 2_000_000;
    let t = Instant::now();
    for i in 0..m { let mut co: Coroutine<u64, (), u64> = Coroutine::new(|_, x| x + 1); assert_eq!(co.resume(i).as_return(), Some(i+1)); }
    println!("corio create+run+drop: {:.1} ns", t.elapsed().as_nanos() as f64 / m as f64);
    let m = 20_000;
    let t = Instant::now();
    for i in 0..m { let mut co = corosensei::Coroutine::new(|_: &corosensei::Yielder<u64,()>, x: u64| x + 1); assert!(matches!(co.resume(i), corosensei::CoroutineResult::Return(_))); }
    println!("corosensei create+run+drop: {:.1} ns", t.elapsed().as_nanos() as f64 / m as f64);
    // depth of a minimal suspended coroutine
    let mut co: Coroutine<(), (), ()> = Coroutine::new(|y, ()| { y.suspend(()); });
    co.resume(());
    println!("minimal suspended stack in use: {} bytes", co.stack_in_use());
}

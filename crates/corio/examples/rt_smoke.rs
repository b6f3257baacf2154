//! Smoke test of the runtime.
use std::time::{Duration, Instant};
fn main() {
    for workers in [1, 2] {
        let rt = corio::Runtime::builder().workers(workers).build().unwrap();
        let v = rt.run(|| {
            let hs: Vec<_> = (0..1000u64).map(|i| corio::go(move || { corio::yield_now(); i })).collect();
            let s: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
            let a = corio::block_on(corio::spawn(async { 5 })).unwrap();
            let t = Instant::now();
            corio::sleep(Duration::from_millis(3));
            let slept = t.elapsed();
            (s, a, slept)
        });
        println!("workers={workers}: {:?}", v);
        let n = 200_000;
        let t = Instant::now();
        rt.run(move || {
            let a = corio::go(move || for _ in 0..n { corio::yield_now() });
            for _ in 0..n { corio::yield_now() }
            a.join().unwrap();
        });
        println!("  yield: {:.1} ns", t.elapsed().as_nanos() as f64 / (2 * n) as f64);
        let t = Instant::now();
        let m = 100_000;
        rt.run(move || {
            let hs: Vec<_> = (0..m).map(|_| corio::go(|| ())).collect();
            for h in hs { h.join().unwrap(); }
        });
        println!("  spawn+join stackful: {:.1} ns", t.elapsed().as_nanos() as f64 / m as f64);
        let t = Instant::now();
        rt.block_on(async move {
            let hs: Vec<_> = (0..m).map(|_| corio::spawn(async {})).collect();
            for h in hs { h.await.unwrap(); }
        });
        println!("  spawn+join stackless: {:.1} ns", t.elapsed().as_nanos() as f64 / m as f64);
        println!("  {:?}", rt.metrics());
    }
}

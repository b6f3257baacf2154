//! spawn profile
use std::time::Instant;
fn main() {
    let rt = corio::Runtime::builder().workers(1).hog_report(false).build().unwrap();
    let m: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(100_000);
    let stackless = std::env::args().nth(2).is_some();
    for _ in 0..3 {
        let t = Instant::now();
        if stackless {
            rt.block_on(rt.spawn(async move {
                let hs: Vec<_> = (0..m).map(|_| corio::spawn(async {})).collect();
                for h in hs { h.await.unwrap(); }
            })).unwrap();
        } else {
            rt.run(move || {
                let hs: Vec<_> = (0..m).map(|_| corio::go(|| ())).collect();
                for h in hs { h.join().unwrap(); }
            });
        }
        println!("spawn+join: {:.1} ns", t.elapsed().as_nanos() as f64 / m as f64);
    }
}

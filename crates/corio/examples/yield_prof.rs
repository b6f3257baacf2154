//! yield profile
use std::time::Instant;
fn main() {
    let rt = corio::Runtime::builder().workers(1).hog_report(false).build().unwrap();
    let n: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(2_000_000);
    for _ in 0..3 {
        let t = Instant::now();
        rt.run(move || {
            let a = corio::go(move || for _ in 0..n { corio::yield_now() });
            for _ in 0..n { corio::yield_now() }
            a.join().unwrap();
        });
        println!("yield: {:.1} ns", t.elapsed().as_nanos() as f64 / (2 * n) as f64);
    }
}

//! skynet smoke
use std::time::Instant;
fn skynet(num: u64, size: u64, div: u64) -> u64 {
    if size == 1 { return num; }
    let hs: Vec<_> = (0..div).map(|i| { let sub = size / div; corio::go(move || skynet(num + i * sub, sub, div)) }).collect();
    hs.into_iter().map(|h| h.join().unwrap()).sum()
}
fn skynet_async(num: u64, size: u64, div: u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 { return num; }
        let hs: Vec<_> = (0..div).map(|i| { let sub = size / div; corio::spawn(skynet_async(num + i * sub, sub, div)) }).collect();
        let mut s = 0; for h in hs { s += h.await.unwrap(); } s
    })
}
fn main() {
    for w in [1, 2] {
        let rt = corio::Runtime::builder().workers(w).hog_report(false).build().unwrap();
        for _ in 0..2 {
            let t = Instant::now();
            let r = rt.run(|| skynet(0, 1_000_000, 10));
            println!("w={w} stackful {r} {:?}", t.elapsed());
            let t = Instant::now();
            let r = rt.block_on(skynet_async(0, 1_000_000, 10));
            println!("w={w} stackless {r} {:?}", t.elapsed());
        }
    }
}

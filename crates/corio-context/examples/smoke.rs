use corio_context::coroutine::{Coroutine, CoroutineResult};
fn main() {
    let mut co = Coroutine::new(|y, a: i32| {
        let b = y.suspend(a + 1);
        let c = y.suspend(b * 2);
        format!("{a} {b} {c}")
    });
    println!("{:?}", co.resume(1));
    println!("{:?}", co.resume(10));
    println!("{:?}", co.resume(100));
    println!("{:?}", co);
    let mut co2: Coroutine<(), (), ()> = Coroutine::new(|_, ()| panic!("boom"));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co2.resume(())));
    println!("panic caught: {}", r.is_err());
    struct D; impl Drop for D { fn drop(&mut self) { println!("dropped D"); } }
    let mut co3: Coroutine<(), (), ()> = Coroutine::new(|y, ()| { let _d = D; y.suspend(()); unreachable!() });
    co3.resume(());
    drop(co3);
    println!("{:?}", corio_context::stack::stats());
    let _: CoroutineResult<(),()> = CoroutineResult::Yield(());
}

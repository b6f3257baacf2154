//! Signal preemption (`TaskBuilder::preemptible`, `runtime/preempt.rs`): a preemptible
//! coroutine that never reaches a runtime operation is suspended by sysmon's SIGURG, and resumed
//! with every register as it was.
//!
//! No test times anything: each hog spins until what it waits for has happened, with a cap
//! that fails the test if the mechanism did not work.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod support;

use std::arch::asm;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::{EVENTUALLY, within};

const CAP: Duration = Duration::from_secs(20);

/// The limit for a churn test that must reach its floor of preemptions: only a hang (a dead or
/// blocked worker) reaches it. A preemption lands only while the coroutine is on a CPU, and
/// signals sent to a descheduled thread merge into one, so on a loaded machine the floor can
/// take minutes (4-15 preemptions a second were seen with 6 copies at once on 2 vCPUs, 400
/// alone).
const HANG: Duration = Duration::from_secs(300);

/// Whether a churn loop started at `start` goes on: until `wanted` preemptions or the cap,
/// but never short of `floor`, however long that takes (the cap bounds the test's time on a
/// quiet machine, not what it must prove).
fn churning(rt: &corio::Runtime, start: Instant, wanted: u64, floor: u64) -> bool {
    let n = rt.metrics().preemptions;
    n < floor || (n < wanted && start.elapsed() < CAP)
}

fn runtime(workers: usize) -> Arc<corio::Runtime> {
    Arc::new(
        corio::Runtime::builder()
            .workers(workers)
            .hog_report(false)
            .build()
            .unwrap(),
    )
}

/// A thread that requests preemptions of `rt`'s running coroutines without pause, from `start`
/// until it is dropped (which stops and joins it, however the test ends).
struct Preempter {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Preempter {
    fn start(rt: &Arc<corio::Runtime>) -> Preempter {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, rt) = (stop.clone(), rt.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(SeqCst) {
                rt.preempt_running_coroutines();
                std::hint::spin_loop();
            }
        });
        Preempter {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Preempter {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A preemptible builder.
fn preemptible() -> corio::Builder {
    // SAFETY: the test hogs hold no thread-local borrow, lock or guard while they spin.
    unsafe { corio::Builder::new().preemptible() }
}

/// Spins on `flag` without any call (the clock is read every 2^20 rounds, for the cap only).
fn spin_until(flag: &AtomicBool) -> bool {
    let start = Instant::now();
    loop {
        for _ in 0..1 << 20 {
            if flag.load(std::sync::atomic::Ordering::Relaxed) {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() > CAP {
            return false;
        }
    }
}

/// One worker: a preemptible coroutine spinning in a pure loop until another coroutine of the
/// same thread has run. Without preemption the other could never run (one thread, and the
/// spinner makes no runtime call), so the spinner would reach its cap.
#[test]
fn a_preemptible_hog_in_a_pure_loop_lets_the_other_coroutines_of_its_thread_run() {
    let rt = runtime(1);
    let r = rt.clone();
    within(EVENTUALLY, move || {
        let other_ran = r.run(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let f = flag.clone();
            let hog = preemptible().spawn(move || spin_until(&f)).unwrap();
            let f = flag.clone();
            // Spawned after the hog: it waits behind it in the same worker's queue.
            let other = corio::go(move || f.store(true, SeqCst));
            let ran = hog.join().unwrap();
            other.join().unwrap();
            ran
        });
        assert!(other_ran, "the other coroutine did not run within {CAP:?}");
        assert!(r.metrics().preemptions >= 1, "{:?}", r.metrics());
    });
}

/// The register-survival check: `rounds` of a loop that keeps known values in r8–r15, rbx, rsi
/// (a pointer), xmm0–xmm13, a non-default MXCSR (round toward zero) and x87 control word, and
/// π on the x87 stack, and compares them all every round; returns the rounds and the mismatches.
/// It stops when `*stop` becomes non-zero.
fn sse_register_loop(stop: &AtomicU64) -> (u64, u64) {
    let table: [[u64; 2]; 14] = std::array::from_fn(|i| {
        let i = i as u64;
        [0x0101_0101_0101_0101 * (i + 1), !(0x1111_1111 * (i + 3))]
    });
    // [0]: MXCSR/x87 control word scratch, [1]: the stop flag, [2]: the table (for rsi).
    let mut scratch = [0u64, stop.as_ptr() as u64, table.as_ptr() as u64];
    let rounds: u64;
    let errors: u64;
    // SAFETY: the asm reads `stop`, `table` and writes `scratch` through valid pointers; it
    // restores rbx, MXCSR, the x87 control word and stack before it ends, and declares every
    // other register it touches clobbered.
    unsafe {
        asm!(
            "push rbx",
            "mov dword ptr [rcx], 0x7f80",
            "ldmxcsr dword ptr [rcx]",
            "mov word ptr [rcx], 0x0f7f",
            "fldcw word ptr [rcx]",
            "fldpi",
            "movabs r8, 0x0808080808080808",
            "movabs r9, 0x0909090909090909",
            "movabs r10, 0x1010101010101010",
            "movabs r11, 0x1111111111111111",
            "movabs r12, 0x1212121212121212",
            "movabs r13, 0x1313131313131313",
            "movabs r14, 0x1414141414141414",
            "movabs r15, 0x1515151515151515",
            "movabs rbx, 0x0b0b0b0b0b0b0b0b",
            "movdqu xmm0, [rsi]",
            "movdqu xmm1, [rsi + 16]",
            "movdqu xmm2, [rsi + 32]",
            "movdqu xmm3, [rsi + 48]",
            "movdqu xmm4, [rsi + 64]",
            "movdqu xmm5, [rsi + 80]",
            "movdqu xmm6, [rsi + 96]",
            "movdqu xmm7, [rsi + 112]",
            "movdqu xmm8, [rsi + 128]",
            "movdqu xmm9, [rsi + 144]",
            "movdqu xmm10, [rsi + 160]",
            "movdqu xmm11, [rsi + 176]",
            "movdqu xmm12, [rsi + 192]",
            "movdqu xmm13, [rsi + 208]",
            "xor edx, edx",
            "xor edi, edi",
            "2:",
            "mov rax, qword ptr [rcx + 8]",
            "cmp qword ptr [rax], 0",
            "jne 3f",
            "inc rdi",
            // integers
            "movabs rax, 0x0808080808080808", "cmp r8, rax", "jne 4f",
            "movabs rax, 0x0909090909090909", "cmp r9, rax", "jne 4f",
            "movabs rax, 0x1010101010101010", "cmp r10, rax", "jne 4f",
            "movabs rax, 0x1111111111111111", "cmp r11, rax", "jne 4f",
            "movabs rax, 0x1212121212121212", "cmp r12, rax", "jne 4f",
            "movabs rax, 0x1313131313131313", "cmp r13, rax", "jne 4f",
            "movabs rax, 0x1414141414141414", "cmp r14, rax", "jne 4f",
            "movabs rax, 0x1515151515151515", "cmp r15, rax", "jne 4f",
            "movabs rax, 0x0b0b0b0b0b0b0b0b", "cmp rbx, rax", "jne 4f",
            "cmp rsi, [rcx + 16]", "jne 4f",
            // vectors
            "movdqu xmm15, [rsi]", "pcmpeqb xmm15, xmm0", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 16]", "pcmpeqb xmm15, xmm1", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 32]", "pcmpeqb xmm15, xmm2", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 48]", "pcmpeqb xmm15, xmm3", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 64]", "pcmpeqb xmm15, xmm4", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 80]", "pcmpeqb xmm15, xmm5", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 96]", "pcmpeqb xmm15, xmm6", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 112]", "pcmpeqb xmm15, xmm7", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 128]", "pcmpeqb xmm15, xmm8", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 144]", "pcmpeqb xmm15, xmm9", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 160]", "pcmpeqb xmm15, xmm10", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 176]", "pcmpeqb xmm15, xmm11", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 192]", "pcmpeqb xmm15, xmm12", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            "movdqu xmm15, [rsi + 208]", "pcmpeqb xmm15, xmm13", "pmovmskb eax, xmm15", "cmp eax, 0xffff", "jne 4f",
            // MXCSR control bits (the flag bits 0-5 may be set by nothing here either)
            "stmxcsr dword ptr [rcx]", "cmp dword ptr [rcx], 0x7f80", "jne 4f",
            // x87: control word, and π still on top of its stack
            "fnstcw word ptr [rcx]", "cmp word ptr [rcx], 0x0f7f", "jne 4f",
            "fldpi", "fcomip st, st(1)", "jne 4f",
            "jmp 2b",
            "4:",
            "inc rdx",
            "jmp 2b",
            "3:",
            "fstp st(0)",
            "mov word ptr [rcx], 0x037f",
            "fldcw word ptr [rcx]",
            "mov dword ptr [rcx], 0x1f80",
            "ldmxcsr dword ptr [rcx]",
            "pop rbx",
            in("rsi") table.as_ptr(),
            in("rcx") scratch.as_mut_ptr(),
            out("rdi") rounds,
            out("rdx") errors,
            out("rax") _,
            out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            out("r12") _, out("r13") _, out("r14") _, out("r15") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        );
    }
    (rounds, errors)
}

/// The same for the upper halves of ymm0–ymm13 (AVX).
#[target_feature(enable = "avx2")]
fn avx_register_loop(stop: &AtomicU64) -> (u64, u64) {
    let table: [[u64; 4]; 14] = std::array::from_fn(|i| {
        let i = i as u64;
        [i, !i, 0x5555_0000 + i, 0xaaaa_0000_0000 + i]
    });
    let rounds: u64;
    let errors: u64;
    // SAFETY: reads `stop` and `table` through valid pointers; every register it writes is
    // declared clobbered; AVX2 is enabled for this function and checked by the caller.
    unsafe {
        asm!(
            "vmovdqu ymm0, [rsi]",
            "vmovdqu ymm1, [rsi + 32]",
            "vmovdqu ymm2, [rsi + 64]",
            "vmovdqu ymm3, [rsi + 96]",
            "vmovdqu ymm4, [rsi + 128]",
            "vmovdqu ymm5, [rsi + 160]",
            "vmovdqu ymm6, [rsi + 192]",
            "vmovdqu ymm7, [rsi + 224]",
            "vmovdqu ymm8, [rsi + 256]",
            "vmovdqu ymm9, [rsi + 288]",
            "vmovdqu ymm10, [rsi + 320]",
            "vmovdqu ymm11, [rsi + 352]",
            "vmovdqu ymm12, [rsi + 384]",
            "vmovdqu ymm13, [rsi + 416]",
            "xor edx, edx",
            "xor edi, edi",
            "2:",
            "cmp qword ptr [rcx], 0",
            "jne 3f",
            "inc rdi",
            "vpcmpeqb ymm15, ymm0, [rsi]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm1, [rsi + 32]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm2, [rsi + 64]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm3, [rsi + 96]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm4, [rsi + 128]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm5, [rsi + 160]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm6, [rsi + 192]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm7, [rsi + 224]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm8, [rsi + 256]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm9, [rsi + 288]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm10, [rsi + 320]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm11, [rsi + 352]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm12, [rsi + 384]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "vpcmpeqb ymm15, ymm13, [rsi + 416]", "vpmovmskb eax, ymm15", "cmp eax, -1", "jne 4f",
            "jmp 2b",
            "4:",
            "inc rdx",
            "jmp 2b",
            "3:",
            "vzeroupper",
            in("rcx") stop.as_ptr(),
            in("rsi") table.as_ptr(),
            out("rdi") rounds,
            out("rdx") errors,
            out("rax") _,
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
            out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _,
            out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _,
            out("ymm12") _, out("ymm13") _, out("ymm14") _, out("ymm15") _,
        );
    }
    (rounds, errors)
}

/// Runs `hog` (a register loop) preemptible on one worker beside a coroutine that yields in a
/// loop and checks that it sees the default MXCSR, and has the test thread request preemptions
/// until the hog was preempted `WANTED` times. Returns the hog's rounds and mismatches, and
/// the other coroutine's MXCSR mismatches.
fn survive_preemptions(hog: fn(&AtomicU64) -> (u64, u64)) -> ((u64, u64), u64) {
    const WANTED: u64 = 3000;
    let rt = runtime(1);
    let stop = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (s, d) = (stop.clone(), done.clone());
    let r = rt.clone();
    let runner = std::thread::spawn(move || {
        r.run(move || {
            let hog = preemptible().spawn(move || hog(&s)).unwrap();
            let other = corio::go(move || {
                let mut wrong = 0u64;
                while !d.load(SeqCst) {
                    let mut csr = 0u32;
                    // SAFETY: stores MXCSR into a local.
                    unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr) };
                    wrong += u64::from(csr & !0x3f != 0x1f80);
                    corio::yield_now();
                }
                wrong
            });
            let result = hog.join().unwrap();
            done.store(true, SeqCst);
            (result, other.join().unwrap())
        })
    });
    let start = Instant::now();
    while rt.metrics().preemptions < WANTED && start.elapsed() < Duration::from_secs(120) {
        rt.preempt_running_coroutines();
        std::thread::sleep(Duration::from_micros(200));
    }
    stop.store(1, SeqCst);
    let result = runner.join().unwrap();
    let preemptions = rt.metrics().preemptions;
    assert!(
        preemptions >= WANTED,
        "only {preemptions} preemptions: {:?}",
        rt.metrics()
    );
    result
}

/// Thousands of preemptions in the middle of a loop that keeps values in the integer, SSE,
/// MXCSR and x87 registers: every round finds them intact, and the coroutine that runs while
/// the hog is suspended sees the default MXCSR, not the hog's.
#[test]
fn integer_sse_mxcsr_and_x87_registers_survive_thousands_of_preemptions() {
    within(Duration::from_secs(180), || {
        let ((rounds, errors), other_wrong) = survive_preemptions(sse_register_loop);
        assert!(rounds > 0);
        assert_eq!(
            errors, 0,
            "{errors} of {rounds} rounds found a register changed"
        );
        assert_eq!(
            other_wrong, 0,
            "the other coroutine ran with the hog's MXCSR"
        );
    });
}

/// The same for the AVX upper halves, where the CPU has AVX2.
#[test]
fn avx_registers_survive_thousands_of_preemptions() {
    if !std::arch::is_x86_feature_detected!("avx2") {
        eprintln!("no AVX2 on this CPU: nothing to check");
        return;
    }
    within(Duration::from_secs(180), || {
        // SAFETY: AVX2 is available (checked above).
        let ((rounds, errors), _) = survive_preemptions(|stop| unsafe { avx_register_loop(stop) });
        assert!(rounds > 0);
        assert_eq!(
            errors, 0,
            "{errors} of {rounds} rounds found a ymm register changed"
        );
    });
}

/// A hog inside libc (a 300 ms `nanosleep`, then a 128 MiB `memcpy`) is signalled but not
/// preempted there; back in its own loop it is.
#[test]
fn a_hog_inside_libc_is_not_preempted_there() {
    let rt = runtime(1);
    let r = rt.clone();
    within(EVENTUALLY, move || {
        let r2 = r.clone();
        let (during_sleep, during_copy, after) = r.run(move || {
            let metrics = move || r2.metrics();
            preemptible()
                .spawn(move || {
                    let m0 = metrics();
                    let mut ts = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 300_000_000,
                    };
                    // SAFETY: nanosleep with valid pointers; EINTR leaves the remainder in `ts`.
                    while unsafe { libc::nanosleep(&ts, &mut ts) } != 0 {}
                    let m1 = metrics();
                    let src = vec![1u8; 128 << 20];
                    let mut dst = vec![0u8; 128 << 20];
                    let m2 = metrics();
                    // SAFETY: two distinct buffers of the same length.
                    unsafe {
                        libc::memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.len())
                    };
                    let m3 = metrics();
                    assert_eq!(dst[dst.len() - 1], 1);
                    // Now a pure loop: preempted.
                    let start = Instant::now();
                    while metrics().preemptions == m3.preemptions && start.elapsed() < CAP {
                        for _ in 0..1 << 16 {
                            std::hint::spin_loop();
                        }
                    }
                    (
                        (
                            m1.preempt_signals - m0.preempt_signals,
                            m1.preemptions - m0.preemptions,
                        ),
                        (
                            m3.preempt_signals - m2.preempt_signals,
                            m3.preemptions - m2.preemptions,
                        ),
                        metrics().preemptions - m3.preemptions,
                    )
                })
                .unwrap()
                .join()
                .unwrap()
        });
        let (signals, preempted) = during_sleep;
        assert!(signals >= 1, "sysmon did not signal the sleeping hog");
        // Sysmon signals the sleeping hog again and again (every retry interrupts `nanosleep`
        // with EINTR). A handler that ignored the libc exclusion would preempt it at nearly
        // every signal. The hog's own code between two calls (the retry loop, the `metrics()`
        // that ends the phase) is ordinary code: a retry that lands there — the thread was
        // descheduled just after an EINTR return, say — may preempt it, once in a while (seen
        // once in a loaded run of the whole suite).
        assert!(
            preempted == 0 || (preempted == 1 && signals >= 4),
            "preempted {preempted} times by {signals} signals, inside nanosleep"
        );
        // The same for the copy: the `metrics()` after `memcpy` returns is ordinary code, and a
        // retry may land there (seen once in a full-suite loop beside another).
        let (signals, preempted) = during_copy;
        assert!(
            preempted == 0 || (preempted == 1 && signals >= 4),
            "preempted {preempted} times by {signals} signals, inside memcpy"
        );
        assert!(
            after >= 1,
            "not preempted in its own loop after the libc calls"
        );
    });
}

/// A coroutine not marked preemptible is never signalled, even on a runtime where a
/// preemptible hog was just preempted (so sysmon's signalling works there). (The hog's own
/// phase may count a stray: sysmon's look at the running coroutine and its signal's arrival
/// are not one step, so a signal meant for the hog can arrive just after it suspended.)
#[test]
fn a_coroutine_not_marked_preemptible_is_never_signalled() {
    let rt = runtime(1);
    let r = rt.clone();
    within(EVENTUALLY, move || {
        let r2 = r.clone();
        let (before, after) = r.run(move || {
            let flag = Arc::new(AtomicBool::new(false));
            let f = flag.clone();
            let hog = preemptible().spawn(move || spin_until(&f)).unwrap();
            corio::go(move || flag.store(true, SeqCst)).join().unwrap();
            assert!(hog.join().unwrap());
            // A second signal sysmon decided on while the hog still ran may land after the
            // hog is gone (a stray, which the handler ignores): let it land before the count
            // starts (the worker parks, so a pending signal is delivered).
            corio::sleep(Duration::from_millis(20));
            let before = r2.metrics();
            // 300 ms of a pure loop, 30 time slices, not preemptible.
            corio::go(|| {
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(300) {
                    std::hint::spin_loop();
                }
            })
            .join()
            .unwrap();
            (before, r2.metrics())
        });
        assert!(before.preemptions >= 1);
        assert_eq!(
            after.preempt_signals, before.preempt_signals,
            "{before:?} {after:?}"
        );
        assert_eq!(after.preemptions, before.preemptions);
        assert_eq!(
            after.preempt_signals_stray, before.preempt_signals_stray,
            "{before:?} {after:?}"
        );
    });
}

const CHILD: &str = "CORIO_TEST_SIGURG_CHILD";

static USER_SIGURGS: AtomicU64 = AtomicU64::new(0);

extern "C" fn user_handler(_: libc::c_int) {
    USER_SIGURGS.fetch_add(1, SeqCst);
}

/// Runs the test `name` of this binary in a child process (its `CHILD` half), checks that it
/// succeeded, and returns its stdout and stderr.
fn run_child(name: &str) -> (String, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// Installs [`user_handler`] for SIGURG (process-wide: child processes only).
fn install_user_handler() {
    // SAFETY: installs a handler that only increments an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = user_handler as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut()),
            0
        );
    }
}

/// A preemptible hog on `rt`'s one worker is preempted, so that another coroutine runs.
fn assert_preemption_works(rt: &corio::Runtime) {
    let ran = rt.run(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let hog = preemptible().spawn(move || spin_until(&f)).unwrap();
        corio::go(move || flag.store(true, SeqCst)).join().unwrap();
        hog.join().unwrap()
    });
    assert!(ran && rt.metrics().preemptions >= 1, "{:?}", rt.metrics());
}

/// The child: installs its own SIGURG handler, then runs a preemptible hog until it is
/// preempted, then sends itself SIGURG three times (the process, so any thread — a worker
/// included — may take it) and checks that its handler saw each.
fn sigurg_child() {
    install_user_handler();
    let rt = runtime(1);
    assert_preemption_works(&rt);
    for n in 1..=3 {
        // SAFETY: kill to our own process.
        unsafe { libc::kill(libc::getpid(), libc::SIGURG) };
        let start = Instant::now();
        while USER_SIGURGS.load(SeqCst) < n && start.elapsed() < CAP {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            USER_SIGURGS.load(SeqCst),
            n,
            "signal {n} did not reach the user's handler"
        );
    }
    println!("child: user handler got 3 of 3");
}

/// A program that installed its own SIGURG handler before the runtime started keeps receiving
/// its signals, while preemption works (in a child process: the handler is process-wide).
#[test]
#[cfg_attr(miri, ignore)]
fn a_programs_own_sigurg_handler_keeps_receiving_its_signals() {
    if std::env::var(CHILD).is_ok() {
        sigurg_child();
        return;
    }
    let (stdout, stderr) = run_child("a_programs_own_sigurg_handler_keeps_receiving_its_signals");
    assert!(
        stdout.contains("user handler got 3 of 3"),
        "{stdout}\n{stderr}"
    );
}

/// Counts its drops (a hog's destructor ran).
struct Dropped(Arc<AtomicU64>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Dropping a runtime while its preemptible hogs take turns on its one worker — one running,
/// the other suspended inside the trampoline — returns. Shutdown cannot unwind a coroutine
/// suspended there (an unwind from an interrupted instruction, not a call, has no landing pad:
/// it would abort), and a hog that never reaches an ordinary suspension never takes the
/// cancellation, so after the shutdown grace period it is leaked, as a coroutine that blocks
/// at shutdown is: its destructors do not run. (Before the fix the drop never returned: the
/// shutting-down worker resumed the hogs in turn for ever, each preempted again by sysmon.)
#[test]
fn dropping_the_runtime_while_preemptible_hogs_are_suspended_in_the_trampoline_returns() {
    let stop = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicU64::new(0));
    let (st, dr) = (stop.clone(), dropped.clone());
    within(EVENTUALLY, move || {
        let rt = runtime(1);
        let _entered = rt.enter();
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let (st, guard) = (st.clone(), Dropped(dr.clone()));
                preemptible()
                    .spawn(move || {
                        let _guard = guard;
                        while !st.load(std::sync::atomic::Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                    .unwrap()
            })
            .collect();
        // Both have been preempted: each has been suspended inside the trampoline.
        let start = Instant::now();
        while rt.metrics().preemptions < 4 {
            assert!(start.elapsed() < CAP, "no preemptions: {:?}", rt.metrics());
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(hogs);
        drop(_entered);
        drop(rt);
    });
    // Leaked, not unwound: their stacks are never freed, and nothing resumes them (their
    // worker thread has exited).
    assert_eq!(dropped.load(SeqCst), 0);
    stop.store(true, SeqCst);
}

/// The child: preemption works, then the program installs its own SIGURG handler over
/// corio's while a preemptible hog runs; the hog is then left to spin for 100 ms more.
fn replaced_handler_child() {
    let rt = runtime(1);
    assert_preemption_works(&rt);
    install_user_handler();
    let _entered = rt.enter();
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let hog = preemptible().spawn(move || spin_until(&f)).unwrap();
    let start = Instant::now();
    while USER_SIGURGS.load(SeqCst) < 1 && start.elapsed() < CAP {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Time for a hundred more of sysmon's signals if it kept sending them.
    std::thread::sleep(Duration::from_millis(100));
    flag.store(true, SeqCst);
    assert!(corio::block_on(hog).unwrap());
    println!("child: user handler got {}", USER_SIGURGS.load(SeqCst));
}

/// A SIGURG handler installed after the runtime's replaces it: sysmon notices that its signals
/// go untaken, stops sending them (the program's handler gets one of them, not one a
/// millisecond for as long as a preemptible coroutine runs) and says so once on stderr (in a
/// child process: the handler is process-wide).
#[test]
#[cfg_attr(miri, ignore)]
fn a_sigurg_handler_installed_after_the_runtime_turns_preemption_off_with_a_message() {
    const NAME: &str =
        "a_sigurg_handler_installed_after_the_runtime_turns_preemption_off_with_a_message";
    if std::env::var(CHILD).is_ok() {
        replaced_handler_child();
        return;
    }
    let (stdout, stderr) = run_child(NAME);
    assert!(
        stdout.contains("user handler got 1\n"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        stderr.matches("signal preemption is off").count(),
        1,
        "{stdout}\n{stderr}"
    );
}

/// corio's channel and mutex operations on a preemptible coroutine, preempted wherever the
/// handler allows (in its own code between operations, and in whatever corio code runs outside
/// the no-preempt counter), beside an ordinary coroutine of the same worker: the two hand a
/// value back and forth over a bounded(1) channel (`try_send`/`try_recv`, which take the
/// channel's spin lock outside `block_on`) and an unbounded one, and take a corio `Mutex`
/// every round, while the test thread requests preemptions every ~20 µs, until 200
/// preemptions happened. A runtime structure left half-updated shows as a wrong value; a lock
/// held across a preemption hangs the ordinary coroutine, which spins on it and is never
/// preempted (one thread): with the channel lock's guard (`preempt::hold`) removed it does.
#[test]
fn channels_and_a_mutex_shared_with_an_ordinary_coroutine_survive_continuous_preemption() {
    const WANTED: u64 = 200;
    let rt = runtime(1);
    let r = rt.clone();
    within(HANG, move || {
        let done = Arc::new(AtomicBool::new(false));
        let (d, r2) = (done.clone(), r.clone());
        let preempter = std::thread::spawn(move || {
            while !d.load(SeqCst) {
                r2.preempt_running_coroutines();
                std::thread::sleep(Duration::from_micros(20));
            }
        });
        let r3 = r.clone();
        let (rounds, locked) = r.run(move || {
            let (tx, rx) = corio::chan::bounded::<u64>(1);
            let (back_tx, back_rx) = corio::chan::unbounded::<u64>();
            let lock = Arc::new(corio::sync::Mutex::new(0u64));
            let l = lock.clone();
            let a = preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let mut i = 0;
                    while churning(&r3, start, WANTED, WANTED) {
                        // The `try_` forms take the channel's spin lock outside `block_on`.
                        let mut v = i;
                        while let Err(e) = tx.try_send(v) {
                            v = e.into_inner();
                            corio::yield_now();
                        }
                        assert_eq!(back_rx.recv().unwrap(), i * 3);
                        *l.lock() += 1;
                        i += 1;
                    }
                    i
                })
                .unwrap();
            let b = corio::Builder::new()
                .spawn(move || {
                    loop {
                        let v = match rx.try_recv() {
                            Ok(v) => v,
                            Err(corio::chan::TryRecvError::Empty) => {
                                corio::yield_now();
                                continue;
                            }
                            Err(corio::chan::TryRecvError::Disconnected) => return lock,
                        };
                        back_tx.send(v * 3).unwrap();
                        *lock.lock() += 1;
                    }
                })
                .unwrap();
            let rounds = a.join().unwrap();
            let locked = *b.join().unwrap().lock();
            (rounds, locked)
        });
        done.store(true, SeqCst);
        preempter.join().unwrap();
        let m = r.metrics();
        assert!(m.preemptions >= WANTED, "{m:?}");
        assert_eq!(locked, 2 * rounds);
    });
}

/// One worker: two preemptible coroutines yield to each other (direct switches, which make the
/// arriving one the thread's preemptible coroutine as its poll would: `enter_direct`), then one
/// of them, reached by such a switch, wakes a waiter on the same thread and spins until the
/// waiter has run, which it can only do if the spinner is preempted (the other keeps yielding
/// meanwhile: suspended in `yield_now`, it refuses preemption). Several yield counts, so that
/// the spinner is reached by a direct switch both in its own poll frame and in its partner's.
///
/// The waiter was a sleeper of 1 ms: on a loaded machine its timer could fire before the pair
/// began, the partner then never yielded, and no direct switch happened ("no direct switch",
/// seen once in a full-suite loop beside another). Woken by the spinner, it cannot run before
/// the spin.
#[test]
fn a_preemptible_coroutine_reached_by_direct_switches_is_still_preempted() {
    let rt = runtime(1);
    for yields in 3..=8u32 {
        let r = rt.clone();
        within(EVENTUALLY, move || {
            let (switches, preemptions) = (r.metrics().direct_switches, r.metrics().preemptions);
            let ran = r.run(move || {
                let flag = Arc::new(AtomicBool::new(false));
                let f = flag.clone();
                let (wake, woken) = corio::chan::unbounded::<()>();
                let waiter = corio::go(move || {
                    woken.recv().unwrap();
                    f.store(true, SeqCst);
                });
                // The waiter waits on its channel before the pair starts.
                corio::yield_now();
                // The partner yields until the waiter has run: the spinner's turns start with
                // a direct switch from it.
                let f = flag.clone();
                let a = preemptible()
                    .spawn(move || {
                        while !f.load(SeqCst) {
                            corio::yield_now();
                        }
                    })
                    .unwrap();
                let f = flag.clone();
                let b = preemptible()
                    .spawn(move || {
                        for _ in 0..yields {
                            corio::yield_now();
                        }
                        wake.send(()).unwrap();
                        spin_until(&f)
                    })
                    .unwrap();
                a.join().unwrap();
                let ran = b.join().unwrap();
                waiter.join().unwrap();
                ran
            });
            assert!(
                ran,
                "{yields} yields: the spinner was not preempted within {CAP:?}"
            );
            assert!(
                r.metrics().direct_switches > switches,
                "{yields} yields: no direct switch"
            );
            assert!(
                r.metrics().preemptions > preemptions,
                "{yields} yields: the waiter ran without a preemption of the spinner"
            );
        });
    }
}

/// One worker: a preemptible coroutine runs `corio::scope` over and over, each with a child
/// (every other one preemptible) that it does not join, while the test thread requests
/// preemptions without pause. `scope`'s wait finds the child running, publishes its waker
/// under a std mutex and suspends; the child, ending on the same thread, takes the waker from
/// under that mutex (and leaves its value under another one, which a join takes): corio's code
/// on a coroutine's stack, which must not be preempted ("The rule", `runtime/preempt.rs`). A
/// coroutine preempted while holding one of them leaves the other side blocked on it for ever,
/// and with it the only worker: before the wait and the child's end raised the no-preempt
/// counter, this hung (the worker in `ChildGuard::drop`, waiting for the lock the preempted
/// wait held).
#[test]
fn scopes_of_preemptible_coroutines_survive_continuous_preemption() {
    const WANTED: u64 = 300;
    let rt = runtime(1);
    let r = rt.clone();
    // However the test ends, the preempter stops (a hang is reported by `within`).
    let preempter = Preempter::start(&rt);
    let (scopes, sum) = within(HANG, move || {
        let r3 = r.clone();
        r.run(move || {
            preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let (mut scopes, mut sum) = (0u64, 0u64);
                    while churning(&r3, start, WANTED, WANTED) {
                        let mut theirs = 0u64;
                        corio::scope(|s| {
                            let child = || theirs = std::hint::black_box(scopes) + 1;
                            if scopes % 2 == 0 {
                                drop(s.go(child));
                            } else {
                                drop(s.go_with(preemptible(), child).unwrap());
                            }
                        });
                        assert_eq!(theirs, scopes + 1);
                        sum += theirs;
                        scopes += 1;
                    }
                    (scopes, sum)
                })
                .unwrap()
                .join()
                .unwrap()
        })
    });
    drop(preempter);
    assert_eq!(sum, scopes * (scopes + 1) / 2);
    let m = rt.metrics();
    assert!(m.preemptions >= WANTED, "{m:?}");
}

/// One worker: a preemptible coroutine keeps a registered `Sleep` and resets it in a loop
/// (`Sleep::reset` cancels the timer under its worker's timer-heap lock, in the coroutine's own
/// code, outside any `block_on`), while an ordinary coroutine of the same worker sleeps over and
/// over (each sleep registers a timer under the same lock), and the test thread requests
/// preemptions without pause. A coroutine preempted while it holds the heap's std mutex leaves
/// the sleeper, which runs next on the same thread, blocked on it for ever, and with it the
/// only worker ("The rule", `runtime/preempt.rs`: corio's code on a coroutine's stack is never
/// preempted).
#[test]
fn resetting_a_sleep_in_a_preemptible_coroutine_survives_continuous_preemption() {
    const WANTED: u64 = 300;
    let rt = runtime(1);
    let r = rt.clone();
    // However the test ends, the preempter stops (a hang is reported by `within`).
    let preempter = Preempter::start(&rt);
    let (resets, sleeps) = within(HANG, move || {
        let r3 = r.clone();
        r.run(move || {
            let finished = Arc::new(AtomicBool::new(false));
            let f = finished.clone();
            let sleeper = corio::go(move || {
                let mut sleeps = 0u64;
                while !f.load(SeqCst) {
                    corio::sleep(Duration::from_micros(1));
                    sleeps += 1;
                }
                sleeps
            });
            let resetter = preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let far = Duration::from_secs(3600);
                    let mut sleep = corio::time::sleep_async(far);
                    let mut resets = 0u64;
                    while churning(&r3, start, WANTED, WANTED) {
                        // Registers the timer (inside `block_on`), then cancels it (outside).
                        corio::block_on(std::future::poll_fn(|cx| {
                            let _ = std::pin::Pin::new(&mut sleep).poll(cx);
                            std::task::Poll::Ready(())
                        }));
                        sleep.reset(Instant::now() + far);
                        resets += 1;
                    }
                    resets
                })
                .unwrap();
            let resets = resetter.join().unwrap();
            finished.store(true, SeqCst);
            (resets, sleeper.join().unwrap())
        })
    });
    drop(preempter);
    assert!(resets > 0 && sleeps > 0, "{resets} resets, {sleeps} sleeps");
    let m = rt.metrics();
    assert!(m.preemptions >= WANTED, "{m:?}");
}

/// One worker: a preemptible coroutine and an ordinary one each make a UDP socket, wait on it
/// once (1 µs read timeout: the wait registers it with the netpoller) and drop it, over and
/// over, while the test thread requests preemptions without pause. Registering and dropping
/// a socket take the netpoller's pool lock in the coroutine's own code (the drop outside any
/// `block_on`): a coroutine preempted while it holds it leaves the other, on the same thread,
/// blocked on it for ever, and with it the only worker ("The rule", `runtime/preempt.rs`).
#[test]
fn sockets_made_and_dropped_by_a_preemptible_coroutine_survive_continuous_preemption() {
    // Most signals land in the system calls (excluded): 62-88 preemptions in 20 s were seen
    // on a quiet 2-vCPU machine, so the churn runs to WANTED or the cap, and asserts AT_LEAST.
    const WANTED: u64 = 100;
    const AT_LEAST: u64 = 20;
    let rt = runtime(1);
    let r = rt.clone();
    // However the test ends, the preempter stops (a hang is reported by `within`).
    let preempter = Preempter::start(&rt);
    /// One socket's life: made, registered by a wait that times out, dropped.
    fn churn() -> u64 {
        let socket = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_micros(1)))
            .unwrap();
        let mut buf = [0u8; 8];
        assert!(socket.recv_from(&mut buf).is_err(), "nobody sends");
        1
    }
    let (mine, theirs) = within(HANG, move || {
        let r3 = r.clone();
        r.run(move || {
            let finished = Arc::new(AtomicBool::new(false));
            let f = finished.clone();
            let other = corio::go(move || {
                let mut n = 0;
                while !f.load(SeqCst) {
                    n += churn();
                }
                n
            });
            let churner = preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let mut n = 0;
                    while churning(&r3, start, WANTED, AT_LEAST) {
                        n += churn();
                    }
                    n
                })
                .unwrap();
            let mine = churner.join().unwrap();
            finished.store(true, SeqCst);
            (mine, other.join().unwrap())
        })
    });
    drop(preempter);
    assert!(mine > 0 && theirs > 0, "{mine} and {theirs} sockets");
    let m = rt.metrics();
    assert!(m.preemptions >= AT_LEAST, "{m:?}");
}

/// One worker: a preemptible coroutine starts a coroutine that waits on a channel, lets it
/// start, and aborts it, over and over, while the test thread requests preemptions without
/// pause. `JoinHandle::abort` queues the idle victim on its worker from the coroutine's own
/// code (`WorkerCtx::schedule_local`, which borrows the worker's core): a coroutine preempted
/// while it holds that borrow comes back to the worker's loop, which borrows the core again
/// and panics ("RefCell already borrowed"), killing the worker ("The rule",
/// `runtime/preempt.rs`: corio's code on a coroutine's stack is never preempted).
#[test]
fn aborts_from_a_preemptible_coroutine_survive_continuous_preemption() {
    // Runs until this many preemptions (a dead worker shows well before: it died after 160 in
    // one run), and needs a few hundred however slow the machine (the cap ends it first).
    const WANTED: u64 = 2_000;
    const AT_LEAST: u64 = 300;
    let rt = runtime(1);
    let r = rt.clone();
    // However the test ends, the preempter stops (a hang is reported by `within`).
    let preempter = Preempter::start(&rt);
    let aborted = within(HANG, move || {
        let r3 = r.clone();
        r.run(move || {
            preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let mut aborted = 0u64;
                    while churning(&r3, start, WANTED, AT_LEAST) {
                        let (tx, rx) = corio::chan::bounded::<u8>(0);
                        let victim = corio::go(move || {
                            let _ = rx.recv();
                        });
                        // The victim starts and waits: the abort finds it idle and queues it.
                        corio::yield_now();
                        victim.abort();
                        if victim.join().is_err_and(|e| e.is_cancelled()) {
                            aborted += 1;
                        }
                        drop(tx);
                    }
                    aborted
                })
                .unwrap()
                .join()
                .unwrap()
        })
    });
    drop(preempter);
    assert!(aborted > 0, "no victim was cancelled");
    let m = rt.metrics();
    assert!(m.preemptions >= AT_LEAST, "{m:?}");
}

/// One worker: a preemptible coroutine fills a `JoinSet` with short coroutines and collects
/// their results by polling `try_join_next` in a loop (so that they run only when it is
/// preempted), while the test thread requests preemptions without pause. `try_join_next` takes
/// the set's std mutex in the coroutine's own code; a finishing member wakes the set under the
/// same mutex, on the worker's stack: a coroutine preempted while it holds the mutex leaves
/// the worker blocked on it for ever ("The rule", `runtime/preempt.rs`).
#[test]
fn a_join_set_polled_by_a_preemptible_coroutine_survives_continuous_preemption() {
    const WANTED: u64 = 300;
    let rt = runtime(1);
    let r = rt.clone();
    // However the test ends, the preempter stops (a hang is reported by `within`).
    let preempter = Preempter::start(&rt);
    let (sets, sum) = within(HANG, move || {
        let r3 = r.clone();
        r.run(move || {
            preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let (mut sets, mut sum) = (0u64, 0u64);
                    while churning(&r3, start, WANTED, WANTED) {
                        let mut set = corio::JoinSet::new();
                        for k in 0..4u64 {
                            set.go(move || k);
                        }
                        let mut got = 0;
                        while got < 4 {
                            if let Some(result) = set.try_join_next() {
                                sum += result.unwrap();
                                got += 1;
                            }
                        }
                        sets += 1;
                    }
                    (sets, sum)
                })
                .unwrap()
                .join()
                .unwrap()
        })
    });
    drop(preempter);
    assert_eq!(sum, sets * 6);
    let m = rt.metrics();
    assert!(m.preemptions >= WANTED, "{m:?}");
}

/// One worker: a preemptible coroutine calls `corio::blocking` in a loop while the test thread
/// requests preemptions without pause. Entering the blocking section flushes the worker's
/// slots under a borrow of its core (and takes its inbox's lock) in the coroutine's own code:
/// a coroutine preempted there comes back to the worker's loop, which borrows the core again
/// and panics, killing the worker ("The rule", `runtime/preempt.rs`).
#[test]
fn blocking_sections_of_a_preemptible_coroutine_survive_continuous_preemption() {
    const WANTED: u64 = 2_000;
    const AT_LEAST: u64 = 300;
    let rt = runtime(1);
    let r = rt.clone();
    // However the test ends, the preempter stops (a hang is reported by `within`).
    let preempter = Preempter::start(&rt);
    let sections = within(HANG, move || {
        let r3 = r.clone();
        r.run(move || {
            preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let mut sections = 0u64;
                    while churning(&r3, start, WANTED, AT_LEAST) {
                        sections += corio::blocking(|| std::hint::black_box(1u64));
                    }
                    sections
                })
                .unwrap()
                .join()
                .unwrap()
        })
    });
    drop(preempter);
    assert!(sections > 0);
    let m = rt.metrics();
    assert!(m.preemptions >= AT_LEAST, "{m:?}");
}

/// One worker: a preemptible coroutine makes and runs bare `corio::coroutine::Coroutine`s in a
/// loop while an ordinary coroutine spawns short coroutines, and the test thread requests
/// preemptions without pause. A bare coroutine's stack comes from, and goes back to, the
/// thread's stack cache (`corio_context::stack::pool`, a thread-local `RefCell`) in the
/// preemptible coroutine's own code; preempted while it holds the borrow, it lets the worker
/// start a task's coroutine, whose stack comes from the same cache: the borrow panicked
/// ("RefCell already mutably borrowed", `stack/pool.rs`) and the worker died. The stack
/// functions now count themselves as critical (`corio_context::critical`), and the handler
/// does not preempt inside them.
#[test]
fn bare_coroutines_made_by_a_preemptible_coroutine_survive_continuous_preemption() {
    const WANTED: u64 = 2_000;
    const AT_LEAST: u64 = 300;
    let rt = runtime(1);
    let r = rt.clone();
    // However the test ends, the preempter stops (a hang is reported by `within`).
    let preempter = Preempter::start(&rt);
    let (made, spawned) = within(HANG, move || {
        let r3 = r.clone();
        r.run(move || {
            let finished = Arc::new(AtomicBool::new(false));
            let f = finished.clone();
            let spawner = corio::go(move || {
                let mut n = 0u64;
                while !f.load(SeqCst) {
                    n += corio::go(|| 1u64).join().unwrap();
                }
                n
            });
            let maker = preemptible()
                .spawn(move || {
                    let start = Instant::now();
                    let mut n = 0u64;
                    while churning(&r3, start, WANTED, AT_LEAST) {
                        let mut co = corio::coroutine::Coroutine::<(), (), u64>::new(|_, ()| 1);
                        n += co.resume(()).as_return().unwrap();
                    }
                    n
                })
                .unwrap();
            let made = maker.join().unwrap();
            finished.store(true, SeqCst);
            (made, spawner.join().unwrap())
        })
    });
    drop(preempter);
    assert!(
        made > 0 && spawned > 0,
        "{made} bare coroutines, {spawned} spawned"
    );
    let m = rt.metrics();
    assert!(m.preemptions >= AT_LEAST, "{m:?}");
}

/// `Runtime::enter` on preemptible coroutines: the thread's list of entered runtimes is a
/// `RefCell`, borrowed mutably for a moment by every `enter` and every guard's drop. A
/// coroutine preempted inside that borrow left it held while the next coroutine of its thread
/// ran, and that one's `enter` panicked ("already borrowed").
#[test]
#[cfg_attr(miri, ignore)]
fn runtimes_entered_by_preemptible_coroutines_survive_continuous_preemption() {
    const WANTED: u64 = 200;
    let rt = runtime(1);
    let other = Arc::new(corio::Runtime::builder().workers(1).build().unwrap());
    let r = rt.clone();
    let preempter = Preempter::start(&rt);
    let entered = within(HANG, move || {
        let r2 = r.clone();
        r2.run(move || {
            let sides: Vec<_> = (0..2)
                .map(|_| {
                    let (r3, other) = (r.clone(), other.clone());
                    preemptible()
                        .spawn(move || {
                            let start = Instant::now();
                            let mut entered = 0u64;
                            while churning(&r3, start, WANTED, 20) {
                                let guard = other.enter();
                                std::hint::black_box(&guard);
                                drop(guard);
                                entered += 1;
                            }
                            entered
                        })
                        .unwrap()
                })
                .collect();
            sides.into_iter().map(|s| s.join().unwrap()).sum::<u64>()
        })
    });
    drop(preempter);
    assert!(entered > 0);
    let preemptions = rt.metrics().preemptions;
    assert!(
        preemptions >= 20,
        "only {preemptions} preemptions in {CAP:?}: the test proved nothing"
    );
}

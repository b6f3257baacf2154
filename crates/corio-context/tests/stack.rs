//! The stack arena: guards, mappings, memory given back. Cases that count process-wide
//! resources (mappings, RSS) run in a child process so other tests cannot disturb them.

mod common;

use common::{child_case, run_in_child, stderr};
use corio_context::coroutine::{Builder, Coroutine, CoroutineResult, Yielder};
use corio_context::stack::{self, GuardKind};

fn maps() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn kernel_at_least(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

#[test]
fn guard_install_is_used_where_the_kernel_has_it() {
    let mut co: Coroutine<(), (), ()> = Coroutine::new(|_, ()| {});
    co.resume(());
    if kernel_at_least(6, 13) {
        assert_eq!(stack::guard_kind(), GuardKind::GuardInstall);
    } else {
        assert_eq!(stack::guard_kind(), GuardKind::Mprotect);
    }
}

#[test]
fn ten_thousand_suspended_coroutines_add_few_mappings() {
    if child_case("ten_thousand_suspended_coroutines_add_few_mappings") {
        if stack::guard_kind() != GuardKind::GuardInstall {
            return; // with mprotect guards every stack costs two mappings; nothing to check
        }
        let before = maps();
        let cos: Vec<Coroutine<(), (), ()>> = (0..10_000)
            .map(|_| {
                let mut co = Coroutine::new(|y: &Yielder<(), ()>, ()| y.suspend(()));
                assert!(co.resume(()).is_yield());
                co
            })
            .collect();
        let added = maps() - before;
        assert!(added <= 16, "10,000 stacks added {added} mappings");
        drop(cos);
        return;
    }
    let out = run_in_child("ten_thousand_suspended_coroutines_add_few_mappings", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn mprotect_guards_stop_at_max_map_count_with_an_error_naming_it() {
    if child_case("mprotect_guards_stop_at_max_map_count_with_an_error_naming_it") {
        assert_eq!(stack::guard_kind(), GuardKind::Mprotect);
        let max: usize = std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut live = Vec::new();
        let err = loop {
            match Builder::new()
                .stack_size(16 << 10)
                .build::<(), (), (), _>(|_, ()| {})
            {
                Ok(co) => live.push(co),
                Err(e) => break e,
            }
            assert!(live.len() <= max, "no error after {} stacks", live.len());
        };
        let msg = err.to_string();
        assert!(msg.contains("vm.max_map_count"), "{msg}");
        assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
        // The budget leaves room for the rest of the process: mapping more still works.
        assert!(maps() < max, "{} mappings", maps());
        let v = vec![0u8; 64 << 20]; // a large allocation is its own mapping
        assert_eq!(v.len(), 64 << 20);
        // Stacks that exist keep working, and a freed one can be reused.
        let mut co = live.pop().unwrap();
        assert_eq!(co.resume(()), CoroutineResult::Return(()));
        drop(co);
        let mut again = Builder::new()
            .stack_size(16 << 10)
            .build::<(), (), (), _>(|_, ()| {})
            .unwrap();
        assert!(again.resume(()).is_return());
        eprintln!("mprotect guards ran out after {} stacks", live.len() + 1);
        return;
    }
    let out = run_in_child(
        "mprotect_guards_stop_at_max_map_count_with_an_error_naming_it",
        &[("CORIO_STACK_GUARD", "mprotect")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[inline(never)]
fn touch_stack(bytes: usize) -> u8 {
    // Touch `bytes` of stack in 4 KiB frames so every page below the top is committed.
    if bytes < 4096 {
        return 0;
    }
    let mut frame = [1u8; 4000];
    std::hint::black_box(&mut frame);
    frame[0].wrapping_add(touch_stack(bytes - 4096))
}

#[test]
fn trimming_the_cache_gives_deep_stacks_memory_back() {
    if child_case("trimming_the_cache_gives_deep_stacks_memory_back") {
        const N: usize = 48; // fewer than a thread cache holds, so all stay cached and warm
        const DEPTH: usize = 1 << 20;
        let base = rss_bytes();
        let mut cos: Vec<Coroutine<(), (), u8>> = (0..N)
            .map(|_| {
                Builder::new()
                    .stack_size(2 << 20)
                    .build(|_, ()| touch_stack(DEPTH))
                    .unwrap()
            })
            .collect();
        for co in &mut cos {
            assert!(co.resume(()).is_return());
        }
        drop(cos);
        let warm = rss_bytes();
        assert!(
            warm - base >= N * DEPTH * 3 / 4,
            "pages were committed: {} MiB",
            (warm - base) >> 20
        );
        stack::trim_thread_cache();
        let trimmed = rss_bytes();
        assert!(
            warm - trimmed >= N * DEPTH * 3 / 4,
            "trim released only {} MiB of {} MiB",
            (warm - trimmed) >> 20,
            (warm - base) >> 20
        );
        return;
    }
    let out = run_in_child("trimming_the_cache_gives_deep_stacks_memory_back", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn freed_slots_beyond_the_caches_release_their_pages() {
    if child_case("freed_slots_beyond_the_caches_release_their_pages") {
        const N: usize = 2000; // far more than the thread cache and the dirty list hold
        const DEPTH: usize = 256 << 10;
        let base = rss_bytes();
        let mut cos: Vec<Coroutine<(), (), u8>> = (0..N)
            .map(|_| {
                Builder::new()
                    .stack_size(1 << 20)
                    .build(|_, ()| touch_stack(DEPTH))
                    .unwrap()
            })
            .collect();
        for co in &mut cos {
            assert!(co.resume(()).is_return());
        }
        let peak = rss_bytes();
        drop(cos);
        let after = rss_bytes();
        // At most the thread cache (64) and the arena's dirty list (up to 2 × 256 before a
        // release) keep their deep pages; the rest keep one page or none.
        assert!(
            after - base <= (64 + 512) * DEPTH + N * 4096 + (16 << 20),
            "{} MiB still resident of a {} MiB peak",
            (after - base) >> 20,
            (peak - base) >> 20
        );
        return;
    }
    let out = run_in_child("freed_slots_beyond_the_caches_release_their_pages", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn stacks_freed_on_another_thread_are_reused() {
    const SIZE: usize = 88 << 10; // used by no other test
    let cos: Vec<_> = (0..100)
        .map(|_| {
            Builder::new()
                .stack_size(SIZE)
                .build::<(), (), (), _>(|_, ()| {})
                .unwrap()
        })
        .collect();
    let carved = stack::stats_for_size(SIZE).carved;
    // Coroutines are !Send, so a thread can only finish what it created; the slots go to
    // that thread's cache and, when it exits, back to the arena for everyone.
    std::thread::spawn(|| {
        let cos: Vec<_> = (0..200)
            .map(|_| {
                Builder::new()
                    .stack_size(SIZE)
                    .build::<(), (), (), _>(|_, ()| {})
                    .unwrap()
            })
            .collect();
        drop(cos);
    })
    .join()
    .unwrap();
    let more: Vec<_> = (0..200)
        .map(|_| {
            Builder::new()
                .stack_size(SIZE)
                .build::<(), (), (), _>(|_, ()| {})
                .unwrap()
        })
        .collect();
    let stats = stack::stats_for_size(SIZE);
    assert!(
        stats.carved <= carved + 200 + 32,
        "carved {} after {}",
        stats.carved,
        carved
    );
    assert_eq!(stats.in_use, 300);
    drop((cos, more));
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
}

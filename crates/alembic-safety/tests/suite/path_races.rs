//! Anchors §7.3 races 10 and 31, 10,000 iterations each, both strategies.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use alembic_safety::{PathGuard, PathLimits, Strategy};
use pretty_assertions::assert_eq;
use rustix::fs::{CWD, RenameFlags, renameat_with};

use super::fixture::{Fixture, SECRET};

const ITERATIONS: usize = 10_000;

/// Swaps two names atomically, over and over, until told to stop.
fn swapper(
    a: std::path::PathBuf,
    b: std::path::PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
            swaps += 1;
            std::thread::yield_now();
        }
        swaps
    })
}

#[test]
fn race_10_swapping_a_directory_for_a_symlink_never_reads_outside() {
    for strategy in [Strategy::Auto, Strategy::ComponentWalk] {
        let fx = Fixture::new();
        std::fs::create_dir(fx.path("dir")).unwrap();
        std::fs::write(fx.path("dir/secret.txt"), "inside").unwrap();
        fx.symlink(&fx.outside, "alt");
        let guard = PathGuard::with_strategy(&fx.root, PathLimits::default(), strategy).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let handle = swapper(fx.path("dir"), fx.path("alt"), stop.clone());
        let (mut inside, mut outside, mut refused) = (0, 0, 0);
        for _ in 0..ITERATIONS {
            match guard.read_to_string("dir/secret.txt") {
                Ok(text) if text == SECRET => outside += 1,
                Ok(_) => inside += 1,
                Err(_) => refused += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = handle.join().unwrap();
        assert_eq!(
            outside, 0,
            "{strategy:?}: {inside} inside, {refused} refused, {swaps} swaps"
        );
        assert_eq!(inside + refused, ITERATIONS);
    }
}

#[test]
fn race_31_recursive_remove_while_a_subdirectory_becomes_a_symlink() {
    let fx = Fixture::new();
    for i in 0..5 {
        std::fs::write(fx.outside.join(format!("keep{i}")), "keep").unwrap();
    }
    let before = fx.outside_listing();
    let guard = PathGuard::new(&fx.root).unwrap();
    std::fs::create_dir_all(fx.path("spare")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let handle = swapper_ignoring_errors(fx.path("tmp/sub"), fx.path("spare/evil"), stop.clone());
    let mut removed_runs = 0;
    for _ in 0..ITERATIONS {
        let _ = std::fs::create_dir_all(fx.path("tmp/sub"));
        // Through the guard: a plain write could itself follow the swapped-in symlink.
        let _ = guard.write("tmp/sub/f", b"x", alembic_safety::WriteMode::Replace);
        let _ = std::os::unix::fs::symlink(&fx.outside, fx.path("spare/evil"));
        if guard.remove("tmp", true).is_ok() {
            removed_runs += 1;
        }
    }
    // Deletions are permanent, so one check at the end covers every iteration.
    stop.store(true, Ordering::Relaxed);
    let swaps = handle.join().unwrap();
    assert_eq!(
        fx.outside_listing(),
        before,
        "something outside the root was deleted"
    );
    assert!(
        removed_runs > 0 && swaps > 0,
        "{removed_runs} removals, {swaps} swaps"
    );
}

/// Like [`swapper`], but the names may be missing at times (the remover deletes them).
fn swapper_ignoring_errors(
    a: std::path::PathBuf,
    b: std::path::PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            if renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).is_ok() {
                swaps += 1;
            }
            // Give the CPU back between swaps: on a loaded machine a spinning
            // swapper starves the thread under test without adding races.
            std::thread::yield_now();
        }
        swaps
    })
}

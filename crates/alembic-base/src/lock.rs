//! Locks that ignore poisoning.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, taking the guard even when another thread panicked while holding it.
///
/// A panic in one tool call must not poison the service for every later call: the services
/// behind a mutex (stores, caches, registries, counters) keep their state consistent between
/// statements, so a panic leaves nothing half-written that the next caller could trip over,
/// whereas treating the poison as fatal would turn one bad call into a broken process.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `lock`, ignoring poisoning for the reason given at [`lock`](crate::lock).
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `lock`, ignoring poisoning for the reason given at [`lock`](crate::lock).
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_panic_while_locked_does_not_poison_later_calls() {
        let mutex = Arc::new(Mutex::new(1));
        let rw = Arc::new(RwLock::new(1));
        let (m, r) = (Arc::clone(&mutex), Arc::clone(&rw));
        let crashed = std::thread::spawn(move || {
            let _m = m.lock().unwrap();
            let _r = r.write().unwrap();
            panic!("tool call failed");
        })
        .join();
        assert!(crashed.is_err());
        assert!(mutex.is_poisoned() && rw.is_poisoned());
        *lock(&mutex) += 1;
        *write(&rw) += 1;
        assert_eq!((*lock(&mutex), *read(&rw)), (2, 2));
    }
}

//! Byte budgets with admission control: the VRAM budget of each GPU and the host-memory budget
//! of synthesized partitions. The dispatcher owns them; nothing else reserves or releases.

use std::collections::HashMap;

/// The capacity of a budget without a limit (the host budget at `host_budget_mib = 0`, the CPU
/// backend's "device"); reported as 0 ("unlimited") in status and metrics.
pub const UNLIMITED: u64 = u64::MAX / 4;

/// An admitted reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReservationId(pub u64);

#[derive(Debug, Clone)]
pub struct Budget {
    name: String,
    capacity: u64,
    /// A limit below the capacity for now (the device's memory as others leave it), if any.
    limit: Option<u64>,
    reserved: u64,
    high_water: u64,
    next: u64,
    live: HashMap<ReservationId, u64>,
}

impl Budget {
    pub fn new(name: impl Into<String>, capacity: u64) -> Self {
        Budget {
            name: name.into(),
            capacity,
            limit: None,
            reserved: 0,
            high_water: 0,
            next: 0,
            live: HashMap::new(),
        }
    }

    /// Reserves `bytes` if they fit beside what is already reserved; `None` means wait.
    pub fn try_reserve(&mut self, bytes: u64) -> Option<ReservationId> {
        if self.reserved.checked_add(bytes)? > self.available() {
            return None;
        }
        self.reserved += bytes;
        self.high_water = self.high_water.max(self.reserved);
        self.next += 1;
        let id = ReservationId(self.next);
        self.live.insert(id, bytes);
        Some(id)
    }

    /// Releases a reservation; releasing twice is harmless and returns `false`.
    pub fn release(&mut self, id: ReservationId) -> bool {
        match self.live.remove(&id) {
            Some(bytes) => {
                self.reserved -= bytes;
                true
            }
            None => false,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// What reservations may total now: the capacity, or less while a limit is set.
    pub fn available(&self) -> u64 {
        self.limit.map_or(self.capacity, |l| l.min(self.capacity))
    }
    /// Limits reservations to `limit` bytes in all for now (`None`: the capacity). Live
    /// reservations above it stay; new ones wait until they fit under it.
    pub fn set_limit(&mut self, limit: Option<u64>) {
        self.limit = limit;
    }
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }
    pub fn reserved(&self) -> u64 {
        self.reserved
    }
    pub fn high_water(&self) -> u64 {
        self.high_water
    }
    pub fn live(&self) -> usize {
        self.live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_until_full_and_tracks_high_water() {
        let mut b = Budget::new("vram", 100);
        let x = b.try_reserve(60).unwrap();
        assert!(b.try_reserve(50).is_none(), "over budget admitted");
        let y = b.try_reserve(40).unwrap();
        assert_eq!((b.reserved(), b.high_water()), (100, 100));
        assert!(b.release(x));
        assert!(!b.release(x), "double release");
        assert_eq!(b.reserved(), 40);
        assert!(b.try_reserve(u64::MAX).is_none());
        b.release(y);
        assert_eq!((b.reserved(), b.live(), b.high_water()), (0, 0, 100));
    }

    #[test]
    fn a_limit_below_the_capacity_holds_new_reservations_back() {
        let mut b = Budget::new("vram", 100);
        let x = b.try_reserve(50).unwrap();
        b.set_limit(Some(60));
        assert_eq!(b.available(), 60);
        assert!(b.try_reserve(20).is_none(), "admitted over the limit");
        let y = b.try_reserve(10).unwrap();
        b.set_limit(Some(40)); // below what is reserved: nothing new fits, nothing is revoked
        assert!(b.try_reserve(1).is_none());
        assert_eq!(b.reserved(), 60);
        b.release(x);
        b.release(y);
        b.set_limit(Some(1000)); // never above the capacity
        assert_eq!(b.available(), 100);
        assert!(b.try_reserve(101).is_none());
        b.set_limit(None);
        assert!(b.try_reserve(100).is_some());
    }
}

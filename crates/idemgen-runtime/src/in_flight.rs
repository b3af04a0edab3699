//! How many bytes of request bodies a server is reading at once: a bound
//! on the memory clients can make it hold before anything has
//! authenticated them (a body is read before its signature can be
//! checked). [`crate::service::serve`] gives each request its server's
//! budget; a request whose body would take the total past it is answered
//! `503` with `Retry-After` and its body is not read. A request read
//! outside such a server (a test's, a hand-written service's) has no
//! budget, only [`crate::MAX_BODY_BYTES`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One server's budget, shared by its requests (their extensions).
#[derive(Debug, Clone)]
pub(crate) struct InFlight(Arc<Budget>);

#[derive(Debug)]
struct Budget {
    limit: usize,
    used: AtomicUsize,
}

impl InFlight {
    pub(crate) fn new(limit: usize) -> InFlight {
        InFlight(Arc::new(Budget {
            limit,
            used: AtomicUsize::new(0),
        }))
    }
}

/// Bytes of one body being read, counted against its server's budget
/// until dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Option<InFlight>,
    bytes: usize,
}

impl Reservation {
    pub(crate) fn new(budget: Option<InFlight>) -> Reservation {
        Reservation { budget, bytes: 0 }
    }

    /// `bytes` more for this body, if the budget allows them.
    pub(crate) fn grow(&mut self, bytes: usize) -> bool {
        let granted = match &self.budget {
            None => true,
            Some(InFlight(budget)) => budget
                .used
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                    used.checked_add(bytes).filter(|total| *total <= budget.limit)
                })
                .is_ok(),
        };
        if granted {
            self.bytes += bytes;
        }
        granted
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(InFlight(budget)) = &self.budget {
            budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_counts_reservations_until_they_are_dropped() {
        let budget = InFlight::new(100);
        let mut first = Reservation::new(Some(budget.clone()));
        assert!(first.grow(60));
        assert!(first.grow(20));
        assert_eq!(first.bytes(), 80);
        let mut second = Reservation::new(Some(budget.clone()));
        assert!(!second.grow(21), "past the budget");
        assert!(second.grow(20));
        assert!(!second.grow(usize::MAX));
        drop(first);
        assert!(second.grow(80));
        drop(second);
        assert_eq!(budget.0.used.load(Ordering::Acquire), 0);
        let mut unbounded = Reservation::new(None);
        assert!(unbounded.grow(usize::MAX));
    }
}

//! Duplicates of a key that reach a process while that same process runs
//! the key's first attempt: they wait for its answer here, in memory, and
//! are answered with it, without a statement of their own. A burst of
//! duplicates (a client's retries crossing its own first try, a load
//! balancer's replays) then costs the database one first write, not one
//! read or one waiting claim per duplicate.
//!
//! Only a committed answer is passed on: the attempt publishes its stored
//! answer after its COMMIT succeeded, exactly what a replay would read
//! from the record. Anything else (a failure, a lost race, a COMMIT with
//! no answer, a wait that runs out, another fingerprint) sends the
//! duplicate down the usual way, the record read and the atomic claim, so
//! the database stays the only owner of a key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::time::Instant;


/// The first attempts this process is running, by operation, scope and key.
#[derive(Debug, Default)]
pub(crate) struct SingleFlight {
    flights: Mutex<HashMap<FlightKey, Flight>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FlightKey {
    operation: &'static str,
    scope: String,
    key: String,
}

#[derive(Debug)]
struct Flight {
    fingerprint: String,
    /// Which flight this is: a lead that ends removes only its own entry.
    id: u64,
    /// `None` until the attempt lands; then its stored answer, if it has one.
    landed: watch::Sender<Option<Landing>>,
    next_id: u64,
}

/// An answer as the record stores it: what a replay sends.
#[derive(Debug)]
pub(crate) struct StoredAnswer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// As [`crate::response_headers::encode`] wrote them.
    pub headers: Option<Vec<u8>>,
}

/// How an attempt ended, for the duplicates that waited on it.
#[derive(Debug, Clone)]
enum Landing {
    /// Its answer committed, as stored.
    Stored(Arc<StoredAnswer>),
    /// No stored answer: the duplicates go to the database.
    Nothing,
}

/// What a request is to this process's other attempts of its key.
pub(crate) enum Joined {
    /// The first: it runs, and its [`Lead`] tells the others how it ended.
    Lead(Lead),
    /// A duplicate of a running attempt with the same fingerprint.
    Follow(Follower),
    /// A duplicate with another fingerprint: the database answers it.
    Alone,
}

/// A running first attempt. Dropped without [`Lead::land`], it tells its
/// followers to go to the database.
#[derive(Debug)]
pub(crate) struct Lead {
    flights: Arc<SingleFlight>,
    key: FlightKey,
    id: u64,
    landed: watch::Sender<Option<Landing>>,
}

pub(crate) struct Follower {
    landed: watch::Receiver<Option<Landing>>,
}

impl SingleFlight {
    /// Joins the attempts of `key` that this process is running.
    pub(crate) fn join(
        self: &Arc<Self>,
        operation: &'static str,
        scope: &str,
        key: &str,
        fingerprint: &str,
    ) -> Joined {
        let flight_key = FlightKey {
            operation,
            scope: scope.to_owned(),
            key: key.to_owned(),
        };
        let mut flights = self.flights.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let next_id = match flights.get(&flight_key) {
            Some(flight) if flight.landed.borrow().is_none() => {
                return if flight.fingerprint == fingerprint {
                    Joined::Follow(Follower {
                        landed: flight.landed.subscribe(),
                    })
                } else {
                    Joined::Alone
                };
            }
            Some(flight) => flight.next_id,
            None => 0,
        };
        let (landed, _) = watch::channel(None);
        flights.insert(
            flight_key.clone(),
            Flight {
                fingerprint: fingerprint.to_owned(),
                id: next_id,
                landed: landed.clone(),
                next_id: next_id.wrapping_add(1),
            },
        );
        Joined::Lead(Lead {
            flights: Arc::clone(self),
            key: flight_key,
            id: next_id,
            landed,
        })
    }

    #[cfg(test)]
    fn running(&self) -> usize {
        self.flights.lock().unwrap().len()
    }
}

impl Lead {
    /// Whether any duplicate waits on this attempt: only then is its
    /// answer worth copying.
    pub(crate) fn followed(&self) -> bool {
        self.landed.receiver_count() > 0
    }

    /// The attempt's answer committed as `answer`: every duplicate waiting
    /// now is answered with it.
    pub(crate) fn land(self, answer: StoredAnswer) {
        self.landed
            .send_replace(Some(Landing::Stored(Arc::new(answer))));
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        self.landed.send_if_modified(|landed| {
            let unset = landed.is_none();
            if unset {
                *landed = Some(Landing::Nothing);
            }
            unset
        });
        let mut flights = self
            .flights
            .flights
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if flights.get(&self.key).is_some_and(|flight| flight.id == self.id) {
            flights.remove(&self.key);
        }
    }
}

impl Follower {
    /// The running attempt's stored answer, if it commits one by `until`;
    /// `None` when it ends without one or is still running then.
    pub(crate) async fn answer(mut self, until: Instant) -> Option<Arc<StoredAnswer>> {
        let landed = tokio::time::timeout_at(until, self.landed.wait_for(Option::is_some)).await;
        match landed {
            Ok(Ok(landed)) => match landed.as_ref() {
                Some(Landing::Stored(answer)) => Some(Arc::clone(answer)),
                _ => None,
            },
            // The lead is gone without a word (cannot happen: its drop
            // speaks), or the wait ran out.
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn record(body: &str) -> StoredAnswer {
        StoredAnswer {
            status: 201,
            content_type: "application/json".into(),
            body: body.as_bytes().to_vec(),
            headers: None,
        }
    }

    fn lead(joined: Joined) -> Lead {
        match joined {
            Joined::Lead(lead) => lead,
            _ => panic!("expected to lead"),
        }
    }

    fn follower(joined: Joined) -> Follower {
        match joined {
            Joined::Follow(follower) => follower,
            _ => panic!("expected to follow"),
        }
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn duplicates_get_the_committed_answer_of_the_attempt_they_waited_on() {
        let flights = Arc::new(SingleFlight::default());
        let first = lead(flights.join("pay", "s", "k", "f"));
        let second = follower(flights.join("pay", "s", "k", "f"));
        let third = follower(flights.join("pay", "s", "k", "f"));
        assert!(first.followed());
        first.land(record("{\"id\":1}"));
        for duplicate in [second, third] {
            let answer = duplicate.answer(soon()).await.expect("the stored answer");
            assert_eq!(answer.body, b"{\"id\":1}");
        }
        assert_eq!(flights.running(), 0, "a landed attempt leaves the table");
    }

    #[tokio::test]
    async fn an_attempt_that_ends_without_a_stored_answer_sends_its_duplicates_to_the_database() {
        let flights = Arc::new(SingleFlight::default());
        let first = lead(flights.join("pay", "s", "k", "f"));
        let second = follower(flights.join("pay", "s", "k", "f"));
        drop(first);
        assert!(second.answer(soon()).await.is_none());
        assert_eq!(flights.running(), 0);
        // The next request of the key runs on its own.
        assert!(matches!(flights.join("pay", "s", "k", "f"), Joined::Lead(_)));
    }

    #[tokio::test]
    async fn another_fingerprint_another_key_or_operation_does_not_wait() {
        let flights = Arc::new(SingleFlight::default());
        let _first = lead(flights.join("pay", "s", "k", "f"));
        assert!(matches!(flights.join("pay", "s", "k", "g"), Joined::Alone));
        assert!(matches!(flights.join("pay", "s", "other", "f"), Joined::Lead(_)));
        assert!(matches!(flights.join("refund", "s", "k", "f"), Joined::Lead(_)));
        assert!(matches!(flights.join("pay", "other", "k", "f"), Joined::Lead(_)));
    }

    #[tokio::test]
    async fn a_duplicate_stops_waiting_when_its_time_runs_out() {
        let flights = Arc::new(SingleFlight::default());
        let first = lead(flights.join("pay", "s", "k", "f"));
        let second = follower(flights.join("pay", "s", "k", "f"));
        let until = Instant::now() + Duration::from_millis(50);
        assert!(second.answer(until).await.is_none());
        drop(first);
    }

    #[tokio::test]
    async fn a_lead_that_landed_and_is_not_yet_gone_leaves_its_successor_alone() {
        let flights = Arc::new(SingleFlight::default());
        let first = lead(flights.join("pay", "s", "k", "f"));
        // Landed, its entry not yet removed: a new request of the key
        // leads anew rather than waiting on an attempt that is over.
        first.landed.send_replace(Some(Landing::Nothing));
        let second = lead(flights.join("pay", "s", "k", "f"));
        drop(first);
        assert_eq!(flights.running(), 1, "the second attempt's entry stays");
        let waiting = follower(flights.join("pay", "s", "k", "f"));
        drop(second);
        assert!(waiting.answer(soon()).await.is_none());
        assert_eq!(flights.running(), 0);
    }
}

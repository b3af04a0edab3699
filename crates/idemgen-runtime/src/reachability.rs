//! Whether the database is down or only busy.
//!
//! A request that runs out of its lease waiting for the database cannot
//! tell the two apart from the pool: sqlx keeps retrying a refused
//! connection until the wait's deadline, so a server that died (a Galera
//! node killed under its instances) looks like a pool whose connections
//! are all in use. The two need different answers: busy is `429` (retry
//! here after `Retry-After`), down is `503` (retry elsewhere). One probe,
//! a fresh connection outside the pool, decides; while the last probe
//! failed, requests are answered `503` at once instead of each waiting out
//! its lease, and one probe at most every [`RECHECK`] finds out when the
//! server is back.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::db::{self, Pool};

/// How long a probe waits for a connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a failed probe's verdict stands before the next probe.
const RECHECK: Duration = Duration::from_millis(500);

#[derive(Debug, Default)]
pub(crate) struct Reachability {
    /// When the last probe failed; `None` while the database answered it.
    down_since_probe: Mutex<Option<Instant>>,
    /// A probe is running (one at a time, however many requests wait).
    probing: AtomicBool,
}

impl Reachability {
    /// Whether the last probe found the database down.
    pub(crate) fn down(&self) -> bool {
        self.last_failure().is_some()
    }

    /// Whether the database is down, probing again if the last failed
    /// probe is older than [`RECHECK`]: called before a request touches
    /// the pool, so that while the server is down requests are answered
    /// at once.
    pub(crate) async fn still_down(&self, pool: &Pool) -> bool {
        match self.last_failure() {
            None => false,
            Some(failed) if failed.elapsed() < RECHECK => true,
            Some(_) => {
                self.probe(pool).await;
                self.down()
            }
        }
    }

    /// Opens and closes one connection outside the pool and records
    /// whether that worked. A server that answers, even with an error
    /// (too many connections), is up. Another request's probe in flight
    /// counts for this one.
    pub(crate) async fn probe(&self, pool: &Pool) {
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        // Cleared however this ends: a request whose client disconnects
        // drops this future mid-probe, and a flag left set would stop
        // every later probe, leaving the verdict "down" for good.
        let _probing = ProbingFlag(&self.probing);
        let up = db::reachable(pool, PROBE_TIMEOUT).await;
        let was_down = std::mem::replace(
            &mut *self.lock(),
            if up { None } else { Some(Instant::now()) },
        )
        .is_some();
        match (was_down, up) {
            (false, false) => {
                tracing::warn!("database unreachable: answering 503 until a probe connects")
            }
            (true, true) => tracing::warn!("database reachable again"),
            _ => {}
        }
    }

    fn last_failure(&self) -> Option<Instant> {
        *self.lock()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.down_since_probe
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Clears the "a probe is running" flag when dropped.
struct ProbingFlag<'a>(&'a AtomicBool);

impl Drop for ProbingFlag<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[cfg(all(test, any(feature = "mysql", feature = "postgres")))]
mod tests {
    use super::*;

    /// A request whose client disconnects drops its probe midway; the
    /// next probe must still run, or the verdict "down" would stand for
    /// good while `/healthz` stays green.
    #[tokio::test]
    async fn a_probe_dropped_midway_does_not_stop_later_probes() {
        // A server that accepts TCP connections and never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let url = if cfg!(feature = "mysql") {
            format!("mysql://root@127.0.0.1:{port}/test")
        } else {
            format!("postgres://postgres@127.0.0.1:{port}/test")
        };
        let pool = Pool::connect_lazy(&url).unwrap();
        let reachability = Reachability::default();
        let dropped =
            tokio::time::timeout(Duration::from_millis(50), reachability.probe(&pool)).await;
        assert!(dropped.is_err(), "the probe was still waiting");
        assert!(!reachability.probing.load(Ordering::Acquire));
        reachability.probe(&pool).await;
        assert!(
            reachability.down(),
            "the next probe ran and found no server"
        );
    }
}

//! Statements that get no answer in time, and the connections they leave.
//!
//! sqlx pings every connection that comes back to the pool, with no
//! deadline. A connection given up on in the middle of a statement (a
//! COMMIT past its deadline, a claim past its lease) to a server that
//! stopped answering (partitioned, frozen, a primary waiting for a standby
//! that is gone) would keep its place in the pool until TCP gives up,
//! minutes later: the pool runs dry, even after the service has moved to
//! another host. So once a statement of this process went unanswered, and
//! for [`WATCH_FOR`] after, a connection coming back to the pool is first
//! pinged with a deadline and closed without ceremony if it misses it.
//! Otherwise nothing extra is sent.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::Db;

/// How long connections coming back to the pool are checked after a
/// statement went unanswered.
const WATCH_FOR: Duration = Duration::from_secs(60);
/// How long such a check may take.
pub(crate) const PING_WITHIN: Duration = Duration::from_secs(1);

/// Milliseconds since [`epoch`] until which returning connections are
/// checked (0: not since the process started).
static WATCH_UNTIL_MS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A statement got no answer in time: check the connections that come
/// back to the pool for a while.
pub(crate) fn went_unanswered() {
    let until = now_ms().saturating_add(WATCH_FOR.as_millis() as u64);
    WATCH_UNTIL_MS.fetch_max(until, Ordering::Relaxed);
}

fn watching() -> bool {
    now_ms() < WATCH_UNTIL_MS.load(Ordering::Relaxed)
}

/// `work`'s output if it ends before `deadline`; `None` otherwise, and
/// then the connections it used are checked when they come back to the
/// pool (the mark is made before `work` is dropped, which is what sends
/// them back).
pub(crate) async fn within<F: Future>(deadline: Instant, work: F) -> Option<F::Output> {
    let mut work = std::pin::pin!(work);
    tokio::select! {
        output = &mut work => Some(output),
        _ = tokio::time::sleep_until(deadline) => {
            went_unanswered();
            None
        }
    }
}

/// A ping that must be answered within [`PING_WITHIN`]; a miss is an I/O
/// error (the pool then closes the connection without a goodbye).
pub(crate) async fn ping(connection: &mut <Db as sqlx::Database>::Connection) -> Result<(), sqlx::Error> {
    match tokio::time::timeout(PING_WITHIN, sqlx::Connection::ping(connection)).await {
        Ok(answered) => answered,
        Err(_) => {
            went_unanswered();
            Err(sqlx::Error::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the database did not answer a ping within {PING_WITHIN:?}"),
            )))
        }
    }
}

/// The pool's `after_release` check: nothing while every statement is
/// answered; a ping with a deadline for a while after one was not.
pub(crate) async fn after_release(
    connection: &mut <Db as sqlx::Database>::Connection,
) -> Result<bool, sqlx::Error> {
    if watching() {
        ping(connection).await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_past_its_deadline_starts_the_watch() {
        let quick = within(Instant::now() + Duration::from_secs(5), async { 7 }).await;
        assert_eq!(quick, Some(7));
        let slow = within(
            Instant::now() + Duration::from_millis(20),
            tokio::time::sleep(Duration::from_secs(5)),
        )
        .await;
        assert_eq!(slow, None);
        assert!(watching(), "a statement that went unanswered starts the watch");
    }
}

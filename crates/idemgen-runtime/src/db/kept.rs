//! Connections kept between replays, out of sqlx's release path.
//!
//! sqlx pings every connection that goes back to its pool: one more round
//! trip for a replay, which is otherwise one read. A connection whose read
//! just answered a request is in a known state (its statement finished, no
//! transaction open), so the engine keeps it here instead and hands it to
//! the next keyed request with neither the release ping nor the pool's
//! bookkeeping.
//!
//! A kept connection still counts against the pool's size, so what is kept
//! is bounded: at most half the pool, and nothing while the pool has no
//! idle connection and no room to open one (a request may be waiting for
//! it). One kept for [`PING_AFTER_IDLE`] or more, or kept before the pool
//! moved to another host ([`HOST_MOVES`]), goes back to the pool, where
//! sqlx pings it and closes it if it is broken: when the next request
//! meets it, or when [`Kept::give_back_in_time`]'s task does. Everything
//! kept goes back when the pool is closed, whose `close` waits for every
//! connection.

use std::sync::{Arc, Mutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::{PING_AFTER_IDLE, Pool, PoolConnection};

/// How often this process's pools moved to another database host.
static HOST_MOVES: AtomicU64 = AtomicU64::new(0);

/// A pool moved to another host: connections kept before that were opened
/// to the previous one.
#[cfg(feature = "postgres")]
pub(crate) fn moved_host() {
    HOST_MOVES.fetch_add(1, Ordering::Relaxed);
}

/// The connections kept ([`crate::Idempotency`] has one, shared by its
/// clones).
pub(crate) struct Kept {
    connections: Mutex<Vec<KeptConnection>>,
    /// The count of host moves it follows: [`HOST_MOVES`].
    moves: &'static AtomicU64,
    /// How long a connection stays fresh: [`PING_AFTER_IDLE`], after which
    /// the pool's check pings it.
    fresh_for: Duration,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            connections: Mutex::default(),
            moves: &HOST_MOVES,
            fresh_for: PING_AFTER_IDLE,
        }
    }
}

struct KeptConnection {
    connection: PoolConnection,
    kept_at: Instant,
    /// The host moves counted when it was taken from the pool.
    moves: u64,
}

/// A connection in use, from the pool or from [`Kept`]; given back with
/// [`Kept::keep`] (or dropped: back to the pool).
pub(crate) struct Lent {
    pub connection: PoolConnection,
    /// The host moves counted when it was taken from the pool.
    moves: u64,
}

impl Kept {
    /// `connection`, just taken from the pool, as lent.
    pub(crate) fn lend(&self, connection: PoolConnection) -> Lent {
        Lent {
            connection,
            moves: self.moves.load(Ordering::Relaxed),
        }
    }

    /// The connection kept last, if it is still fresh; the stale ones go
    /// back to the pool.
    pub(crate) fn take(&self) -> Option<Lent> {
        let mut stale = Vec::new();
        let taken = {
            let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                match connections.pop() {
                    None => break None,
                    Some(kept) if self.fresh(&kept) => {
                        break Some(Lent {
                            connection: kept.connection,
                            moves: kept.moves,
                        });
                    }
                    // Kept longer (the ones under it too, kept earlier) or
                    // before a move: the pool checks them.
                    Some(kept) => {
                        stale.push(kept);
                        stale.append(&mut connections);
                    }
                }
            }
        };
        // Dropped outside the lock: each goes back to the pool.
        drop(stale);
        taken
    }

    /// Keeps `lent`, whose last statement finished and which has no
    /// transaction open, for the next request; or gives it back to the
    /// pool when enough are kept or the pool may have a request waiting.
    pub(crate) fn keep(&self, pool: &Pool, lent: Lent) {
        let most = (pool.options().get_max_connections() / 2).max(1) as usize;
        let pool_has_room =
            pool.num_idle() > 0 || pool.size() < pool.options().get_max_connections();
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        if pool_has_room && !pool.is_closed() && connections.len() < most {
            connections.push(KeptConnection {
                connection: lent.connection,
                kept_at: Instant::now(),
                moves: lent.moves,
            });
        }
        // Otherwise `lent` is dropped here: back to the pool.
    }
}

impl Kept {
    /// Starts the task that gives back to `pool` what `kept` holds: each
    /// connection once it is stale, all of them once the pool is closed.
    /// It ends with the pool or when `kept` is dropped.
    pub(crate) fn give_back_in_time(kept: &Arc<Kept>, pool: &Pool) {
        let kept = Arc::downgrade(kept);
        let closed = pool.close_event();
        tokio::spawn(async move {
            let mut closed = std::pin::pin!(closed);
            loop {
                let Some(fresh_for) = kept.upgrade().map(|kept| kept.fresh_for) else {
                    return;
                };
                tokio::select! {
                    () = &mut closed => {
                        if let Some(kept) = kept.upgrade() {
                            kept.give_back(|_| true);
                        }
                        return;
                    }
                    () = tokio::time::sleep(fresh_for) => match kept.upgrade() {
                        Some(kept) => kept.give_back(|connection| !kept.fresh(connection)),
                        None => return,
                    },
                }
            }
        });
    }

    fn fresh(&self, kept: &KeptConnection) -> bool {
        kept.moves == self.moves.load(Ordering::Relaxed) && kept.kept_at.elapsed() < self.fresh_for
    }

    /// Gives back to the pool the connections `which` picks.
    fn give_back(&self, which: impl Fn(&KeptConnection) -> bool) {
        let given: Vec<KeptConnection> = {
            let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
            let (given, kept) = std::mem::take(&mut *connections).into_iter().partition(which);
            *connections = kept;
            given
        };
        // Dropped outside the lock: each goes back to the pool.
        drop(given);
    }
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;

    async fn pool(max: u32) -> Pool {
        sqlx::pool::PoolOptions::new()
            .max_connections(max)
            .connect("sqlite::memory:")
            .await
            .unwrap()
    }

    async fn lent(kept: &Kept, pool: &Pool) -> Lent {
        kept.lend(pool.acquire().await.unwrap())
    }

    #[tokio::test]
    async fn a_kept_connection_is_the_next_one_taken_and_stays_out_of_the_pool() {
        let pool = pool(4).await;
        let kept = Kept::default();
        assert!(kept.take().is_none(), "nothing kept yet");
        kept.keep(&pool, lent(&kept, &pool).await);
        tokio::task::yield_now().await;
        assert_eq!((pool.size(), pool.num_idle()), (1, 0), "kept, not back in the pool");
        let mut taken = kept.take().expect("the kept connection");
        sqlx::query("SELECT 1")
            .execute(&mut *taken.connection)
            .await
            .unwrap();
        assert!(kept.take().is_none(), "taken once");
    }

    #[tokio::test]
    async fn at_most_half_the_pool_is_kept() {
        let pool = pool(4).await;
        let kept = Kept::default();
        let (a, b, c) = (lent(&kept, &pool).await, lent(&kept, &pool).await, lent(&kept, &pool).await);
        for connection in [a, b, c] {
            kept.keep(&pool, connection);
        }
        assert!(kept.take().is_some());
        assert!(kept.take().is_some());
        assert!(kept.take().is_none(), "the third went back to the pool");
    }

    #[tokio::test]
    async fn nothing_is_kept_while_the_pool_has_no_connection_to_give() {
        let pool = pool(2).await;
        let kept = Kept::default();
        let (held, returned) = (lent(&kept, &pool).await, lent(&kept, &pool).await);
        // Both connections out and none can be opened: a request may be
        // waiting for this one.
        kept.keep(&pool, returned);
        assert!(kept.take().is_none());
        drop(held);
    }

    #[tokio::test]
    async fn a_connection_kept_too_long_goes_back_to_the_pool() {
        let pool = pool(4).await;
        let kept = Kept {
            fresh_for: Duration::from_millis(20),
            ..Kept::default()
        };
        kept.keep(&pool, lent(&kept, &pool).await);
        kept.keep(&pool, lent(&kept, &pool).await);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(kept.take().is_none(), "sqlx pings them in the pool first");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(pool.num_idle(), 2, "both back in the pool");
    }

    #[tokio::test]
    async fn closing_the_pool_and_time_give_the_kept_ones_back() {
        let pool = pool(4).await;
        let kept = Arc::new(Kept {
            fresh_for: Duration::from_millis(50),
            ..Kept::default()
        });
        Kept::give_back_in_time(&kept, &pool);
        kept.keep(&pool, lent(&kept, &pool).await);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(pool.num_idle(), 1, "given back once stale, with no request to meet it");

        let kept = Arc::new(Kept::default());
        Kept::give_back_in_time(&kept, &pool);
        kept.keep(&pool, lent(&kept, &pool).await);
        tokio::time::timeout(Duration::from_secs(5), pool.close())
            .await
            .expect("the pool closes: the kept connection is given back");
    }

    #[tokio::test]
    async fn a_move_to_another_host_sends_the_kept_ones_back() {
        static MOVES: AtomicU64 = AtomicU64::new(0);
        let pool = pool(4).await;
        let kept = Kept {
            moves: &MOVES,
            ..Kept::default()
        };
        kept.keep(&pool, lent(&kept, &pool).await);
        MOVES.fetch_add(1, Ordering::Relaxed);
        assert!(kept.take().is_none(), "opened to the host the pool left");
        kept.keep(&pool, lent(&kept, &pool).await);
        assert!(kept.take().is_some(), "taken after the move: kept");
    }
}

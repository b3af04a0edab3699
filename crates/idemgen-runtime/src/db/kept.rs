//! Connections kept between replays, out of sqlx's release path.
//!
//! sqlx pings every connection that goes back to its pool: one more round
//! trip for a replay, which is otherwise one read. A connection whose read
//! just answered a request has no transaction open and nothing else sent
//! on it, so the engine keeps it here instead and hands it to the next
//! request with neither the release ping nor the pool's bookkeeping.
//!
//! A kept connection still counts against the pool's size, so what is kept
//! is bounded: at most half the pool (per engine), and nothing while the
//! pool has no idle connection and no room to open one (a request may be
//! waiting for it); [`Kept::give_back_in_time`]'s task gives everything
//! back as soon as that happens. A connection goes back to the pool, where
//! sqlx pings it and closes it if it is broken, once it was kept unused for
//! [`PING_AFTER_IDLE`] (the pool's own rule for a ping), after the pool
//! moved to another host ([`HOST_MOVES`]), once it has been out of the pool
//! for the pool's `max_lifetime` (where sqlx retires old connections), and
//! when the pool closes (its `close` waits for every connection).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::{PING_AFTER_IDLE, Pool, PoolConnection};

/// How often the task looks at what is kept.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// How often this process's pools moved to another database host.
static HOST_MOVES: AtomicU64 = AtomicU64::new(0);

/// A pool moved to another host: connections kept before that were opened
/// to the previous one.
#[cfg(feature = "postgres")]
pub(crate) fn moved_host() {
    HOST_MOVES.fetch_add(1, Ordering::Release);
}

/// The connections kept ([`crate::Idempotency`] has one, shared by its
/// clones).
pub(crate) struct Kept {
    connections: Mutex<Vec<KeptConnection>>,
    /// The count of host moves it follows: [`HOST_MOVES`].
    moves: &'static AtomicU64,
    /// How long a connection stays fresh unused: [`PING_AFTER_IDLE`].
    fresh_for: Duration,
    /// Where connections dropped with the engine go back to the pool (sqlx
    /// spawns that on the runtime, and panics outside one).
    runtime: Option<tokio::runtime::Handle>,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            connections: Mutex::default(),
            moves: &HOST_MOVES,
            fresh_for: PING_AFTER_IDLE,
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let connections =
            std::mem::take(self.connections.get_mut().unwrap_or_else(|e| e.into_inner()));
        let _entered = self.runtime.as_ref().map(|runtime| runtime.enter());
        drop(connections);
    }
}

struct KeptConnection {
    lent: Lent,
    kept_at: Instant,
}

/// A connection in use, from the pool or from [`Kept`]; given back with
/// [`Kept::keep`] (or dropped: back to the pool).
pub(crate) struct Lent {
    pub connection: PoolConnection,
    /// The host moves counted before it was taken from the pool.
    moves: u64,
    /// When it was taken from the pool.
    from_pool: Instant,
}

impl Kept {
    /// The host moves counted so far: read before taking a connection from
    /// the pool, whose check for a move it then passed.
    pub(crate) fn moves(&self) -> u64 {
        self.moves.load(Ordering::Acquire)
    }

    /// `connection`, taken from the pool after [`Kept::moves`] counted
    /// `moves`, as lent.
    pub(crate) fn lend(&self, connection: PoolConnection, moves: u64) -> Lent {
        Lent {
            connection,
            moves,
            from_pool: Instant::now(),
        }
    }

    /// The connection kept last, if it is still fresh; the stale ones go
    /// back to the pool.
    pub(crate) fn take(&self, pool: &Pool) -> Option<Lent> {
        let mut stale = Vec::new();
        let taken = {
            let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                match connections.pop() {
                    None => break None,
                    Some(kept) if self.fresh(&kept, pool) => break Some(kept.lent),
                    // The ones under it were kept earlier, so they are as
                    // idle and as old as to host moves: the pool checks
                    // them all.
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

    /// Keeps `lent`, whose read answered its request, for the next one; or
    /// gives it back to the pool when enough are kept or the pool may have
    /// a request waiting.
    pub(crate) fn keep(&self, pool: &Pool, lent: Lent) {
        let most = (pool.options().get_max_connections() / 2).max(1) as usize;
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        if !pool_may_have_waiters(pool) && !pool.is_closed() && connections.len() < most {
            connections.push(KeptConnection {
                lent,
                kept_at: Instant::now(),
            });
        }
        // Otherwise `lent` is dropped here: back to the pool.
    }

    /// Starts the task that gives back to `pool` what `kept` holds: the
    /// stale connections, all of them while the pool may have a request
    /// waiting, and all of them once the pool is closed. It ends with the
    /// pool or when `kept` is dropped.
    pub(crate) fn give_back_in_time(kept: &Arc<Kept>, pool: &Pool) {
        let kept = Arc::downgrade(kept);
        let pool = pool.clone();
        let closed = pool.close_event();
        tokio::spawn(async move {
            let mut closed = std::pin::pin!(closed);
            loop {
                tokio::select! {
                    () = &mut closed => {
                        if let Some(kept) = kept.upgrade() {
                            kept.give_back(|_| true);
                        }
                        return;
                    }
                    () = tokio::time::sleep(LOOK_EVERY) => {
                        let Some(kept) = kept.upgrade() else {
                            return;
                        };
                        if pool_may_have_waiters(&pool) {
                            kept.give_back(|_| true);
                        } else {
                            kept.give_back(|connection| !kept.fresh(connection, &pool));
                        }
                    }
                }
            }
        });
    }

    fn fresh(&self, kept: &KeptConnection, pool: &Pool) -> bool {
        kept.lent.moves == self.moves()
            && kept.kept_at.elapsed() < self.fresh_for
            && pool
                .options()
                .get_max_lifetime()
                .is_none_or(|lifetime| kept.lent.from_pool.elapsed() < lifetime)
    }

    /// Gives back to the pool the connections `which` picks.
    fn give_back(&self, which: impl Fn(&KeptConnection) -> bool) {
        let given: Vec<KeptConnection> = {
            let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
            if connections.is_empty() {
                return;
            }
            let (given, kept) = std::mem::take(&mut *connections)
                .into_iter()
                .partition(which);
            *connections = kept;
            given
        };
        // Dropped outside the lock: each goes back to the pool.
        drop(given);
    }
}

/// Whether every connection of `pool` is out and none can be opened: a
/// request may be waiting for one.
fn pool_may_have_waiters(pool: &Pool) -> bool {
    pool.num_idle() == 0 && pool.size() >= pool.options().get_max_connections()
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
        let moves = kept.moves();
        kept.lend(pool.acquire().await.unwrap(), moves)
    }

    fn kept_with(moves: &'static AtomicU64, fresh_for: Duration) -> Kept {
        Kept {
            connections: Mutex::default(),
            moves,
            fresh_for,
            runtime: None,
        }
    }

    /// Waits up to 5 s for `done`.
    async fn until(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(5), "{what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_kept_connection_is_the_next_one_taken_and_stays_out_of_the_pool() {
        let pool = pool(4).await;
        let kept = Kept::default();
        assert!(kept.take(&pool).is_none(), "nothing kept yet");
        kept.keep(&pool, lent(&kept, &pool).await);
        tokio::task::yield_now().await;
        assert_eq!((pool.size(), pool.num_idle()), (1, 0), "kept, not back in the pool");
        let mut taken = kept.take(&pool).expect("the kept connection");
        sqlx::query("SELECT 1")
            .execute(&mut *taken.connection)
            .await
            .unwrap();
        assert!(kept.take(&pool).is_none(), "taken once");
    }

    #[tokio::test]
    async fn at_most_half_the_pool_is_kept() {
        let pool = pool(4).await;
        let kept = Kept::default();
        let (a, b, c) = (lent(&kept, &pool).await, lent(&kept, &pool).await, lent(&kept, &pool).await);
        for connection in [a, b, c] {
            kept.keep(&pool, connection);
        }
        assert!(kept.take(&pool).is_some());
        assert!(kept.take(&pool).is_some());
        assert!(kept.take(&pool).is_none(), "the third went back to the pool");
    }

    #[tokio::test]
    async fn nothing_is_kept_while_the_pool_has_no_connection_to_give() {
        let pool = pool(2).await;
        let kept = Kept::default();
        let (held, returned) = (lent(&kept, &pool).await, lent(&kept, &pool).await);
        // Both connections out and none can be opened: a request may be
        // waiting for this one.
        kept.keep(&pool, returned);
        assert!(kept.take(&pool).is_none());
        drop(held);
    }

    #[tokio::test]
    async fn a_request_that_finds_the_pool_empty_gets_a_kept_connection_back() {
        let pool = pool(4).await;
        let kept = Arc::new(Kept::default());
        Kept::give_back_in_time(&kept, &pool);
        let (a, b) = (lent(&kept, &pool).await, lent(&kept, &pool).await);
        kept.keep(&pool, a);
        kept.keep(&pool, b);
        // The rest of the pool taken: the next acquire waits, for a kept
        // connection given back.
        let _held = (pool.acquire().await.unwrap(), pool.acquire().await.unwrap());
        // Sooner than the kept ones go stale (a second).
        let waited = tokio::time::timeout(Duration::from_millis(500), pool.acquire()).await;
        assert!(waited.is_ok_and(|connection| connection.is_ok()));
    }

    #[tokio::test]
    async fn a_connection_kept_too_long_goes_back_to_the_pool() {
        static MOVES: AtomicU64 = AtomicU64::new(0);
        let pool = pool(4).await;
        let kept = kept_with(&MOVES, Duration::from_millis(20));
        kept.keep(&pool, lent(&kept, &pool).await);
        kept.keep(&pool, lent(&kept, &pool).await);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(kept.take(&pool).is_none(), "sqlx pings them in the pool first");
        until("both back in the pool", || pool.num_idle() == 2).await;
    }

    #[tokio::test]
    async fn closing_the_pool_and_time_give_the_kept_ones_back() {
        static MOVES: AtomicU64 = AtomicU64::new(0);
        let pool = pool(4).await;
        let kept = Arc::new(kept_with(&MOVES, Duration::from_millis(50)));
        Kept::give_back_in_time(&kept, &pool);
        kept.keep(&pool, lent(&kept, &pool).await);
        until("given back once stale, with no request to meet it", || {
            pool.num_idle() == 1
        })
        .await;

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
        let kept = kept_with(&MOVES, PING_AFTER_IDLE);
        kept.keep(&pool, lent(&kept, &pool).await);
        MOVES.fetch_add(1, Ordering::Release);
        assert!(kept.take(&pool).is_none(), "opened to the host the pool left");
        // Counted before the move, taken from the pool after it: the pool's
        // check may have let it through before the move.
        let moves = kept.moves();
        let connection = pool.acquire().await.unwrap();
        MOVES.fetch_add(1, Ordering::Release);
        kept.keep(&pool, kept.lend(connection, moves));
        assert!(kept.take(&pool).is_none());
        kept.keep(&pool, lent(&kept, &pool).await);
        assert!(kept.take(&pool).is_some(), "taken after the move: kept");
    }

    #[test]
    fn an_engine_dropped_outside_its_runtime_gives_its_connections_back() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (kept, pool) = runtime.block_on(async {
            let pool = pool(4).await;
            let kept = Kept::default();
            kept.keep(&pool, lent(&kept, &pool).await);
            (kept, pool)
        });
        drop(kept);
        runtime.block_on(until("back in the pool", || pool.num_idle() == 1));
    }
}

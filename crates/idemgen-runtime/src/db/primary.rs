//! Following the primary of a PostgreSQL primary/standby pair: libpq's
//! multi-host URL (`postgres://h1:5432,h2:5432/db?target_session_attrs=read-write`),
//! which sqlx does not take (it connects to one host).
//!
//! The pool connects to one host at a time, the first of the URL's that
//! answers and is writable (`read-write`: `transaction_read_only` off;
//! `primary`: not in recovery; `any`: answers a query). A task of the pool's own
//! asks that host once every [`CHECK_EVERY`] whether it still is; when it
//! is not (dead, or demoted to a standby) it tries every host in order and
//! points the pool's new connections at the first that is. Connections
//! opened before that switch are closed when next taken from the pool, and
//! a new connection to a host that turns out read-only is refused. Until a
//! writable host answers, taking a connection fails (the pool times out),
//! which a request is answered as 503 with `Retry-After`.

/// What `target_session_attrs` asks of the host the pool writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionAttrs {
    /// The first host that answers.
    Any,
    /// The first host whose sessions are not read-only.
    ReadWrite,
    /// The first host that is not a standby in recovery.
    Primary,
}

/// A URL naming several hosts, or asking for a kind of host: one
/// single-host URL per host, in order, and what the host must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostList {
    pub(crate) urls: Vec<String>,
    pub(crate) attrs: SessionAttrs,
}

/// `None` for a URL sqlx takes as it is: one host, no
/// `target_session_attrs`. An attribute other than `any`, `read-write` or
/// `primary` (a service writes, so `read-only`, `standby` and
/// `prefer-standby` make no sense for it) is an error naming the choices.
pub(crate) fn parse(url: &str) -> Result<Option<HostList>, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(None);
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let mut attrs = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        match pair.split_once('=') {
            Some(("target_session_attrs", value)) => attrs = Some(value),
            _ => kept.push(pair),
        }
    }
    let attrs = match attrs {
        None => SessionAttrs::Any,
        Some("any") => SessionAttrs::Any,
        Some("read-write") => SessionAttrs::ReadWrite,
        Some("primary") => SessionAttrs::Primary,
        Some(other) => {
            return Err(format!(
                "DATABASE_URL has target_session_attrs={other}, but a service writes: use \
                 read-write, primary or any"
            ));
        }
    };
    if !hosts.contains(',') && !query.contains("target_session_attrs=") {
        return Ok(None);
    }
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    let userinfo = userinfo
        .map(|userinfo| format!("{userinfo}@"))
        .unwrap_or_default();
    let mut urls = Vec::new();
    for host in hosts.split(',') {
        if host.is_empty() {
            return Err(format!(
                "DATABASE_URL names an empty host in `{hosts}`: write host:port pairs \
                 separated by commas"
            ));
        }
        urls.push(format!("{scheme}://{userinfo}{host}{path}{query}"));
    }
    Ok(Some(HostList { urls, attrs }))
}

#[cfg(feature = "postgres")]
pub(crate) use follow::open;

#[cfg(feature = "postgres")]
mod follow {
    use std::str::FromStr;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use sqlx::pool::PoolOptions;
    use sqlx::postgres::{PgConnectOptions, PgConnection};
    use sqlx::{ConnectOptions, Connection};

    use super::{HostList, SessionAttrs};
    use crate::db::{Db, Pool};

    /// How often the pool's task asks its host whether it is still the one
    /// to write to.
    pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(250);
    /// How long a host may take to answer a connection and the check.
    const ANSWER_WITHIN: Duration = Duration::from_secs(2);
    /// How long the first connection may look for a writable host.
    const FIND_AT_START_WITHIN: Duration = Duration::from_secs(30);

    struct Follower {
        hosts: Vec<PgConnectOptions>,
        names: Vec<String>,
        attrs: SessionAttrs,
        /// When the pool last moved to another host: connections older
        /// than that were opened to the previous one.
        switched_at: Mutex<Option<Instant>>,
        /// Woken by a new connection that found its host read-only.
        recheck: tokio::sync::Notify,
    }

    /// Whether the host `connection` is on is one the pool may write to.
    async fn qualifies(
        connection: &mut PgConnection,
        attrs: SessionAttrs,
    ) -> Result<bool, sqlx::Error> {
        Ok(match attrs {
            // A host that answers: asked, like the other modes, so that a
            // dead host fails the check and the pool moves on.
            SessionAttrs::Any => {
                sqlx::query_scalar::<_, i32>("SELECT 1")
                    .fetch_one(&mut *connection)
                    .await?
                    == 1
            }
            SessionAttrs::ReadWrite => {
                sqlx::query_scalar::<_, String>("SHOW transaction_read_only")
                    .fetch_one(&mut *connection)
                    .await?
                    == "off"
            }
            SessionAttrs::Primary => {
                !sqlx::query_scalar::<_, bool>("SELECT pg_is_in_recovery()")
                    .fetch_one(&mut *connection)
                    .await?
            }
        })
    }

    impl Follower {
        /// The first host, in the URL's order, that answers and qualifies,
        /// with the connection that asked it; what each other host said.
        async fn find(&self) -> Result<(usize, PgConnection), Vec<String>> {
            let mut why = Vec::new();
            for (index, options) in self.hosts.iter().enumerate() {
                let name = &self.names[index];
                let attempt = async {
                    let mut connection = options.connect().await?;
                    let ok = qualifies(&mut connection, self.attrs).await?;
                    Ok::<_, sqlx::Error>((ok, connection))
                };
                match tokio::time::timeout(ANSWER_WITHIN, attempt).await {
                    Ok(Ok((true, connection))) => return Ok((index, connection)),
                    Ok(Ok((false, connection))) => {
                        let _ = connection.close().await;
                        why.push(format!("{name}: read-only (a standby)"));
                    }
                    Ok(Err(error)) => why.push(format!("{name}: {error}")),
                    Err(_) => why.push(format!("{name}: no answer in {ANSWER_WITHIN:?}")),
                }
            }
            Err(why)
        }

        /// Whether a pooled connection was opened before the pool last
        /// moved to another host.
        fn predates_switch(&self, age: Duration) -> bool {
            self.switched_at
                .lock()
                .unwrap()
                .is_some_and(|at| age > at.elapsed())
        }
    }

    fn unavailable(message: String) -> sqlx::Error {
        // An I/O error: a request that meets it is answered 503, as for
        // any database that cannot be reached.
        sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            message,
        ))
    }

    /// The pool for a multi-host URL, and its host-following task (which
    /// ends when the pool is closed).
    pub(crate) async fn open(hosts: HostList, pool: PoolOptions<Db>) -> Result<Pool, sqlx::Error> {
        let mut options = Vec::new();
        let mut names = Vec::new();
        for url in &hosts.urls {
            let host = PgConnectOptions::from_str(url)?;
            names.push(format!("{}:{}", host.get_host(), host.get_port()));
            options.push(host);
        }
        let follower = Arc::new(Follower {
            hosts: options,
            names,
            attrs: hosts.attrs,
            switched_at: Mutex::new(None),
            recheck: tokio::sync::Notify::new(),
        });
        let started = Instant::now();
        let (mut current, monitor) = loop {
            match follower.find().await {
                Ok(found) => break found,
                Err(why) if started.elapsed() < FIND_AT_START_WITHIN => {
                    tracing::warn!(hosts = %why.join("; "), "no writable database host yet");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(why) => {
                    return Err(unavailable(format!(
                        "no host of DATABASE_URL is writable: {}",
                        why.join("; ")
                    )));
                }
            }
        };
        tracing::info!(host = %follower.names[current], "writing to this database host");
        let (on_connect, on_acquire) = (follower.clone(), follower.clone());
        let pool = pool
            .after_connect(move |connection, _| {
                let follower = on_connect.clone();
                Box::pin(async move {
                    if qualifies(connection, follower.attrs).await? {
                        return Ok(());
                    }
                    follower.recheck.notify_one();
                    Err(unavailable(
                        "the database host is read-only (a standby): waiting for the primary"
                            .into(),
                    ))
                })
            })
            .before_acquire(move |connection, meta| {
                let follower = on_acquire.clone();
                Box::pin(async move {
                    // Opened to a host the pool has since left: a demoted
                    // primary would refuse its writes, a dead one its reads.
                    if follower.predates_switch(meta.age) {
                        return Ok(false);
                    }
                    crate::db::ping_if_idle(connection, meta).await
                })
            })
            .connect_with(follower.hosts[current].clone())
            .await?;
        let watched = pool.clone();
        tokio::spawn(async move {
            let mut monitor = Some(monitor);
            let closed = watched.close_event();
            tokio::pin!(closed);
            loop {
                tokio::select! {
                    _ = &mut closed => return,
                    _ = tokio::time::sleep(CHECK_EVERY) => {}
                    _ = follower.recheck.notified() => {}
                }
                if let Some(connection) = monitor.as_mut() {
                    let check = qualifies(connection, follower.attrs);
                    if matches!(
                        tokio::time::timeout(ANSWER_WITHIN, check).await,
                        Ok(Ok(true))
                    ) {
                        continue;
                    }
                }
                monitor = None;
                match follower.find().await {
                    Ok((found, connection)) => {
                        monitor = Some(connection);
                        if found != current {
                            tracing::warn!(
                                from = %follower.names[current],
                                to = %follower.names[found],
                                "the database host is no longer writable: following the new one"
                            );
                            watched.set_connect_options(follower.hosts[found].clone());
                            *follower.switched_at.lock().unwrap() = Some(Instant::now());
                            crate::db::kept::moved_host();
                            current = found;
                        }
                    }
                    Err(why) => {
                        tracing::warn!(hosts = %why.join("; "), "no writable database host");
                    }
                }
            }
        });
        Ok(pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_without_attributes_is_left_to_sqlx() {
        assert_eq!(parse("postgres://u@h:5432/db?sslmode=disable"), Ok(None));
        assert_eq!(parse("sqlite://payments.db"), Ok(None));
    }

    #[test]
    fn a_host_list_becomes_one_url_per_host_in_order() {
        let list = parse(
            "postgres://u:pw@10.0.0.1:5432,10.0.0.2:5433,[::1]:5434/shop?sslmode=disable&target_session_attrs=read-write",
        )
        .unwrap()
        .unwrap();
        assert_eq!(list.attrs, SessionAttrs::ReadWrite);
        assert_eq!(
            list.urls,
            [
                "postgres://u:pw@10.0.0.1:5432/shop?sslmode=disable",
                "postgres://u:pw@10.0.0.2:5433/shop?sslmode=disable",
                "postgres://u:pw@[::1]:5434/shop?sslmode=disable",
            ]
        );
        let primary = parse("postgresql://h1,h2/db?target_session_attrs=primary")
            .unwrap()
            .unwrap();
        assert_eq!(primary.attrs, SessionAttrs::Primary);
        assert_eq!(primary.urls, ["postgresql://h1/db", "postgresql://h2/db"]);
        let any = parse("postgres://h1,h2/db").unwrap().unwrap();
        assert_eq!(any.attrs, SessionAttrs::Any);
    }

    #[test]
    fn one_host_asking_for_a_writable_session_is_checked() {
        let list = parse("postgres://h:5432/db?target_session_attrs=read-write")
            .unwrap()
            .unwrap();
        assert_eq!(list.urls, ["postgres://h:5432/db"]);
        assert_eq!(list.attrs, SessionAttrs::ReadWrite);
    }

    #[test]
    fn a_session_a_service_cannot_write_in_is_refused() {
        let error = parse("postgres://h1,h2/db?target_session_attrs=standby").unwrap_err();
        assert_eq!(
            error,
            "DATABASE_URL has target_session_attrs=standby, but a service writes: use \
             read-write, primary or any"
        );
        assert!(
            parse("postgres://h1,,h2/db")
                .unwrap_err()
                .contains("empty host")
        );
    }
}

//! Restarting the machine's own database servers (the commands its README
//! gives), for the fault and nemesis suites that opt into it: the servers
//! are shared, so only with `IDEMGEN_TEST_RESTART_DATABASES=1`.

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use super::build::Dialect;

/// Restarts the local server of `dialect` and waits (at most 60 s) until
/// it answers again; SQLite has none. The MariaDB server on 3306 is found
/// by its own pid file: Galera nodes beside it are `mariadbd` processes too.
pub fn restart_database_server(dialect: Dialect) {
    let run = |program: &str, args: &[&str]| {
        let status = Command::new(program).args(args).status();
        assert!(
            status.is_ok_and(|status| status.success()),
            "{program} {args:?} failed"
        );
    };
    let ready = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|output| output.status.success())
    };
    let mysql = ["--protocol=tcp", "-h", "127.0.0.1", "-u", "root"];
    let deadline = Instant::now() + Duration::from_secs(60);
    match dialect {
        Dialect::Mysql => {
            let pid_file = Command::new("mysql")
                .args(mysql)
                .args(["-N", "-B", "-e", "SELECT @@pid_file"])
                .output()
                .ok()
                .and_then(|output| String::from_utf8(output.stdout).ok())
                .map(|pid_file| pid_file.trim().to_string())
                .expect("the pid file of the MariaDB server on 127.0.0.1:3306");
            let pid = std::fs::read_to_string(&pid_file)
                .ok()
                .map(|pid| pid.trim().to_string())
                .filter(|pid| !pid.is_empty())
                .expect("the pid file of the MariaDB server on 127.0.0.1:3306");
            let alive = Path::new("/proc").join(&pid);
            let mut shutdown = mysql.to_vec();
            shutdown.push("shutdown");
            run("mysqladmin", &shutdown);
            // mysqladmin returns once the server has begun shutting down.
            while alive.exists() {
                assert!(Instant::now() < deadline, "MariaDB did not stop");
                thread::sleep(Duration::from_millis(100));
            }
            run(
                "start-stop-daemon",
                &[
                    "--start",
                    "--oknodo",
                    "--background",
                    // By its pid file: without it, a running Galera node
                    // (also /usr/sbin/mariadbd) counts as "already running".
                    "--pidfile",
                    &pid_file,
                    "--exec",
                    "/usr/sbin/mariadbd",
                ],
            );
            let mut ping = mysql.to_vec();
            ping.push("ping");
            while !ready("mysqladmin", &ping) {
                assert!(Instant::now() < deadline, "MariaDB did not come back");
                thread::sleep(Duration::from_millis(100));
            }
        }
        Dialect::Postgres => {
            let version = std::fs::read_dir("/etc/postgresql")
                .expect("/etc/postgresql")
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .next()
                .expect("a PostgreSQL cluster");
            run(
                "pg_ctlcluster",
                &["--skip-systemctl-redirect", &version, "main", "restart"],
            );
            while !ready("pg_isready", &["-h", "127.0.0.1", "-p", "5432"]) {
                assert!(Instant::now() < deadline, "PostgreSQL did not come back");
                thread::sleep(Duration::from_millis(100));
            }
        }
        Dialect::Sqlite => {}
    }
}

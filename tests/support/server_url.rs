//! A database server's URL, split just enough to name other databases on
//! it: the suites that make a database per run share it.

/// `scheme://user[:password]@host[:port]/database[?options]`, split just
/// enough to name another database on the same server.
#[derive(Debug, Clone)]
pub struct ServerUrl {
    pub scheme: String,
    pub user: String,
    pub password: Option<String>,
    pub host: String,
    pub port: Option<String>,
    /// The database the URL names (empty when it names none).
    pub database: String,
    pub options: String,
}

impl ServerUrl {
    pub fn parse(url: &str) -> ServerUrl {
        let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let options = path
            .split_once('?')
            .map(|(_, options)| format!("?{options}"))
            .unwrap_or_default();
        let (userinfo, hostport) = authority.rsplit_once('@').unwrap_or(("", authority));
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (user.to_string(), Some(password.to_string())),
            None => (userinfo.to_string(), None),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), Some(port.to_string())),
            None => (hostport.to_string(), None),
        };
        ServerUrl {
            scheme: scheme.to_string(),
            user,
            password,
            host,
            port,
            database: path.split('?').next().unwrap_or_default().to_string(),
            options,
        }
    }

    pub fn with_database(&self, database: &str) -> String {
        let password = self
            .password
            .as_ref()
            .map(|password| format!(":{password}"))
            .unwrap_or_default();
        let port = self
            .port
            .as_ref()
            .map(|port| format!(":{port}"))
            .unwrap_or_default();
        format!(
            "{}://{}{password}@{}{port}/{database}{}",
            self.scheme, self.user, self.host, self.options
        )
    }

    /// The `mysql` client for this (MariaDB) server, outside any database,
    /// printing bare tab-separated rows.
    pub fn mysql_command(&self) -> std::process::Command {
        let mut command = std::process::Command::new("mysql");
        command.args(["--protocol=TCP", "-N", "-B", "-h", &self.host, "-u"]);
        command.arg(&self.user);
        if let Some(port) = &self.port {
            command.args(["-P", port]);
        }
        if let Some(password) = &self.password {
            command.env("MYSQL_PWD", password);
        }
        command
    }
}

/// The server at `server_url` (`None`: SQLite, no server) and the
/// `DATABASE_URL` of database `name` on it, or of `sqlite_file`.
pub fn locate(
    server_url: Option<&str>,
    name: &str,
    sqlite_file: &std::path::Path,
) -> (Option<ServerUrl>, String) {
    let server = server_url.map(ServerUrl::parse);
    let url = match &server {
        None => format!("sqlite://{}", sqlite_file.display()),
        Some(server) => server.with_database(name),
    };
    (server, url)
}

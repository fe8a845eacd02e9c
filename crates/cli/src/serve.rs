//! `strata serve`: the PostgreSQL wire protocol on a Strata database
//! (see `strata_sql::server`). Stops cleanly on SIGINT or SIGTERM: no new
//! connections, running ones get a few seconds, then the database closes.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use strata::Db;
use strata_sql::server::{ServeOptions, Server, Users};

/// Flags of `strata serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but a loopback address needs --users.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:5433")]
    pub listen: SocketAddr,
    /// Users allowed in: a file of name:password lines (mode 600);
    /// clients authenticate with SCRAM-SHA-256. Without it anyone on this
    /// machine may connect.
    #[arg(long, value_name = "FILE")]
    pub users: Option<PathBuf>,
    /// TLS certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM); needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Connections served at once; more are refused (SQLSTATE 53300).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_connections: usize,
    /// Memory each query may hold (suffixes K, M, G allowed); a query
    /// needing more fails (SQLSTATE 53200).
    #[arg(long, value_name = "BYTES", value_parser = crate::app::parse_size_arg, default_value = "256M")]
    pub query_memory: u64,
}

/// Runs the server until SIGINT or SIGTERM. Returns the exit code.
pub fn run(db: &Db, args: &ServeArgs) -> Result<i32, String> {
    let users = args.users.as_deref().map(Users::load).transpose()?;
    let opts = ServeOptions {
        listen: args.listen,
        users,
        tls: args.tls_cert.clone().zip(args.tls_key.clone()),
        max_connections: args.max_connections,
        query_memory: usize::try_from(args.query_memory)
            .map_err(|_| "--query-memory does not fit this machine".to_string())?,
        ..ServeOptions::default()
    };
    opts.check()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server runtime: {e}"))?;
    rt.block_on(async {
        let server = Server::bind(db.clone(), opts)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let addr = server.local_addr().map_err(|e| e.to_string())?;
        let shutdown =
            shutdown_signal().map_err(|e| format!("cannot handle SIGINT and SIGTERM: {e}"))?;
        eprintln!(
            "strata serve: {} on {addr} (psql -h {} -p {} -U <user>); SIGINT or SIGTERM stops it",
            db.path().display(),
            addr.ip(),
            addr.port()
        );
        server
            .run(shutdown)
            .await
            .map_err(|e| format!("server: {e}"))?;
        eprintln!("strata serve: stopped; closing the database");
        Ok(0)
    })
}

/// Completes on SIGINT or SIGTERM. The handlers are installed when this is
/// called, before the server says it is ready, so that a signal sent right
/// after that line stops the server cleanly instead of killing it.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}

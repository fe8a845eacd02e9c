//! `strata serve`: the PostgreSQL wire protocol over a Strata database,
//! so that `psql`, psycopg, JDBC and BI tools connect unchanged.
//!
//! The protocol (simple and extended queries, `pg_catalog` for `\d` and
//! drivers' introspection) comes from `datafusion-postgres` and `pgwire`;
//! this module adds what a database server owes its users:
//!
//! - **Authentication**: SCRAM-SHA-256 against a users file
//!   ([`auth::Users`]). Without one, the server accepts anyone, and so it
//!   refuses to listen on anything but a loopback address.
//! - **TLS** when given a certificate and key (PEM).
//! - **Bounded connections**: past the limit, a client gets SQLSTATE
//!   `53300` (too many connections) and is closed.
//! - **Per-query memory**: each connection has its own DataFusion session
//!   and memory pool, and runs one query at a time, so the pool's limit
//!   bounds every query; a query that needs more fails with SQLSTATE
//!   `53200` and the connection stays usable.
//! - **Clean shutdown**: when the shutdown future completes (SIGINT or
//!   SIGTERM in `strata serve`), the server stops accepting, lets running
//!   connections finish for a grace period, and returns; the caller then
//!   closes the database. Every acknowledged write is in the write-ahead
//!   log before its reply is sent, so even a killed server loses no
//!   committed row.
//! - **Precise errors**: engine errors keep their SQLSTATE (a duplicate key
//!   is `23505`, an unknown table `42P01`) through DataFusion.

pub mod auth;
mod errors;
mod hook;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use datafusion::error::DataFusionError;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_postgres::datafusion_pg_catalog::setup_pg_catalog;
use datafusion_postgres::hooks::cursor::CursorStatementHook;
use datafusion_postgres::hooks::set_show::SetShowHook;
use datafusion_postgres::hooks::transactions::TransactionStatementHook;
use datafusion_postgres::pgwire::api::auth::DefaultServerParameterProvider;
use datafusion_postgres::pgwire::api::auth::StartupHandler;
use datafusion_postgres::pgwire::api::auth::noop::NoopStartupHandler;
use datafusion_postgres::pgwire::api::auth::sasl::SASLAuthStartupHandler;
use datafusion_postgres::pgwire::api::auth::sasl::scram::ScramAuth;
use datafusion_postgres::pgwire::api::{ClientInfo, ErrorHandler, PgWireServerHandlers};
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use datafusion_postgres::pgwire::tokio::process_socket;
use datafusion_postgres::pgwire::tokio::tokio_rustls::TlsAcceptor;
use datafusion_postgres::pgwire::tokio::tokio_rustls::rustls;
use datafusion_postgres::{DfSessionService, QueryHook};
use futures::Sink;
use strata::Db;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub use auth::Users;
pub use errors::query_sqlstate;

use crate::engine::{SqlEngine, SqlOptions};

/// How `strata serve` runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address to listen on (default `127.0.0.1:5433`).
    pub listen: SocketAddr,
    /// Users allowed in, with their passwords; `None` lets anyone in
    /// (loopback only).
    pub users: Option<Users>,
    /// TLS certificate chain and private key, PEM files.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Connections served at once (default 64).
    pub max_connections: usize,
    /// Each query's memory limit (default 256 MiB).
    pub query_memory: usize,
    /// How long running connections may go on after shutdown is asked
    /// (default 5 s).
    pub grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 5433)),
            users: None,
            tls: None,
            max_connections: 64,
            query_memory: 256 << 20,
            grace: Duration::from_secs(5),
        }
    }
}

impl ServeOptions {
    /// Refuses settings that would expose the database: listening beyond
    /// loopback with no authentication.
    pub fn check(&self) -> Result<(), String> {
        if !self.listen.ip().is_loopback() && self.users.is_none() {
            return Err(format!(
                "refusing to listen on {} without authentication: give a users file \
                 (--users FILE, lines of name:password) or listen on 127.0.0.1",
                self.listen
            ));
        }
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        Ok(())
    }
}

/// A bound server, ready to serve.
pub struct Server {
    listener: TcpListener,
    db: Db,
    opts: ServeOptions,
    tls: Option<TlsAcceptor>,
}

impl Server {
    /// Checks the options and binds the address.
    pub async fn bind(db: Db, opts: ServeOptions) -> io::Result<Server> {
        opts.check()
            .map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
        let tls = match &opts.tls {
            Some((cert, key)) => Some(tls_acceptor(cert, key)?),
            None => None,
        };
        let listener = TcpListener::bind(opts.listen).await?;
        Ok(Server {
            listener,
            db,
            opts,
            tls,
        })
    }

    /// The address bound (useful when listening on port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then waits up to the grace period
    /// for running connections.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let slots = Arc::new(Semaphore::new(self.opts.max_connections));
        let mut tasks = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let (socket, _peer) = tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    // A failed accept (out of descriptors, say) should not
                    // stop the server; pause so as not to spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = socket.set_nodelay(true);
            let permit = Arc::clone(&slots).try_acquire_owned().ok();
            let handlers = match permit {
                Some(_) => self.handlers(),
                None => Err(too_many()),
            };
            let tls = self.tls.clone();
            tasks.spawn(async move {
                let _permit = permit;
                match handlers {
                    Ok(h) => {
                        let _ = process_socket(socket, tls, h).await;
                    }
                    Err(refusal) => {
                        let _ = process_socket(socket, tls, refusal).await;
                    }
                }
            });
            // Reap finished connections so the set does not grow.
            while tasks.try_join_next().is_some() {}
        }
        drop(self.listener);
        let _ = tokio::time::timeout(self.opts.grace, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        tasks.abort_all();
        Ok(())
    }

    /// A connection's handlers: its own session (and memory pool).
    fn handlers(&self) -> Result<Arc<Handlers>, Arc<Refusal>> {
        let engine = SqlEngine::with_options(
            self.db.clone(),
            SqlOptions {
                memory_limit: Some(self.opts.query_memory),
                ..SqlOptions::default()
            },
        )
        .map_err(|e| Arc::new(Refusal::new("XX000", e.to_string())))?;
        let ctx = Arc::new(engine.context().clone());
        setup_pg_catalog(&ctx, crate::engine::CATALOG, EmptyContextProvider)
            .map_err(|e| Arc::new(Refusal::new("XX000", e.to_string())))?;
        let mut hooks: Vec<Arc<dyn QueryHook>> =
            vec![Arc::new(hook::StrataHook::new(self.db.clone()))];
        // What datafusion-postgres installs by default: cursors, SET and
        // SHOW, transaction statements.
        hooks.push(Arc::new(CursorStatementHook));
        hooks.push(Arc::new(SetShowHook));
        hooks.push(Arc::new(TransactionStatementHook));
        let service = Arc::new(DfSessionService::new_with_hooks(ctx, hooks));
        let params = Arc::new(DefaultServerParameterProvider::default());
        let startup = match &self.opts.users {
            Some(users) => Startup::Scram(
                SASLAuthStartupHandler::new(params)
                    .with_scram(ScramAuth::new(Arc::new(users.clone()))),
            ),
            None => Startup::Open(OpenStartup),
        };
        Ok(Arc::new(Handlers {
            service,
            startup: Arc::new(startup),
        }))
    }
}

fn too_many() -> Arc<Refusal> {
    Arc::new(Refusal::new(
        "53300",
        "too many connections: the server's limit is reached; try again later".into(),
    ))
}

fn tls_acceptor(cert: &std::path::Path, key: &std::path::Path) -> io::Result<TlsAcceptor> {
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let certs = rustls_pemfile::certs(&mut cert_pem.as_slice()).collect::<Result<Vec<_>, _>>()?;
    if certs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: no certificate", cert.display()),
        ));
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_slice())?.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: no private key", key.display()),
        )
    })?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Startup without authentication.
struct OpenStartup;

impl NoopStartupHandler for OpenStartup {}

/// How a connection starts: SCRAM, or open (loopback only).
enum Startup {
    Scram(SASLAuthStartupHandler<DefaultServerParameterProvider>),
    Open(OpenStartup),
}

#[async_trait::async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self {
            Startup::Scram(h) => h.on_startup(client, message).await,
            Startup::Open(h) => h.on_startup(client, message).await,
        }
    }
}

/// One connection's handlers.
struct Handlers {
    service: Arc<DfSessionService>,
    startup: Arc<Startup>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(
        &self,
    ) -> Arc<impl datafusion_postgres::pgwire::api::query::SimpleQueryHandler> {
        Arc::clone(&self.service)
    }

    fn extended_query_handler(
        &self,
    ) -> Arc<impl datafusion_postgres::pgwire::api::query::ExtendedQueryHandler> {
        Arc::clone(&self.service)
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.startup)
    }

    fn error_handler(&self) -> Arc<impl ErrorHandler> {
        Arc::new(SqlStateErrors)
    }
}

/// Gives query errors their SQLSTATE and the engine's message.
struct SqlStateErrors;

impl ErrorHandler for SqlStateErrors {
    fn on_error<C>(&self, _client: &C, error: &mut PgWireError)
    where
        C: ClientInfo,
    {
        let PgWireError::ApiError(inner) = error else {
            return;
        };
        if let Some(p) = inner.downcast_ref::<datafusion::sql::sqlparser::parser::ParserError>() {
            *error = PgWireError::UserError(Box::new(ErrorInfo::new(
                "ERROR".into(),
                "42601".into(),
                p.to_string(),
            )));
            return;
        }
        let Some(df) = inner.downcast_ref::<DataFusionError>() else {
            return;
        };
        let message = match crate::error::as_engine_error(df) {
            Some(e) => e.to_string(),
            None => df.to_string(),
        };
        *error = PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".into(),
            errors::query_sqlstate(df).into(),
            message,
        )));
    }
}

/// Handlers that refuse a connection at startup with one error.
struct Refusal {
    code: &'static str,
    message: String,
}

impl Refusal {
    fn new(code: &'static str, message: String) -> Refusal {
        Refusal { code, message }
    }
}

#[async_trait::async_trait]
impl StartupHandler for Refusal {
    async fn on_startup<C>(
        &self,
        _client: &mut C,
        _message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Err(PgWireError::UserError(Box::new(ErrorInfo::new(
            "FATAL".into(),
            self.code.into(),
            self.message.clone(),
        ))))
    }
}

impl PgWireServerHandlers for Refusal {
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::new(Refusal::new(self.code, self.message.clone()))
    }
}

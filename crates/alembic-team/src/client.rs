//! [`PgClient`]: a synchronous handle on a PostgreSQL pool.
//!
//! The memory API is synchronous (SQLite), sqlx is async. Each client owns one thread that
//! runs a current-thread tokio runtime; [`PgClient::run`] sends it a job and blocks on the
//! answer. Blocking on a channel is safe from any thread, inside a tokio runtime or not,
//! which `Runtime::block_on` is not.

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};
use tokio::sync::mpsc;

use crate::config::TeamConfig;
use crate::error::TeamError;

type Job = Box<dyn FnOnce(PgPool) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// Connections to one team server (see the module docs).
pub struct PgClient {
    server: String,
    options: PgConnectOptions,
    timeout: Duration,
    jobs: mpsc::UnboundedSender<Job>,
}

impl std::fmt::Debug for PgClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgClient")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl PgClient {
    /// Connects once (bounded by the config's timeout) so a server that is down is reported
    /// now with its cause, then keeps a lazy pool for the queries.
    pub fn connect(config: &TeamConfig) -> Result<PgClient, TeamError> {
        crate::config::check_url(&config.url)?;
        let options = PgConnectOptions::from_str(&config.url).map_err(|e| TeamError::BadUrl {
            reason: e.to_string(),
        })?;
        let server = describe(&options);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TeamError::Worker {
                reason: e.to_string(),
            })?;
        let pool = {
            let _entered = runtime.enter();
            // no ping before each acquire (a round trip per transaction): a connection the
            // server dropped fails its first query, which `explain` turns into the same
            // named error after probing the server
            PgPoolOptions::new()
                .max_connections(8)
                .test_before_acquire(false)
                .acquire_timeout(config.connect_timeout)
                .connect_lazy_with(options.clone())
        };
        let jobs = spawn_worker(runtime, pool)?;
        let client = PgClient {
            server,
            options,
            timeout: config.connect_timeout,
            jobs,
        };
        if let Some(cause) = client.probe() {
            return Err(TeamError::Unreachable {
                server: client.server.clone(),
                cause,
            });
        }
        Ok(client)
    }

    /// `host:port/database`, for messages.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Runs `f` on the pool and waits for its result. Query errors come back naming the
    /// server; a connection failure says why the server could not be reached.
    pub fn run<T, F, Fut>(&self, f: F) -> Result<T, TeamError>
    where
        T: Send + 'static,
        F: FnOnce(PgPool) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, TeamError>> + Send + 'static,
    {
        match self.run_raw(f)? {
            Err(TeamError::Sql(e)) => Err(self.explain(e)),
            other => other,
        }
    }

    /// [`Self::run`] for a store: `f` also gets a clone of the store's `ctx` (its team and
    /// author), and the error comes back as the store's own type (domain errors keep their
    /// variant, server trouble names the server).
    pub fn run_as<C, T, E, F, Fut>(&self, ctx: &C, f: F) -> Result<T, E>
    where
        C: Clone + Send + 'static,
        T: Send + 'static,
        E: From<TeamError>,
        F: FnOnce(C, PgPool) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, TeamError>> + Send + 'static,
    {
        let ctx = ctx.clone();
        self.run(move |pool| f(ctx, pool)).map_err(E::from)
    }

    fn explain(&self, e: sqlx::Error) -> TeamError {
        let connection_trouble = matches!(
            e,
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::Tls(_)
        );
        if connection_trouble && let Some(cause) = self.probe() {
            return TeamError::Unreachable {
                server: self.server.clone(),
                cause,
            };
        }
        TeamError::Database {
            server: self.server.clone(),
            source: e,
        }
    }

    /// Connects once, directly, within the timeout; `Some(cause)` when that fails.
    fn probe(&self) -> Option<String> {
        let (options, timeout) = (self.options.clone(), self.timeout);
        let attempt = self.run_raw(move |_| async move {
            match tokio::time::timeout(timeout, sqlx::PgConnection::connect_with(&options)).await {
                Ok(Ok(conn)) => {
                    let _ = conn.close().await;
                    None
                }
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some(format!("no answer within {} s", timeout.as_secs_f64())),
            }
        });
        attempt.unwrap_or_else(|e| Some(e.to_string()))
    }

    /// Sends `f` to the connection thread and blocks until it answers.
    fn run_raw<T, F, Fut>(&self, f: F) -> Result<T, TeamError>
    where
        T: Send + 'static,
        F: FnOnce(PgPool) -> Fut + Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        let (done, answer) = std::sync::mpsc::sync_channel(1);
        let job: Job = Box::new(move |pool| {
            Box::pin(async move {
                let _ = done.send(f(pool).await);
            })
        });
        let gone = |reason: &str| TeamError::Worker {
            reason: reason.into(),
        };
        self.jobs.send(job).map_err(|_| gone("it exited"))?;
        answer.recv().map_err(|_| gone("a job was dropped"))
    }
}

/// The connection thread: runs each job on the pool until every sender is gone.
fn spawn_worker(
    runtime: tokio::runtime::Runtime,
    pool: PgPool,
) -> Result<mpsc::UnboundedSender<Job>, TeamError> {
    let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
    std::thread::Builder::new()
        .name("alembic-team".into())
        .spawn(move || {
            runtime.block_on(async move {
                while let Some(job) = queue.recv().await {
                    tokio::spawn(job(pool.clone()));
                }
                pool.close().await;
            })
        })
        .map_err(|e| TeamError::Worker {
            reason: e.to_string(),
        })?;
    Ok(jobs)
}

fn describe(options: &PgConnectOptions) -> String {
    format!(
        "{}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("postgres")
    )
}

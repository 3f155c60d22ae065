//! The SQLite audit sink: a background thread writes records in batches, so that a tool call
//! only pays for a channel send.

use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use alembic_base::lock;
use alembic_store::rusqlite::{self, Connection};

use super::chain::Chain;
use super::{AuditEntry, AuditError, AuditInput, AuditSink, open_audit_db};

// Unboxed on purpose: a box per record is one more allocation the caller makes and the
// writer thread frees, and cross-thread frees showed up in the per-call profile.
enum WriterMsg {
    Entry(AuditEntry),
    Input(AuditInput),
    Flush(Sender<Result<(), String>>),
}

/// The SQLite audit sink with a background writer thread.
pub struct AuditLog {
    tx: Mutex<Option<Sender<WriterMsg>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditLog")
    }
}

impl AuditLog {
    /// Opens (creating) the audit table in the database at `path`, with its key and anchor
    /// beside it, and starts the writer.
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        let mut conn = open_audit_db(path)?;
        let chain = Chain::open(&mut conn)?;
        let (tx, rx) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("alembic-audit".into())
            .spawn(move || writer_loop(conn, chain, rx))
            .map_err(|_| AuditError::WriterGone)?;
        Ok(AuditLog {
            tx: Mutex::new(Some(tx)),
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Opens the audit log of a project (`<root>/.alembic/alembic.db`).
    pub fn open_project(root: &Path) -> Result<Self, AuditError> {
        let conn = alembic_store::open_project(root)?;
        drop(conn);
        Self::open(&alembic_store::project_db_path(root))
    }

    /// Blocks until every entry sent before this call is committed.
    pub fn flush(&self) -> Result<(), AuditError> {
        let (ack_tx, ack_rx) = mpsc::channel();
        {
            let guard = lock(&self.tx);
            let tx = guard.as_ref().ok_or(AuditError::WriterGone)?;
            tx.send(WriterMsg::Flush(ack_tx))
                .map_err(|_| AuditError::WriterGone)?;
        }
        match ack_rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(AuditError::Sqlite(rusqlite::Error::InvalidParameterName(e))),
            Err(_) => Err(AuditError::WriterGone),
        }
    }
}

impl AuditLog {
    fn send(&self, msg: WriterMsg) {
        let guard = lock(&self.tx);
        if let Some(tx) = guard.as_ref()
            && tx.send(msg).is_err()
        {
            tracing::error!("audit writer has stopped; a record was lost");
        }
    }
}

impl AuditSink for AuditLog {
    fn record(&self, entry: AuditEntry) {
        self.send(WriterMsg::Entry(entry));
    }

    fn record_input(&self, input: AuditInput) {
        self.send(WriterMsg::Input(input));
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        // Closing the channel lets the writer drain what is queued and exit.
        lock(&self.tx).take();
        if let Some(handle) = lock(&self.worker).take() {
            let _ = handle.join();
        }
    }
}

fn writer_loop(mut conn: Connection, chain: Chain, rx: Receiver<WriterMsg>) {
    let mut pending: Vec<AuditEntry> = Vec::new();
    let mut acks: Vec<Sender<Result<(), String>>> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                WriterMsg::Entry(e) => pending.push(e),
                WriterMsg::Input(i) => pending.push(i.into_entry()),
                WriterMsg::Flush(ack) => acks.push(ack),
            }
            next = if pending.len() >= 512 {
                None
            } else {
                rx.try_recv().ok()
            };
        }
        let result = write_with_retry(&mut conn, &chain, &pending);
        if let Err(e) = &result {
            tracing::error!("audit write failed, {} records lost: {e}", pending.len());
        }
        pending.clear();
        for ack in acks.drain(..) {
            let _ = ack.send(result.clone());
        }
    }
}

fn write_with_retry(
    conn: &mut Connection,
    chain: &Chain,
    entries: &[AuditEntry],
) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    // A failed append rolled back, so the retry cannot write a record twice.
    chain
        .append(conn, entries)
        .or_else(|_| chain.append(conn, entries))
        .map_err(|e| e.to_string())
}

//! Open connections before authentication: a cap in all and per client IP. A connection that
//! has not sent a byte yet is idle and can be evicted: at a cap, the oldest idle connection
//! (of that IP for the per-IP cap) is closed to make room, so silent sockets cannot starve
//! clients that do send requests. When every connection at the cap is busy, the new one is
//! answered 503 (in all) or 429 (per IP) and closed. Idle connections that are never evicted
//! are closed by the header timeout (`http.rs`).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use alembic_base::lock;
use tokio_util::sync::CancellationToken;

/// Which cap refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnectionCap {
    Total(usize),
    PerIp(usize),
}

impl ConnectionCap {
    /// A complete HTTP/1.1 answer for a plain-text connection refused at the cap.
    pub(crate) fn response(self) -> String {
        let (status, message) = match self {
            ConnectionCap::Total(n) => (
                "503 Service Unavailable",
                format!(
                    "the server has its maximum of {n} open connections ([mcp.http] max_connections); retry in a few seconds"
                ),
            ),
            ConnectionCap::PerIp(n) => (
                "429 Too Many Requests",
                format!(
                    "your address has its maximum of {n} open connections ([mcp.http] max_connections_per_ip); close some or retry in a few seconds"
                ),
            ),
        };
        let body = serde_json::json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32000, "message": message}})
        .to_string();
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nretry-after: 5\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    }
}

struct Entry {
    ip: IpAddr,
    /// Cancelled to evict the connection; `None` once it has sent something.
    idle: Option<CancellationToken>,
}

#[derive(Default)]
struct State {
    next: u64,
    /// By admission order, so the first idle entry is the oldest.
    open: BTreeMap<u64, Entry>,
    per_ip: HashMap<IpAddr, usize>,
}

impl State {
    fn remove(&mut self, id: u64) {
        if let Some(e) = self.open.remove(&id)
            && let Some(n) = self.per_ip.get_mut(&e.ip)
        {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&e.ip);
            }
        }
    }

    /// Evicts the oldest idle connection (of `ip` when given); false when none is idle.
    fn evict_idle(&mut self, ip: Option<IpAddr>) -> bool {
        let victim = self
            .open
            .iter()
            .find(|(_, e)| e.idle.is_some() && ip.is_none_or(|ip| e.ip == ip))
            .map(|(id, _)| *id);
        let Some(id) = victim else { return false };
        if let Some(token) = self.open.get_mut(&id).and_then(|e| e.idle.take()) {
            token.cancel();
        }
        self.remove(id);
        true
    }
}

/// The open connections of one server.
pub(crate) struct Connections {
    state: Mutex<State>,
    max_total: usize,
    max_per_ip: usize,
}

/// One admitted connection; dropping it frees its place.
pub(crate) struct Slot {
    id: u64,
    connections: Arc<Connections>,
    /// Cancelled when the connection is evicted while idle.
    pub(crate) evicted: CancellationToken,
}

impl Slot {
    /// The connection has sent something: it is no longer evictable.
    pub(crate) fn busy(&self) {
        if let Some(e) = lock(&self.connections.state).open.get_mut(&self.id) {
            e.idle = None;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.connections.state).remove(self.id);
    }
}

impl Connections {
    pub(crate) fn new(max_total: usize, max_per_ip: usize) -> Arc<Self> {
        Arc::new(Connections {
            state: Mutex::new(State::default()),
            max_total: max_total.max(1),
            max_per_ip: max_per_ip.max(1),
        })
    }

    /// A place for a new connection from `ip`, evicting an idle one if a cap is reached.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, ConnectionCap> {
        let mut s = lock(&self.state);
        if s.per_ip.get(&ip).copied().unwrap_or(0) >= self.max_per_ip && !s.evict_idle(Some(ip)) {
            return Err(ConnectionCap::PerIp(self.max_per_ip));
        }
        if s.open.len() >= self.max_total && !s.evict_idle(None) {
            return Err(ConnectionCap::Total(self.max_total));
        }
        let id = s.next;
        s.next += 1;
        let evicted = CancellationToken::new();
        s.open.insert(
            id,
            Entry {
                ip,
                idle: Some(evicted.clone()),
            },
        );
        *s.per_ip.entry(ip).or_default() += 1;
        Ok(Slot {
            id,
            connections: Arc::clone(self),
            evicted,
        })
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        lock(&self.state).open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn at_the_per_ip_cap_the_oldest_idle_connection_of_that_ip_makes_room() {
        let c = Connections::new(10, 2);
        let first = c.admit(A).unwrap();
        let second = c.admit(A).unwrap();
        let other = c.admit(B).unwrap();
        second.busy();
        let third = c.admit(A).unwrap();
        assert!(
            first.evicted.is_cancelled(),
            "the oldest idle one of A goes"
        );
        assert!(!second.evicted.is_cancelled() && !other.evicted.is_cancelled());
        third.busy();
        // Every connection of A is busy now: the next one is refused, B still gets in.
        assert_eq!(c.admit(A).err(), Some(ConnectionCap::PerIp(2)));
        assert!(c.admit(B).is_ok());
        drop(first);
        assert_eq!(c.open(), 3, "an evicted slot is not counted twice");
    }

    #[test]
    fn at_the_total_cap_any_idle_connection_makes_room_and_busy_ones_refuse() {
        let c = Connections::new(2, 10);
        let a = c.admit(A).unwrap();
        let b = c.admit(B).unwrap();
        let c3 = c.admit(B).unwrap();
        assert!(a.evicted.is_cancelled() && !b.evicted.is_cancelled());
        b.busy();
        c3.busy();
        assert_eq!(c.admit(A).err(), Some(ConnectionCap::Total(2)));
        drop(b);
        assert!(c.admit(A).is_ok(), "a closed connection frees its place");
        assert!(
            ConnectionCap::Total(2)
                .response()
                .starts_with("HTTP/1.1 503 Service Unavailable\r\n")
        );
    }
}

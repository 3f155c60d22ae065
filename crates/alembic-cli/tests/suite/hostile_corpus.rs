//! The hostile-message corpus of the MCP robustness tests, shared by stdio
//! (`mcp_robustness.rs`) and streamable HTTP (`mcp_http_robustness.rs`): 27 kinds of malformed
//! or hostile JSON-RPC messages from a deterministic generator, each with the answers it must
//! provoke.

use serde_json::{Value, json};

/// A deterministic generator (xorshift64*), so a failure can be replayed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn text(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from(b' ' + self.below(95) as u8))
            .collect()
    }
}

/// One hostile line and what it must provoke.
pub struct Hostile {
    pub line: Vec<u8>,
    /// Ids that must each get exactly one error answer.
    pub ids: Vec<i64>,
    /// How many answers with `"id": null` it must get.
    pub null_answers: usize,
}

fn with_id(line: Value, id: i64) -> Hostile {
    Hostile {
        line: line.to_string().into_bytes(),
        ids: vec![id],
        null_answers: 0,
    }
}

fn silent(line: Value) -> Hostile {
    Hostile {
        line: line.to_string().into_bytes(),
        ids: vec![],
        null_answers: 0,
    }
}

fn null_answered(line: Vec<u8>) -> Hostile {
    Hostile {
        line,
        ids: vec![],
        null_answers: 1,
    }
}

/// Builds message `n` (its id is `n` when it has one) of the given kind.
pub fn hostile(rng: &mut Rng, n: i64, kind: usize) -> Hostile {
    match kind {
        // Bad JSON: truncated, unbalanced, invalid UTF-8, random printable noise in braces.
        0 => null_answered(format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call""#).into_bytes()),
        1 => {
            let len = 1 + rng.below(200);
            null_answered(format!("{{{}", rng.text(len)).into_bytes())
        }
        2 => null_answered(vec![0xff, 0xfe, b'{', 0x80, 0x81]),
        // Wrong types for known methods.
        3 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": "text"}), n),
        4 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": 5}}), n),
        5 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "read_project_file", "arguments": [1, 2]}}), n),
        6 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": 17}), n),
        7 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "initialize", "params": {"protocolVersion": 5}}), n),
        8 => with_id(json!({"jsonrpc": 2, "id": n, "method": "ping"}), n),
        // Unknown methods.
        9 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": format!("x/{}", rng.text(12))}), n),
        10 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}), n),
        // Hostile but well-formed tool calls: error results.
        11 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "read_project_file", "arguments": {"filePath": "../../etc/passwd"}}}), n),
        12 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": format!("no_tool_{}", rng.below(1000)), "arguments": {}}}), n),
        13 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "get_tool_details", "arguments": {"toolName": {"nested": [n]}}}}), n),
        // Huge strings.
        14 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "read_project_file", "arguments": {"filePath": "x".repeat(65_536 + rng.below(200_000))}}}), n),
        15 => with_id(json!({"jsonrpc": "2.0", "id": n, "method": "x/huge", "params": {"pad": "y".repeat(100_000)}}), n),
        // Batches.
        16 => Hostile {
            line: json!([{"jsonrpc": "2.0", "id": n, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/initialized"}, 7]).to_string().into_bytes(),
            ids: vec![n],
            null_answers: 1,
        },
        17 => null_answered(b"[]".to_vec()),
        // Ids JSON-RPC does not allow.
        18 => null_answered(json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}).to_string().into_bytes()),
        19 => null_answered(json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}).to_string().into_bytes()),
        20 => null_answered(json!({"jsonrpc": "2.0", "id": {"a": [n]}, "method": "ping"}).to_string().into_bytes()),
        // Valid JSON that is not a message.
        21 => null_answered(json!(rng.below(1000)).to_string().into_bytes()),
        22 => null_answered(json!({"hello": "world"}).to_string().into_bytes()),
        // Notifications and responses: never answered.
        23 => silent(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nope"}})),
        24 => silent(json!({"jsonrpc": "2.0", "method": format!("notifications/{}", rng.text(8)), "params": [1]})),
        25 => silent(json!({"jsonrpc": "2.0", "id": n, "result": {"unexpected": true}})),
        _ => silent(json!({"jsonrpc": "2.0", "id": n, "error": {"code": 1, "message": "stray"}})),
    }
}

pub const KINDS: usize = 27;

pub fn is_error_answer(v: &Value) -> bool {
    v.get("error").is_some() || v["result"]["isError"] == true
}

pub fn init_line() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}})
    .to_string()
    .into_bytes()
}

//! A tiny configuration of the `mcp-http` load benchmark, in debug, so that it cannot rot:
//! two sessions with their own tokens, every tool of the mix, no errors, server RSS read.

use assert_cmd::Command;
use pretty_assertions::assert_eq;
use serde_json::Value;

#[test]
fn a_small_mcp_http_load_runs_without_errors() {
    let out = Command::cargo_bin("alembic-bench")
        .unwrap()
        .args(["mcp-http", "--sessions", "2", "--calls", "8", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (r["calls"].as_u64(), r["errors"].as_u64()),
        (Some(16), Some(0)),
        "{r}"
    );
    let tools = r["per_tool"].as_object().unwrap();
    assert_eq!(tools.len(), 8, "{r}");
    assert!(
        tools
            .values()
            .all(|t| t["calls"] == 2 && t["p95_ms"].as_f64() >= t["p50_ms"].as_f64())
    );
    assert!(r["rss_before_kib"].as_u64().unwrap() > 0, "{r}");
    assert!(
        r["rss_peak_kib"].as_u64() >= r["rss_after_kib"].as_u64(),
        "{r}"
    );
}

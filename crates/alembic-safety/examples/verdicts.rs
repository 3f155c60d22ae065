//! Prints the verdict for each line of a command corpus: `cargo run --example verdicts FILE`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let guard = alembic_safety::PathGuard::new(dir.path())?;
    let policy = alembic_safety::CommandPolicy::new();
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: verdicts FILE.jsonl")?;
    for line in std::fs::read_to_string(path)?.lines() {
        let case: serde_json::Value = serde_json::from_str(line)?;
        let command = case["command"].as_str().unwrap_or_default();
        let verdict = policy.evaluate(command, &guard);
        println!(
            "{:<15} {:<32} {command:?}\n      {}",
            verdict.kind(),
            verdict.rule().unwrap_or("-"),
            verdict.reason().unwrap_or("")
        );
    }
    Ok(())
}

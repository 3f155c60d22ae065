//! Resources, prompts, completion, logging and list_changed notifications.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use alembic_base::ManualClock;
use alembic_mcp::{ProjectContent, SkillDir};
use alembic_runtime::forge::{ForgeMode, TemporaryToolRegistry};
use alembic_tools::{EffectClass, ToolDefinition, ToolModule, ToolOutput, handler_fn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Session, TestServer, within};

const POLL: Duration = Duration::from_millis(50);

fn write_skill(root: &Path, name: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: \"{name} skill\"\n---\n\n{body}\n"),
    )
    .unwrap();
    let schema = json!({
        "name": name,
        "description": format!("{name} skill"),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file to work on"},
                "mode": {"type": "string", "enum": ["fast", "full"]}
            },
            "required": ["path"]
        }
    });
    std::fs::write(dir.join("schema.json"), schema.to_string()).unwrap();
}

/// A session whose server publishes the skills under a temp dir and polls quickly.
fn session_with_skills() -> (Session, tempfile::TempDir) {
    let skills = tempfile::tempdir().unwrap();
    write_skill(skills.path(), "count-lines", "Counts the lines of a file.");
    let mut test = TestServer::new();
    test.server = test
        .server
        .with_content(ProjectContent {
            knowledge: None,
            memory: None,
            skills: Arc::new(SkillDir::new(skills.path())),
        })
        .with_poll_interval(POLL);
    (Session::start_with(test), skills)
}

async fn initialize(s: &mut Session) {
    let init = s
        .request(1, "initialize", super::support::init_params("surface-test"))
        .await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(caps["tools"]["listChanged"], true);
    assert!(
        caps["logging"].is_object() && caps["completions"].is_object(),
        "{caps}"
    );
    s.notify("notifications/initialized", json!({})).await;
}

/// Reads messages until a notification with `method` arrives (keeping the others).
async fn notification(s: &mut Session, method: &str) -> Value {
    if let Some(i) = s.notifications.iter().position(|n| n["method"] == method) {
        return s.notifications.remove(i);
    }
    within(Duration::from_secs(10), method, async {
        loop {
            let msg = s.next().await;
            if msg["method"] == method {
                return msg;
            }
            s.notifications.push(msg);
        }
    })
    .await
}

#[tokio::test]
async fn skills_are_resources_and_prompts_with_completion() {
    let (mut s, _skills) = session_with_skills();
    initialize(&mut s).await;
    let list = s.request(2, "resources/list", json!({})).await;
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["alembic://overview", "alembic://skill/count-lines"]);
    let templates = s.request(3, "resources/templates/list", json!({})).await;
    let names: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "alembic://recipe/{id}",
            "alembic://skill/{name}",
            "alembic://memories/{scope}"
        ]
    );
    let read = s
        .request(
            4,
            "resources/read",
            json!({"uri": "alembic://skill/count-lines"}),
        )
        .await;
    let content = &read["result"]["contents"][0];
    assert_eq!(content["mimeType"], "text/markdown");
    assert!(
        content["text"]
            .as_str()
            .unwrap()
            .contains("Counts the lines"),
        "{read}"
    );
    let missing = s
        .request(5, "resources/read", json!({"uri": "alembic://skill/nope"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let bad = s
        .request(6, "resources/read", json!({"uri": "file:///etc/passwd"}))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    let prompts = s.request(7, "prompts/list", json!({})).await;
    assert_eq!(
        prompts["result"]["prompts"],
        json!([{
            "name": "count-lines",
            "description": "count-lines skill",
            "arguments": [
                {"name": "mode", "required": false},
                {"name": "path", "description": "file to work on", "required": true}
            ]
        }])
    );
    let got = s
        .request(
            8,
            "prompts/get",
            json!({"name": "count-lines", "arguments": {"path": "a.rs"}}),
        )
        .await;
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("Counts the lines") && text.contains("\"path\":\"a.rs\""),
        "{text}"
    );
    let no_arg = s
        .request(9, "prompts/get", json!({"name": "count-lines"}))
        .await;
    assert_eq!(no_arg["error"]["code"], -32602, "{no_arg}");

    let complete = |id: i64, r: Value, name: &str, value: &str| json!({"ref": r, "argument": {"name": name, "value": value}, "_id": id});
    let c = s
        .request(
            10,
            "completion/complete",
            complete(
                10,
                json!({"type": "ref/prompt", "name": "count-lines"}),
                "mode",
                "f",
            ),
        )
        .await;
    assert_eq!(
        c["result"]["completion"],
        json!({"values": ["fast", "full"], "total": 2, "hasMore": false})
    );
    let c = s
        .request(
            11,
            "completion/complete",
            complete(
                11,
                json!({"type": "ref/resource", "uri": "alembic://skill/{name}"}),
                "name",
                "cou",
            ),
        )
        .await;
    assert_eq!(c["result"]["completion"]["values"], json!(["count-lines"]));
    let c = s
        .request(
            12,
            "completion/complete",
            complete(
                12,
                json!({"type": "ref/prompt", "name": "unknown"}),
                "x",
                "",
            ),
        )
        .await;
    assert_eq!(c["result"]["completion"]["values"], json!([]));
    s.close().await;
}

#[tokio::test]
async fn subscribed_resources_and_lists_announce_changes() {
    let (mut s, skills) = session_with_skills();
    initialize(&mut s).await;
    let sub = s
        .request(
            2,
            "resources/subscribe",
            json!({"uri": "alembic://skill/count-lines"}),
        )
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    let overview = s
        .request(
            3,
            "resources/subscribe",
            json!({"uri": "alembic://overview"}),
        )
        .await;
    assert_eq!(overview["error"]["code"], -32602, "{overview}");

    write_skill(skills.path(), "count-lines", "Counts lines, now faster.");
    let updated = notification(&mut s, "notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], "alembic://skill/count-lines");

    write_skill(skills.path(), "format-code", "Formats code.");
    notification(&mut s, "notifications/resources/list_changed").await;
    notification(&mut s, "notifications/prompts/list_changed").await;

    let unsub = s
        .request(
            4,
            "resources/unsubscribe",
            json!({"uri": "alembic://skill/count-lines"}),
        )
        .await;
    assert_eq!(unsub["result"], json!({}));
    s.close().await;
}

fn forged_tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "A forged test tool.",
        json!({"type": "object", "properties": {}}),
        ToolModule::Composite,
        EffectClass::ReadOnly,
        handler_fn(|_, _| async { Ok(ToolOutput::new(json!({}), "ok")) }),
    )
}

#[tokio::test]
async fn forged_tools_appearing_and_expiring_are_announced() {
    let mut test = TestServer::new();
    let registry = Arc::clone(test.server_registry());
    let clock = Arc::new(ManualClock::new(1_000_000));
    let temporary = TemporaryToolRegistry::with_clock(registry, clock.clone());
    test.server = test
        .server
        .with_temporary(temporary.clone())
        .with_poll_interval(POLL);
    let mut s = Session::start_with(test);
    initialize(&mut s).await;
    // The watcher starts with `initialized`; a request answered after it proves it is running.
    s.request(2, "ping", json!({})).await;

    temporary
        .register(
            forged_tool("forged_probe"),
            ForgeMode::Compose,
            Some(Duration::from_secs(60)),
        )
        .unwrap();
    notification(&mut s, "notifications/tools/list_changed").await;
    let list = s.request(3, "tools/list", json!({})).await;
    assert!(
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "forged_probe"),
        "a live forged tool is listed: {list}"
    );

    clock.advance(Duration::from_secs(61));
    notification(&mut s, "notifications/tools/list_changed").await;
    let list = s.request(4, "tools/list", json!({})).await;
    assert!(
        !list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "forged_probe"),
        "an expired forged tool is gone: {list}"
    );
    s.close().await;
}

#[tokio::test]
async fn log_messages_follow_the_level_the_client_set() {
    let mut s = Session::initialized("log-test").await;
    let set = s
        .request(2, "logging/setLevel", json!({"level": "warning"}))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    // The level reaches the watcher asynchronously; publish until the warning arrives.
    let record = |level, message: &str| alembic_mcp::logging::LogRecord {
        level,
        logger: "alembic_mcp::test".into(),
        message: message.into(),
    };
    let got = within(Duration::from_secs(10), "a log notification", async {
        loop {
            alembic_mcp::logging::publish(record(rmcp_level("info"), "too quiet"));
            alembic_mcp::logging::publish(record(rmcp_level("error"), "disk full"));
            tokio::time::sleep(Duration::from_millis(20)).await;
            if let Some(n) = s
                .notifications
                .iter()
                .find(|n| n["method"] == "notifications/message")
            {
                return n.clone();
            }
            s.request(3, "ping", json!({})).await;
        }
    })
    .await;
    assert_eq!(got["params"]["level"], "error");
    assert_eq!(got["params"]["data"], json!({"message": "disk full"}));
    assert!(
        s.notifications
            .iter()
            .all(|n| n["params"]["data"]["message"] != "too quiet"),
        "an info record passed a warning threshold: {:?}",
        s.notifications
    );
    s.close().await;
}

#[allow(
    deprecated,
    reason = "MCP logging levels, deprecated by SEP-2577, are what the test sends"
)]
fn rmcp_level(name: &str) -> rmcp::model::LoggingLevel {
    serde_json::from_value(json!(name)).unwrap()
}

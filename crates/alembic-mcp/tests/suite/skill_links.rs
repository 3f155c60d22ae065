//! Skills are read in the server, outside any sandbox: a symbolic link in `.alembic/skills`
//! that leads out of the project must never serve the file it points at, through
//! `resources/read`, `prompts/get`, the listings or completion. Links that stay inside work.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use alembic_mcp::{ProjectContent, SkillDir, SkillSource};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Session, TestServer};

const SECRET: &str = "TOP-SECRET-7f3a";

fn skill_text(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: \"{name} skill\"\n---\n\n{body}\n")
}

/// A project with one ordinary skill, `good`, and a secret file in a directory outside it.
struct Fixture {
    root: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let good = root.path().join(".alembic/skills/good");
        std::fs::create_dir_all(&good).unwrap();
        std::fs::write(good.join("SKILL.md"), skill_text("good", "Good body.")).unwrap();
        std::fs::write(outside.path().join("secret.md"), skill_text("leak", SECRET)).unwrap();
        Fixture { root, outside }
    }

    fn skills(&self) -> std::path::PathBuf {
        self.root.path().join(".alembic/skills")
    }

    fn secret(&self) -> std::path::PathBuf {
        self.outside.path().join("secret.md")
    }

    fn source(&self) -> SkillDir {
        SkillDir::for_project(self.root.path())
    }

    async fn session(&self) -> Session {
        let mut test = TestServer::new();
        test.server = test.server.with_content(ProjectContent {
            knowledge: None,
            memory: None,
            skills: Arc::new(self.source()),
        });
        let mut s = Session::start_with(test);
        s.request(1, "initialize", super::support::init_params("links"))
            .await;
        s.notify("notifications/initialized", json!({})).await;
        s
    }
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|r| r[field].as_str().unwrap().to_string())
        .collect()
}

/// Every way a client can reach skill `name` refuses it and never shows `secret`.
async fn assert_refused_everywhere(fx: &Fixture, name: &str, secret: &str) {
    let mut s = fx.session().await;
    let uri = format!("alembic://skill/{name}");
    let read = s.request(2, "resources/read", json!({"uri": uri})).await;
    assert!(read["error"].is_object(), "{read}");
    assert!(!read.to_string().contains(secret), "{read}");
    let message = read["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(".alembic/skills/{name}"))
            && message.contains("outside the project root"),
        "{message}"
    );
    let got = s.request(3, "prompts/get", json!({"name": name})).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert!(!got.to_string().contains(secret), "{got}");
    let resources = s.request(4, "resources/list", json!({})).await;
    assert_eq!(
        names(&resources, "resources", "uri"),
        ["alembic://overview", "alembic://skill/good"]
    );
    let prompts = s.request(5, "prompts/list", json!({})).await;
    assert_eq!(names(&prompts, "prompts", "name"), ["good"]);
    let complete = json!({
        "ref": {"type": "ref/resource", "uri": "alembic://skill/{name}"},
        "argument": {"name": "name", "value": ""}
    });
    let c = s.request(6, "completion/complete", complete).await;
    assert_eq!(c["result"]["completion"]["values"], json!(["good"]), "{c}");
    assert!(!format!("{resources}{prompts}").contains(secret));
    s.close().await;
}

#[tokio::test]
async fn a_skill_md_linked_out_of_the_project_is_refused() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.skills().join("leak")).unwrap();
    symlink(fx.secret(), fx.skills().join("leak/SKILL.md")).unwrap();
    assert_refused_everywhere(&fx, "leak", SECRET).await;
}

#[tokio::test]
async fn a_skill_md_linked_to_a_system_file_is_refused() {
    let fx = Fixture::new();
    let target = Path::new("/etc/hostname");
    let content = std::fs::read_to_string(target).unwrap_or_default();
    std::fs::create_dir_all(fx.skills().join("host")).unwrap();
    symlink(target, fx.skills().join("host/SKILL.md")).unwrap();
    // A relative link climbing out with `..` is the same escape.
    std::fs::create_dir_all(fx.skills().join("climb")).unwrap();
    let up = "../".repeat(fx.skills().join("climb").components().count());
    symlink(
        format!("{up}etc/hostname"),
        fx.skills().join("climb/SKILL.md"),
    )
    .unwrap();
    for name in ["host", "climb"] {
        let err = fx.source().read(name).unwrap_err().to_string();
        assert!(err.contains("outside the project root"), "{err}");
    }
    let probe = if content.trim().is_empty() {
        SECRET
    } else {
        content.trim()
    };
    assert_refused_everywhere(&fx, "host", probe).await;
}

#[tokio::test]
async fn a_skill_directory_linked_out_of_the_project_is_refused() {
    let fx = Fixture::new();
    let dir = fx.outside.path().join("leak");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), skill_text("leak", SECRET)).unwrap();
    symlink(&dir, fx.skills().join("leak")).unwrap();
    assert_refused_everywhere(&fx, "leak", SECRET).await;
}

#[tokio::test]
async fn a_schema_json_linked_out_of_the_project_is_refused() {
    let fx = Fixture::new();
    let dir = fx.skills().join("leak");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), skill_text("leak", "harmless")).unwrap();
    let schema = fx.outside.path().join("schema.json");
    std::fs::write(&schema, json!({"description": SECRET}).to_string()).unwrap();
    symlink(&schema, dir.join("schema.json")).unwrap();
    assert_refused_everywhere(&fx, "leak", SECRET).await;
}

#[tokio::test]
async fn a_skills_directory_linked_out_of_the_project_publishes_nothing() {
    let fx = Fixture::new();
    std::fs::remove_dir_all(fx.skills()).unwrap();
    let dir = fx.outside.path().join("skills");
    std::fs::create_dir_all(dir.join("leak")).unwrap();
    std::fs::write(dir.join("leak/SKILL.md"), skill_text("leak", SECRET)).unwrap();
    symlink(&dir, fx.skills()).unwrap();
    assert_eq!(fx.source().list(), Vec::new());
    let err = fx.source().read("leak").unwrap_err().to_string();
    assert!(err.contains("outside the project root"), "{err}");
    let mut s = fx.session().await;
    let read = s
        .request(2, "resources/read", json!({"uri": "alembic://skill/leak"}))
        .await;
    assert!(
        read["error"].is_object() && !read.to_string().contains(SECRET),
        "{read}"
    );
    let got = s.request(3, "prompts/get", json!({"name": "leak"})).await;
    assert!(
        got["error"].is_object() && !got.to_string().contains(SECRET),
        "{got}"
    );
    s.close().await;
}

#[tokio::test]
async fn links_that_stay_inside_the_project_are_followed() {
    let fx = Fixture::new();
    let docs = fx.root.path().join("docs");
    std::fs::create_dir_all(docs.join("shared")).unwrap();
    std::fs::write(docs.join("inner.md"), skill_text("inner", "Inner body.")).unwrap();
    std::fs::write(
        docs.join("shared/SKILL.md"),
        skill_text("shared", "Shared body."),
    )
    .unwrap();
    std::fs::create_dir_all(fx.skills().join("inner")).unwrap();
    symlink("../../../docs/inner.md", fx.skills().join("inner/SKILL.md")).unwrap();
    // relative, as a repository carries them (PathGuard, like the file tools, refuses an
    // absolute link target even when it names a place inside the root)
    symlink("../../docs/shared", fx.skills().join("shared")).unwrap();
    let listed: Vec<String> = fx.source().list().into_iter().map(|s| s.name).collect();
    assert_eq!(listed, ["good", "inner", "shared"]);
    let mut s = fx.session().await;
    let read = s
        .request(2, "resources/read", json!({"uri": "alembic://skill/inner"}))
        .await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("Inner body."), "{read}");
    let got = s.request(3, "prompts/get", json!({"name": "shared"})).await;
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Shared body."), "{got}");
    s.close().await;
}

/// A hard link is the file itself: nothing tells it from a file written in place, so it is
/// served. Git never checks one out; only someone who can already create files on the
/// server's disk can make one. FIXME: not refusable by path; asserted as it is.
#[tokio::test]
async fn a_hard_link_is_read_like_any_file() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.skills().join("leak")).unwrap();
    if std::fs::hard_link(fx.secret(), fx.skills().join("leak/SKILL.md")).is_err() {
        // Temp dirs on different file systems: a hard link cannot exist here at all.
        return;
    }
    let skill = fx.source().read("leak").unwrap().unwrap();
    assert!(skill.markdown.contains(SECRET));
}

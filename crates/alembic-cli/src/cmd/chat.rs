//! `alembic chat`: a conversation with the agent, one question per line.
//!
//! Commands: `/tools` (the preset's tools), `/memory` (long-term memories recalled for the last
//! question, and the most recent ones), `/remember [text]` (keep what the conversation taught,
//! and the text as given, in long-term memory), `/help`, `/exit` (or end of input).

use std::io::{BufRead as _, Write as _};

use alembic_runtime::agent::{AgentPreset, AgentRuntime, Extraction, RunRequest};
use alembic_runtime::memory::{ListFilter, Origin, RetrieveOptions};
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::ask::{ModelArgs, ask_once, open_agent, print_answer, printer};
use crate::exit::Exit;
use crate::{CmdResult, ProjectArgs};

/// Earlier turns carried into the next question's memory prompt.
const CONVERSATION_TURNS: usize = 6;
/// Characters of an earlier answer carried along.
const ANSWER_CHARS: usize = 300;

const HELP: &str = "Ask a question about the project, or:\n  /tools            the tools the agent may use\n  /memory           long-term memories (recalled for the last question, and the newest)\n  /remember [text]  keep what this conversation taught (and the text, as given) in long-term memory\n  /exit             leave (Ctrl-D works too)";

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub project: ProjectArgs,
}

/// What the conversation remembers between questions.
#[derive(Debug, Default)]
struct Conversation {
    turns: Vec<(String, String)>,
}

impl Conversation {
    fn summary(&self) -> Option<String> {
        if self.turns.is_empty() {
            return None;
        }
        let start = self.turns.len().saturating_sub(CONVERSATION_TURNS);
        let lines: Vec<String> = self.turns[start..]
            .iter()
            .map(|(q, a)| {
                let a: String = a.chars().take(ANSWER_CHARS).collect();
                format!("Q: {q}\nA: {}", a.replace('\n', " "))
            })
            .collect();
        Some(lines.join("\n"))
    }

    fn last_question(&self) -> Option<&str> {
        self.turns.last().map(|(q, _)| q.as_str())
    }

    /// Every turn as text, for `/remember`.
    fn transcript(&self) -> String {
        self.turns
            .iter()
            .map(|(q, a)| format!("User: {q}\n\nAssistant: {a}"))
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

pub fn run(args: ChatArgs) -> CmdResult {
    crate::allocator::purge_promptly();
    let stream = !args.model.no_stream;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let (agent, project) = open_agent(&args.project.project, &args.model, stream)?;
        // A session edits files; the watcher keeps the code index in step with them.
        project.services().code.watch();
        let agent = agent.with_events(printer(stream));
        let preset = AgentPreset::from_name(&args.model.preset);
        eprintln!(
            "alembic chat · {} {} · preset {} · /help for commands",
            agent.provider().name(),
            agent.provider().model(),
            preset.name()
        );
        let result = repl(&agent, &preset, stream).await;
        project.flush_audit()?;
        result?;
        Ok(Exit::Ok)
    })
}

async fn repl(agent: &AgentRuntime, preset: &AgentPreset, stream: bool) -> anyhow::Result<()> {
    let mut conversation = Conversation::default();
    let stdin = std::io::stdin();
    loop {
        print!("› ");
        std::io::stdout().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            println!();
            return Ok(());
        }
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" | "/quit" => return Ok(()),
            "/help" => println!("{HELP}"),
            "/tools" => print_tools(agent, preset)?,
            "/memory" => print_memory(agent, conversation.last_question()),
            command if command == "/remember" || command.starts_with("/remember ") => {
                let note = command.trim_start_matches("/remember").trim();
                remember(agent, &conversation, note).await;
            }
            command if command.starts_with('/') => {
                println!("unknown command {command}; {HELP}");
            }
            question => {
                let mut request = RunRequest::new(question, preset.clone());
                request.conversation = conversation.summary();
                match ask_once(agent, &request).await {
                    Ok(report) => {
                        print_answer(&report, stream);
                        conversation
                            .turns
                            .push((question.to_string(), report.answer));
                    }
                    // One failed question does not end the conversation.
                    Err(e) => eprintln!("error: {e:#}"),
                }
            }
        }
    }
}

/// `/remember [text]`: extraction over the conversation so far, plus the text as given.
async fn remember(agent: &AgentRuntime, conversation: &Conversation, note: &str) {
    if agent.memory().is_none() {
        println!("long-term memory is not available");
        return;
    }
    if conversation.turns.is_empty() && note.is_empty() {
        println!("nothing to remember yet: ask a question first, or write /remember <text>");
        return;
    }
    let note = (!note.is_empty()).then_some(note);
    let report = agent
        .remember(&conversation.transcript(), note, &CancellationToken::new())
        .await;
    match (&report.extraction, report.saved_line(), &report.error) {
        (Extraction::Off, ..) => {
            println!("remembering is switched off ([memory] extract_from_conversations = false)")
        }
        (_, _, Some(error)) => println!("nothing was saved: {error}"),
        (_, Some(line), _) => println!("{line}"),
        (_, None, _) => println!("nothing new to remember"),
    }
    if let Extraction::Failed { error } = &report.extraction {
        eprintln!("  (the model's extraction was not used: {error})");
    }
}

fn print_tools(agent: &AgentRuntime, preset: &AgentPreset) -> anyhow::Result<()> {
    for (stage, tools) in agent.stage_tools(preset)? {
        println!("{stage} ({} tools): {}", tools.len(), tools.join(", "));
    }
    Ok(())
}

fn print_memory(agent: &AgentRuntime, last_question: Option<&str>) {
    let Some(memory) = agent.memory() else {
        println!("long-term memory is not available");
        return;
    };
    let service = memory.service();
    if let Some(q) = last_question {
        let options = RetrieveOptions {
            limit: 5,
            touch: false,
            ..RetrieveOptions::default()
        };
        match service.recall(q, &options) {
            Ok(found) if !found.items.is_empty() => {
                println!("recalled for \"{q}\":");
                for h in &found.items {
                    println!(
                        "  [{}{}] {} (score {:.2})",
                        h.item.memory.kind,
                        store_mark(h.store),
                        h.item.memory.content,
                        h.item.score
                    );
                }
                print_team_error(found.team_error.as_deref());
            }
            Ok(found) => {
                println!("nothing recalled for \"{q}\"");
                print_team_error(found.team_error.as_deref());
            }
            Err(e) => println!("recall failed: {e}"),
        }
    }
    let filter = ListFilter {
        limit: Some(5),
        ..ListFilter::default()
    };
    match service.list_everywhere(&filter) {
        Ok(recent) if recent.items.is_empty() => println!("no long-term memories yet"),
        Ok(recent) => {
            println!("newest:");
            for m in &recent.items {
                println!(
                    "  [{}{}] {} (importance {})",
                    m.item.kind,
                    store_mark(m.store),
                    m.item.content,
                    m.item.importance
                );
            }
            print_team_error(recent.team_error.as_deref());
        }
        Err(e) => println!("listing memories failed: {e}"),
    }
}

/// ", team" after the kind of a memory from the team store.
fn store_mark(store: Origin) -> &'static str {
    match store {
        Origin::Team => ", team",
        Origin::Local => "",
    }
}

fn print_team_error(error: Option<&str>) {
    if let Some(e) = error {
        println!("  (team memories unavailable: {e})");
    }
}

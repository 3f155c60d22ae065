//! Asks the configured provider one question and streams the answer, to try a real vendor by
//! hand: `cargo run -p alembic-llm --example ask -- [--model M] "What is a circuit breaker?"`.
//!
//! The provider comes from `$XDG_CONFIG_HOME/alembic/config.toml` (`[llm]`) or the environment
//! (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `DEEPSEEK_API_KEY`, …).

use std::io::Write;

use alembic_llm::{
    ChatRequest, ConfigOverrides, HttpProvider, LlmProvider, Message, StreamEvent,
    load_provider_config,
};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut overrides = ConfigOverrides::default();
    if args.first().map(String::as_str) == Some("--model") && args.len() > 1 {
        overrides.model = Some(args.remove(1));
        args.remove(0);
    }
    let question = args.join(" ");
    let question = if question.is_empty() {
        "Say hello in five words.".to_owned()
    } else {
        question
    };
    let config = load_provider_config(&overrides)?;
    eprintln!("using {}", config.summary());
    let provider = HttpProvider::new(config)?;
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    let request = ChatRequest::new("", vec![Message::user(question)]);
    let mut stream = provider.chat_stream(&request, &cancel).await?;
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta { text } => {
                print!("{text}");
                std::io::stdout().flush()?;
            }
            StreamEvent::Done { response } => {
                println!();
                eprintln!(
                    "{} tokens in, {} out",
                    response.usage.input_tokens, response.usage.output_tokens
                );
            }
            _ => {}
        }
    }
    Ok(())
}

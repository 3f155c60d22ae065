mod bootstrap_tool;
mod code_embedder;
mod memory_config;
mod rebuild_index;
mod scenario2;
mod seed_tools;
mod team_store;
mod tool_schemas;

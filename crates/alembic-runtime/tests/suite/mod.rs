mod bootstrap_tool;
mod code_embedder;
mod memory_config;
mod rebuild_index;
mod scenario2;
mod scenario3;
mod seed_tools;
mod tool_schemas;

mod bootstrap_tool;
mod code_embedder;
mod memory_config;
mod scenario2;
mod rebuild_index;
mod seed_tools;
mod tool_schemas;

mod code_embedder;
mod memory_config;
mod rebuild_index;
mod seed_tools;
mod tool_schemas;

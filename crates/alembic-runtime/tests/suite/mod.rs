mod bootstrap_tool;
mod code_embedder;
mod memory_config;
mod tool_schemas;

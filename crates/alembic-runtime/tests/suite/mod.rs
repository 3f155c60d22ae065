mod bootstrap_tool;
mod code_embedder;
mod memory_config;
mod scenario2;
mod tool_schemas;

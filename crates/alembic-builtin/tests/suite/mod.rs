mod code_embedder;
mod memory_config;

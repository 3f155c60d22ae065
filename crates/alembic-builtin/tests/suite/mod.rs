mod code_embedder;

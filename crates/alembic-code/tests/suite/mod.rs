mod direct;
mod fixtures;
mod graph_per_language;
mod incremental;
mod index;
mod semantic;
mod summaries;
mod tools;

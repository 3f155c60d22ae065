mod fixtures;
mod graph_per_language;
mod incremental;
mod index;
mod summaries;
mod tools;

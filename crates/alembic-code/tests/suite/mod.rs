mod fixtures;
mod graph_per_language;
mod index;
mod summaries;
mod tools;

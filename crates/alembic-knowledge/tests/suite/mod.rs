mod analysis;
mod analyze;
mod dedup;
mod impact;
mod store;
mod support;
mod tools;

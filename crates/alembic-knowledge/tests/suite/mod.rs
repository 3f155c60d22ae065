mod analysis;
mod dedup;
mod store;
mod support;
mod tools;

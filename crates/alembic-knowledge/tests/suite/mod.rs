mod analysis;
mod analyze;
mod contract;
mod dedup;
mod impact;
mod store;
mod support;
mod tools;

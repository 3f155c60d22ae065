mod store;
mod support;
mod tools;

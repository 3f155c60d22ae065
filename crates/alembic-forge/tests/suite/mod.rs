mod compose;
mod generate;
mod reuse;
mod sandbox;
mod store;
mod support;
mod temporary;
mod tools;

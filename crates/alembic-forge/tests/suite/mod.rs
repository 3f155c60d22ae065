mod compose;
mod generate;
mod reuse;
mod sandbox;
mod support;
mod temporary;

mod compose;
mod reuse;
mod sandbox;
mod support;
mod temporary;

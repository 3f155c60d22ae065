mod suggest;
mod support;
mod tools;

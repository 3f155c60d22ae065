mod audit;
mod module_graph;
mod normalise;
mod pipeline;
mod support;

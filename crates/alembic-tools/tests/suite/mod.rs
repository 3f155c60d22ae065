mod audit;
mod audit_bounds;
mod audit_query;
mod audit_tamper;
mod module_graph;
mod normalise;
mod pipeline;
mod support;

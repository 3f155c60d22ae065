mod audit;
mod normalise;
mod pipeline;
mod support;

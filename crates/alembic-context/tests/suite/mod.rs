mod exploration;
mod pipeline;
mod scenario3;

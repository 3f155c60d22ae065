mod exploration;
mod pipeline;
mod run_tools;
mod scenario3;

mod exploration;
mod scenario3;

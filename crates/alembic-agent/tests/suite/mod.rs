mod bootstrap;
mod loop_behaviour;
mod roundtrip;
mod scenario;
mod support;

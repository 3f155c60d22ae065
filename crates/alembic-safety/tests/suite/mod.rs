mod adversarial;
mod corpora;
mod fixture;
mod path_races;
mod paths;
mod policy;
mod spawn;
mod tools;

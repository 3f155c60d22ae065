mod corpora;
mod fixture;
mod path_races;
mod paths;
mod policy;
mod read_confinement;
mod spawn;
mod tools;

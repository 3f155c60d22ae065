mod durability;
mod locomo;
mod monorepo;

mod durability;
mod locomo;

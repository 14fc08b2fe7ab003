//! Time to find the optimum of the paper's Blocks World instances: exact by
//! breadth-first search up to 7 blocks, a lower bound beyond:
//! `cargo run --release -p blocks_world --example solve`.

use blocks_world::rules::{optimum, paper_instance};

fn main() {
    for n in [4, 6, 7, 20] {
        let (start, goal) = paper_instance(n).expect("a paper instance");
        let started = std::time::Instant::now();
        let best = optimum(&start, &goal);
        println!("Blocks World N={n}: {best:?} in {:?}", started.elapsed());
    }
}

//! Time to find an optimal Checker Jumping solution for N = 20 and N = 100
//! (the plan checked move by move as it is made):
//! `cargo run --release -p checker_jumping --example solve`.

fn main() {
    for n in [20, 100] {
        let rounds = 20;
        let started = std::time::Instant::now();
        let mut moves = 0;
        for _ in 0..rounds {
            moves = checker_jumping::rules::solve(n).expect("solvable").len();
        }
        let each = started.elapsed() / rounds;
        println!("Checker Jumping N={n}: an optimal plan of {moves} moves ((N+1)² − 1) in {each:?} (mean of {rounds})");
    }
}

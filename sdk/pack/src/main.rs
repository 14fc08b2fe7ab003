//! `ludus-pack IN.wasm OUT.wasm WIT_DIR...` — embed WIT doc comments into a
//! built game component so the Ludus host can describe its tools.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: ludus-pack IN.wasm OUT.wasm WIT_DIR...\n\n\
                 Copies the component IN.wasm to OUT.wasm with a `package-docs` section holding\n\
                 the doc comments of the WIT package in the last WIT_DIR; earlier WIT_DIRs hold\n\
                 the packages it depends on (the Ludus plugin WIT first).";
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{usage}");
        return;
    }
    if args.len() < 3 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let dirs: Vec<&std::path::Path> = args[2..].iter().map(std::path::Path::new).collect();
    if let Err(e) = ludus_pack::pack_file(args[0].as_ref(), &dirs, args[1].as_ref()) {
        eprintln!("ludus-pack: {e:#}");
        std::process::exit(1);
    }
}

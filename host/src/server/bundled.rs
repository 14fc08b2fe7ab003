//! The games built into the binary: the default set, served with no plugins
//! directory. `build.rs` compiles and packages them (docs embedded).

pub const BUNDLED: &[(&str, &[u8])] = &[
    ("chess", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/chess.wasm"))),
    ("hanoi", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/hanoi.wasm"))),
    ("river_crossing", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/river_crossing.wasm"))),
    ("showdown", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/showdown.wasm"))),
];

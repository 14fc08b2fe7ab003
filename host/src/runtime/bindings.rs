//! Host-side bindings of the plugin contract (`wit/plugin`): the types and
//! traits of every interface a plugin may import, and the exports the host
//! calls by name. Exports beyond `meta` are optional and looked up by name
//! (`plugin`).

wasmtime::component::bindgen!({
    inline: "
        package ludus:host;
        world linked {
            include ludus:plugin/game@0.1.7;
            import ludus:plugin/channels@0.1.7;
            import ludus:plugin/lifecycle@0.1.7;
            import ludus:plugin/seats@0.1.7;
            import ludus:plugin/client@0.1.7;
            import ludus:plugin/watchers@0.1.7;
        }
    ",
    path: "../wit/plugin",
});

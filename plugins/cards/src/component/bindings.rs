//! The component's bindings: the cards world against the shared Ludus interfaces.

ludus_sdk::bindings!(world: "ludus:cards/cards", contract: "../../wit/plugin", channels, lifecycle, module: "crate::component::bindings");

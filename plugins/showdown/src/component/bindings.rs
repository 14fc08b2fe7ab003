//! The component's bindings: the showdown world against the shared Ludus
//! interfaces.

ludus_sdk::bindings!(world: "ludus:showdown/showdown", contract: "../../wit/plugin", channels, lifecycle, module: "crate::component::bindings");

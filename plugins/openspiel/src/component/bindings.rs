//! The component's bindings: the openspiel world against the shared Ludus interfaces.

ludus_sdk::bindings!(world: "ludus:openspiel/openspiel", contract: "../../wit/plugin", channels, lifecycle, module: "crate::component::bindings");

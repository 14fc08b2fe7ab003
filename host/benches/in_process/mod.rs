//! What the in-process benchmarks share: a server running one component from
//! the build's components (`LUDUS_WASM_DIR`), and a tool call through the
//! registry and session (no transport) that answers the result as JSON.

use std::sync::Arc;

use serde_json::Value;

pub struct Bench {
    pub registry: Arc<ludus::registry::Registry>,
    /// Holds the plugins directory and the component cache.
    _work: tempfile::TempDir,
}

/// Starts a server with only `component` (e.g. `chess_bench.wasm`) loaded;
/// `config` is appended to the generated config file (per-plugin settings).
pub async fn start(component: &str, config: &str) -> Bench {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(std::path::Path::new(env!("LUDUS_WASM_DIR")).join(component), dir.join(component)).unwrap();
    let text = format!("cache_dir = {:?}\n{config}", work.path().join("cache").display().to_string());
    let config: ludus::config::Config = toml::from_str(&text).unwrap();
    let opts = ludus::server::ServeOptions {
        plugins: Some(dir),
        http: None,
        config,
        builtins: false,
        store: ludus::store::StoreSpec::Memory,
        records: None,
        run: None,
    };
    let registry = ludus::server::start(&opts).await.unwrap();
    Bench { registry, _work: work }
}

impl Bench {
    /// Calls `tool`; panics on an error answer (a benchmark has no use for one).
    pub async fn call(&self, tool: &str, args: Value) -> Value {
        // The plugins directory is scanned after the server is up: a large
        // component may still be compiling at the first call.
        let started = std::time::Instant::now();
        let (plugin, i) = loop {
            match self.registry.find_tool(tool) {
                Ok(found) => break found,
                Err(e) if started.elapsed() > std::time::Duration::from_secs(120) => panic!("{tool}: {e}"),
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        };
        let args = args.as_object().unwrap().clone();
        match self
            .registry
            .sessions
            .call(plugin, i, &args, ludus::session::Caller::Connection("bench".into()), Default::default(), Default::default())
            .await
        {
            ludus::session::Reply::Value { value: Some(wasmtime::component::Val::Result(Ok(Some(v)))), plugin, tool: t, .. } => {
                let ok = ludus::plugin::ok_shape(plugin.tools[t].result.as_ref()).unwrap();
                ok.to_json(&v)
            }
            ludus::session::Reply::Failed(e) => panic!("{tool}: {e}"),
            _ => panic!("{tool}: unexpected answer"),
        }
    }
}

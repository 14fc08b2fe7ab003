//! The channels capability, end to end: the `relay` fixture plugin opens
//! endpoints the config grants (a process, TCP, WebSocket, HTTP) and the tests
//! watch what crosses them through the real server.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// A server with the relay plugin and the given `[plugins.relay…]` TOML.
async fn relay_server(work: &Path, extra: &str) -> Client {
    let dir = plugins_dir(work, &["relay"]);
    let cfg = config(work, extra);
    stdio(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work).await
}

/// Opens `endpoint` in a new relay session: (session id, channel).
async fn start(c: &Client, endpoint: &str) -> (String, u64) {
    // A tuple result has no object shape, so it arrives as JSON text.
    let r = c.call("relay_start", json!({"endpoint": endpoint})).await;
    assert_ne!(r.is_error, Some(true), "relay_start({endpoint}) failed: {}", text(&r));
    let pair: Vec<Value> = serde_json::from_str(&text(&r)).unwrap();
    (pair[0].as_str().unwrap().to_string(), pair[1].as_u64().unwrap())
}

async fn receive(c: &Client, id: &str, count: usize) -> Value {
    c.ok("relay_receive", json!({"id": id, "count": count})).await
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

fn process(name: &str, command: &str, args: &[&str]) -> String {
    format!("[plugins.relay.channels.{name}]\nprocess = {{ command = {command:?}, args = {args:?} }}\n")
}

/// The `cat` processes the server of the test in `work` runs (no one is
/// shown process ids).
fn cats_of(work: &Path) -> Vec<u32> {
    let servers = pids_with(&format!("{}/ludus.toml", work.display()));
    servers.iter().flat_map(|&s| children_named(s, "cat")).collect()
}

/// True once the process is gone (or a zombie nobody will run again).
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn until_gone(pid: u32) {
    let start = Instant::now();
    while !process_gone(pid) {
        assert!(start.elapsed() < Duration::from_secs(10), "process {pid} still runs");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_process_channel_carries_lines_both_ways_and_dies_with_its_session() {
    let work = scratch();
    let extra = format!(
        "{}{}{}",
        process("echo", "cat", &[]),
        process("short", "sh", &["-c", "echo one; echo two; exit 3"]),
        process("missing", "/nonexistent/ludus-sidecar", &[])
    );
    let c = relay_server(work.path(), &extra).await;

    let (id, ch) = start(&c, "echo").await;
    c.ok("relay_send", json!({"id": id, "channel": ch, "data": "hello"})).await;
    c.ok("relay_send", json!({"id": id, "channel": ch, "data": "|request|{\"rqid\":1}"})).await;
    // The receive call waits in the host until both lines have come back.
    let inbox = receive(&c, &id, 2).await;
    assert_eq!(strings(&inbox["messages"]), [format!("{ch}:hello"), format!("{ch}:|request|{{\"rqid\":1}}")]);
    let e = c.err("relay_send", json!({"id": id, "channel": ch, "data": "two\nlines"})).await;
    assert!(e.contains("line break"), "{e}");

    // The process is visible, and a crash of the session kills it.
    let cats = cats_of(work.path());
    assert_eq!(cats.len(), 1, "{cats:?}");
    let pid = cats[0];
    assert!(!process_gone(pid));
    let e = c.err("relay_crash", json!({"id": id})).await;
    assert!(e.contains("crashed on purpose"), "{e}");
    until_gone(pid).await;

    // A process that exits: its lines, then the reason.
    let (id, ch) = start(&c, "short").await;
    let inbox = receive(&c, &id, 3).await;
    assert_eq!(strings(&inbox["messages"]), [format!("{ch}:one"), format!("{ch}:two")]);
    let closed = strings(&inbox["closed"]);
    assert!(closed.len() == 1 && closed[0].contains("exit status: 3"), "{closed:?}");
    let e = c.err("relay_send", json!({"id": id, "channel": ch, "data": "x"})).await;
    assert!(e.contains("not open"), "{e}");

    // A command that cannot start fails the open, naming the config key.
    let e = c.err("relay_start", json!({"endpoint": "missing"})).await;
    assert!(e.contains("cannot start") && e.contains("[plugins.relay.channels.missing]"), "{e}");
    c.close().await;
}

#[tokio::test]
async fn denials_and_limits_name_the_config_key() {
    let work = scratch();
    let extra = format!(
        "[limits]\nmax_channels_per_session = 2\nmax_channel_message_bytes = 64\nidle_timeout_ms = 1500\n{}{}",
        process("echo", "cat", &[]),
        process("long", "sh", &["-c", "printf '%0200d\\n' 7; sleep 30"])
    );
    let c = relay_server(work.path(), &extra).await;

    let e = c.err("relay_start", json!({"endpoint": "pokemon-server"})).await;
    assert!(e.contains("not granted") && e.contains("[plugins.relay.channels.pokemon-server]"), "{e}");

    let (id, ch) = start(&c, "echo").await;
    c.ok("relay_open", json!({"id": id, "endpoint": "echo"})).await;
    let e = c.err("relay_open", json!({"id": id, "endpoint": "echo"})).await;
    assert!(e.contains("max_channels_per_session"), "{e}");
    let e = c.err("relay_send", json!({"id": id, "channel": ch, "data": "x".repeat(65)})).await;
    assert!(e.contains("max_channel_message_bytes"), "{e}");
    c.ok("relay_close", json!({"id": id, "channel": ch})).await;
    c.ok("relay_open", json!({"id": id, "endpoint": "echo"})).await;

    // A peer's over-long line closes the channel instead of growing memory.
    let (long, _) = start(&c, "long").await;
    let inbox = receive(&c, &long, 1).await;
    assert!(strings(&inbox["messages"]).is_empty());
    assert!(strings(&inbox["closed"])[0].contains("longer than 64 bytes"), "{inbox}");

    // An idle session expires and takes its processes with it.
    let cats = cats_of(work.path());
    assert!(!cats.is_empty());
    for pid in cats {
        until_gone(pid).await;
    }
    let e = c.err("relay_receive", json!({"id": id, "count": 0})).await;
    assert!(e.contains("expired"), "{e}");
    c.close().await;
}

#[tokio::test]
async fn tcp_websocket_and_http_endpoints() {
    // TCP: an echo server that upper-cases lines.
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tcp_addr = tcp.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = tcp.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = tokio::io::BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            write.write_all(format!("{}\n", line.to_uppercase()).as_bytes()).await.unwrap();
        }
    });

    // WebSocket: greets like a Showdown server, then echoes frames.
    let ws = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ws_addr = ws.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = ws.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(stream).await.unwrap();
        ws.send(tokio_tungstenite::tungstenite::Message::text("|challstr|4|abc")).await.unwrap();
        while let Some(Ok(m)) = ws.next().await {
            if m.is_text() {
                ws.send(tokio_tungstenite::tungstenite::Message::text(format!("echo {}", m.to_text().unwrap()))).await.unwrap();
            }
        }
    });

    // HTTP: answers every request with its request line.
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_addr = http.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = http.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap();
                let head = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("").to_string();
                let body = format!("you asked {head}");
                let reply = format!("HTTP/1.1 201 Created\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                stream.write_all(reply.as_bytes()).await.unwrap();
            });
        }
    });

    // Not a TLS server: `wss://` and `https://` to it fail in the TLS handshake (TLS is compiled in).
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain_addr = plain.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = plain.accept().await.unwrap();
            let _ = stream.write_all(b"HTTP/1.1 400 Not TLS\r\n\r\n").await;
        }
    });

    let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let work = scratch();
    let extra = format!(
        "[plugins.relay.channels.tcp]\ntcp = \"{tcp_addr}\"\n\
         [plugins.relay.channels.ws]\nwebsocket = \"ws://{ws_addr}/showdown/websocket\"\n\
         [plugins.relay.channels.api]\nhttp = \"http://{http_addr}/base\"\n\
         [plugins.relay.channels.nobody]\nwebsocket = \"ws://{closed_port}/\"\n\
         [plugins.relay.channels.wss]\nwebsocket = \"wss://{plain_addr}/\"\n\
         [plugins.relay.channels.https]\nhttp = \"https://{plain_addr}\"\n"
    );
    let c = relay_server(work.path(), &extra).await;

    let (id, ch) = start(&c, "tcp").await;
    c.ok("relay_send", json!({"id": id, "channel": ch, "data": "gg"})).await;
    assert_eq!(strings(&receive(&c, &id, 1).await["messages"]), [format!("{ch}:GG")]);

    let (id, ch) = start(&c, "ws").await;
    assert_eq!(strings(&receive(&c, &id, 1).await["messages"]), [format!("{ch}:|challstr|4|abc")]);
    c.ok("relay_send", json!({"id": id, "channel": ch, "data": "|/trn Ada"})).await;
    assert_eq!(strings(&receive(&c, &id, 2).await["messages"])[1], format!("{ch}:echo |/trn Ada"));

    let (id, ch) = start(&c, "api").await;
    c.ok("relay_send", json!({"id": id, "channel": ch, "data": "POST /login\nname=ada"})).await;
    assert_eq!(strings(&receive(&c, &id, 1).await["messages"]), [format!("{ch}:201\nyou asked POST /base/login HTTP/1.1")]);
    let e = c.err("relay_send", json!({"id": id, "channel": ch, "data": "x".repeat(2 << 20)})).await;
    assert!(e.contains("over the limit"), "{e}");

    let (id, _) = start(&c, "wss").await;
    let reason = strings(&receive(&c, &id, 1).await["closed"])[0].clone();
    assert!(reason.contains("cannot connect") && !reason.to_lowercase().contains("not compiled"), "{reason}");
    let (id, ch) = start(&c, "https").await;
    c.ok("relay_send", json!({"id": id, "channel": ch, "data": "GET /"})).await;
    let reply = strings(&receive(&c, &id, 1).await["messages"])[0].clone();
    assert!(reply.starts_with(&format!("{ch}:0\n")) && !reply.contains("scheme"), "{reply}");
    eprintln!("TLS against a plain server: {reason} / {reply}");

    // A refused connection arrives as a close with the reason.
    let (id, _) = start(&c, "nobody").await;
    let inbox = receive(&c, &id, 1).await;
    assert!(strings(&inbox["closed"])[0].contains("cannot connect"), "{inbox}");
    c.close().await;
}

#[tokio::test]
async fn a_plugin_built_against_the_first_contract_still_loads() {
    // `tests/prebuilt/hello-plugin-0.1.0.wasm` was built against ludus:plugin@0.1.0, before channels.
    let work = scratch();
    let dir = plugins_dir(work.path(), &[]);
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/prebuilt/hello-plugin-0.1.0.wasm");
    install(&dir, &old, "hello.wasm");
    let c = stdio(&["--plugins", dir.to_str().unwrap()], work.path()).await;
    assert_eq!(text(&c.call("hello_greet", json!({"name": "Ada"})).await), "Hello, Ada!");
    let counter = c.ok("hello_start", json!({"start": 1})).await["counter_id"].clone();
    // Its timer event still arrives through the 0.1.1 `events` export lookup.
    c.ok("hello_bump_later", json!({"counter_id": counter, "delay_ms": 10})).await;
    let v = c.ok("hello_wait_for", json!({"counter_id": counter, "at_least": 2})).await;
    assert_eq!(v["count"], 2, "{v}");
    c.close().await;
}

//! Headless Chromium through the DevTools protocol, for tests of pages
//! (the chess board, the report): evaluate script, wait for a condition,
//! and collect what the page reports as errors (exceptions, console
//! errors, failed loads).
//!
//! Needs Debian's `chromium` (`apt-get install chromium`; `.ci/run` installs it).

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio_tungstenite::tungstenite::Message;

/// A DevTools protocol session with one page.
pub struct Page {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    next: u64,
    /// What the page reported as errors, once `watch_errors` was called.
    pub errors: Vec<String>,
}

impl Page {
    pub async fn send(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.ws.send(Message::text(json!({"id": id, "method": method, "params": params}).to_string())).await.unwrap();
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.ws.next()).await.expect("DevTools answer").unwrap().unwrap();
            let Ok(v) = serde_json::from_str::<Value>(msg.to_text().unwrap_or("")) else { continue };
            if let Some(error) = page_error(&v) {
                self.errors.push(error);
            }
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    pub async fn eval(&mut self, js: &str) -> Value {
        let r = self.send("Runtime.evaluate", json!({"expression": js, "returnByValue": true, "awaitPromise": true})).await;
        assert!(r.get("exceptionDetails").is_none(), "{js}: {r}");
        r["result"]["value"].clone()
    }

    pub async fn until(&mut self, js: &str, what: &str) -> Value {
        let start = Instant::now();
        loop {
            let v = self.eval(js).await;
            if !v.is_null() && v != json!(false) {
                return v;
            }
            assert!(start.elapsed() < Duration::from_secs(15), "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Headless Chromium in a process group of its own. Dropped, the whole
/// group is killed and waited out: its helpers write to the profile
/// directory until they die, and a test's scratch directory, dropped after
/// it, is then removed whole.
pub struct Browser {
    child: tokio::process::Child,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else { return };
        let group = -(pid as i32);
        // SAFETY: kill(2) on the group this test started; no memory is shared.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let start = Instant::now();
        // The group is gone when its last member is reaped: the browser by
        // us, its helpers by init.
        while start.elapsed() < Duration::from_secs(5) {
            let _ = self.child.try_wait();
            // SAFETY: signal 0 only asks whether the group has members.
            if unsafe { libc::kill(group, 0) } != 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Starts headless Chromium on `url` and opens a DevTools session to its page.
pub async fn chromium(url: &str, profile: &std::path::Path) -> (Browser, Page) {
    let bin = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().find(|p| std::path::Path::new(p).exists());
    let bin = bin.expect("this test needs Debian's chromium: apt-get install chromium (.ci/run installs it)");
    // Its temporary files (a singleton socket, left behind when it is
    // killed) go in the profile, inside the test's scratch directory.
    std::fs::create_dir_all(profile).unwrap();
    // In a `Browser` at once, so that a failed start below leaves nothing running.
    let mut browser = Browser {
        child: tokio::process::Command::new(bin)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"])
            .args(["--disable-component-update", "--disable-sync", "--window-size=800,800", "--remote-debugging-port=0"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .env("TMPDIR", profile)
            .arg(url)
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap(),
    };
    let mut lines = tokio::io::BufReader::new(browser.child.stderr.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if let Some(rest) = l.split("DevTools listening on ws://127.0.0.1:").nth(1) {
                return rest.split('/').next().unwrap().to_string();
            }
        }
        panic!("chromium exited without a DevTools endpoint");
    })
    .await
    .expect("chromium did not start");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    ludus::capability::channels::install_tls_provider();
    let targets: Value = reqwest::get(format!("http://127.0.0.1:{port}/json/list")).await.unwrap().json().await.unwrap();
    let page = targets.as_array().unwrap().iter().find(|t| t["type"] == "page").expect("a page target");
    let (ws, _) = tokio_tungstenite::connect_async(page["webSocketDebuggerUrl"].as_str().unwrap()).await.unwrap();
    (browser, Page { ws, next: 0, errors: Vec::new() })
}

impl Page {
    /// From now on, collects the page's errors in `errors` (read as other
    /// answers arrive): uncaught exceptions, `console.error`, and errors the
    /// browser logs (a resource that failed to load, a refused script).
    pub async fn watch_errors(&mut self) {
        self.send("Runtime.enable", json!({})).await;
        self.send("Log.enable", json!({})).await;
    }

    /// Opens `url` in the page and waits until it has loaded.
    pub async fn open(&mut self, url: &str) {
        self.send("Page.navigate", json!({"url": url})).await;
        self.until("document.readyState === 'complete' && location.href !== 'about:blank'", "the page to load").await;
    }
}

/// The error a DevTools event reports, if it reports one.
fn page_error(v: &Value) -> Option<String> {
    let p = &v["params"];
    match v["method"].as_str()? {
        "Runtime.exceptionThrown" => Some(format!("exception: {}", p["exceptionDetails"])),
        "Runtime.consoleAPICalled" if p["type"] == "error" => Some(format!("console.error: {}", p["args"])),
        "Log.entryAdded" if p["entry"]["level"] == "error" => Some(format!("log: {}", p["entry"]["text"])),
        _ => None,
    }
}

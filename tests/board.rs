//! The chess board (MCP Apps) in real headless Chromium: the page renders a
//! position from a real tool result, and moves made with the mouse produce
//! the right `chess_finish_turn` request, which the real server accepts.
//!
//! Needs Debian's `chromium` (`apt-get install chromium`; `.ci/run` installs it;
//! `common::browser` drives it).
//! The test plays the MCP Apps host: a page that frames the board, answers its
//! `ui/initialize`, hands it tool results and records its `tools/call`s.

mod common;

use common::browser::{Page, chromium};
use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const HOST_PAGE: &str = r#"<!doctype html><html><body style="margin:0">
<iframe id="app" src="/board.html" style="width:520px;height:600px;border:0"></iframe>
<script>
window.calls = [];
const app = document.getElementById('app');
window.sendResult = (result) => app.contentWindow.postMessage({jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: result}, '*');
window.addEventListener('message', ev => {
  const m = ev.data;
  if (!m || m.jsonrpc !== '2.0') return;
  const reply = result => app.contentWindow.postMessage({jsonrpc: '2.0', id: m.id, result}, '*');
  if (m.method === 'ui/initialize') reply({protocolVersion: '2026-01-26', hostInfo: {name: 'test-host', version: '0'}, hostCapabilities: {}, hostContext: {}});
  else if (m.method === 'ui/notifications/initialized') window.sendResult(window.FIRST_RESULT);
  else if (m.method === 'tools/call') { window.calls.push(m.params); window.pendingCall = m.id; }
});
</script></body></html>"#;

/// Serves the host page at `/` and the board at `/board.html`.
async fn serve(host_page: String, board: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let (host_page, board) = (host_page.clone(), board.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let body = if req.starts_with("GET /board.html") { board } else { host_page };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
            });
        }
    });
    port
}

impl Page {
    /// Centre of an element inside the board's frame, in page coordinates.
    async fn center(&mut self, selector: &str) -> (f64, f64) {
        let js = format!(
            "(() => {{ const f = document.getElementById('app'); const r = f.getBoundingClientRect();
                const e = f.contentDocument.querySelector({selector:?}).getBoundingClientRect();
                return [r.left + e.left + e.width / 2, r.top + e.top + e.height / 2]; }})()"
        );
        let v = self.eval(&js).await;
        (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
    }

    async fn mouse(&mut self, kind: &str, (x, y): (f64, f64), buttons: u8) {
        let mut p = json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1});
        if kind == "mouseMoved" {
            p["button"] = json!(if buttons == 1 { "left" } else { "none" });
        }
        self.send("Input.dispatchMouseEvent", p).await;
    }

    async fn drag(&mut self, from: &str, to: &str) {
        let (a, b) = (self.center(&format!("[data-square={from}]")).await, self.center(&format!("[data-square={to}]")).await);
        self.mouse("mouseMoved", a, 0).await;
        self.mouse("mousePressed", a, 1).await;
        self.mouse("mouseMoved", ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0), 1).await;
        self.mouse("mouseMoved", b, 1).await;
        self.mouse("mouseReleased", b, 0).await;
    }

    async fn click(&mut self, selector: &str) {
        let c = self.center(selector).await;
        self.mouse("mouseMoved", c, 0).await;
        self.mouse("mousePressed", c, 1).await;
        self.mouse("mouseReleased", c, 0).await;
    }

    async fn frame(&mut self, js: &str) -> Value {
        self.eval(&format!("(() => {{ const d = document.getElementById('app').contentDocument; return {js}; }})()")).await
    }
}

fn result_json(r: &rmcp::model::CallToolResult) -> Value {
    serde_json::to_value(r).unwrap()
}

#[tokio::test]
async fn the_board_renders_a_position_and_mouse_moves_become_finish_turn_calls() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = c.tools().await;
    let create = tools.iter().find(|t| t.name == "chess_create_game").unwrap();
    assert_eq!(create.meta.as_ref().unwrap().0["ui"]["resourceUri"], "ui://chess/board", "tools link the board");
    let (html, mime) = c.read_resource("ui://chess/board").await.unwrap();
    assert_eq!(mime, "text/html;profile=mcp-app");
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains(" src="), "self-contained: nothing external");

    let first = c.call("chess_create_game", json!({"type": "agent", "color": "white"})).await;
    let game = first.structured_content.as_ref().unwrap()["game_id"].as_str().unwrap().to_string();
    // This client plays both sides: it takes Black's seat with the code too.
    let code = join_code(&c, &game).await;
    c.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    let host_page = HOST_PAGE.replace("window.calls = [];", &format!("window.calls = []; window.FIRST_RESULT = {};", result_json(&first)));
    let port = serve(host_page, html).await;
    let (_browser, mut page) = chromium(&format!("http://127.0.0.1:{port}/"), &work.path().join("chromium")).await;

    // The position of the real result is on the board.
    page.until("(() => { const f = document.getElementById('app'); const d = f && f.contentDocument; return d && d.querySelectorAll('.sq').length === 64 && d.querySelector('[data-square=e1]').textContent.startsWith('♔'); })()", "the board").await;
    assert_eq!(page.frame("d.querySelector('[data-square=e8]').textContent").await, "♚");
    assert_eq!(page.frame("d.querySelector('[data-square=e4]').textContent").await, "");
    assert!(page.frame("d.getElementById('status').textContent").await.as_str().unwrap().contains("Your turn"));

    // Drag e2 to e4 with the mouse, then confirm.
    page.drag("e2", "e4").await;
    assert_eq!(page.frame("d.getElementById('move').value").await, "e2e4");
    page.click("#confirm").await;
    let call = page.until("window.calls[0] || null", "the tools/call").await;
    assert_eq!(call, json!({"name": "chess_finish_turn", "arguments": {"game_id": game, "move": "e2e4", "claim_win": false}}));

    // Forward it to the real server, as a host would, and hand the answer back.
    let args = call["arguments"].clone();
    let answer = c.call("chess_finish_turn", args).await;
    assert_ne!(answer.is_error, Some(true), "{}", text(&answer));
    page.eval(&format!("(() => {{ const app = document.getElementById('app'); app.contentWindow.postMessage({{jsonrpc: '2.0', id: window.pendingCall, result: {} }}, '*'); }})()", result_json(&answer))).await;
    page.until("(() => { const d = document.getElementById('app').contentDocument; return d.querySelector('[data-square=e4]').textContent.startsWith('♙'); })()", "the new position").await;

    // Black's reply by two clicks (this client plays both sides), claiming mate: the claim travels too.
    page.click("[data-square=g8]").await;
    page.click("[data-square=f6]").await;
    assert_eq!(page.frame("d.getElementById('move').value").await, "g8f6");
    page.click("#claim").await;
    page.click("#confirm").await;
    let call = page.until("window.calls[1] || null", "the second tools/call").await;
    assert_eq!(call["arguments"], json!({"game_id": game, "move": "g8f6", "claim_win": true}));
    let e = c.err("chess_finish_turn", call["arguments"].clone()).await;
    assert!(e.contains("Claim rejected"), "the server judges the claim: {e}");
    c.close().await;
}

#[tokio::test]
async fn show_ui_embeds_the_board_for_older_hosts() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let r = c.call("chess_create_game", json!({"type": "computer", "show_ui": true, "difficulty": 1})).await;
    let sc = r.structured_content.clone().unwrap();
    assert!(sc.get("embedded").is_none(), "the embedded board is content, not data");
    let v = serde_json::to_value(&r).unwrap();
    let res = v["content"].as_array().unwrap().iter().find(|c| c["type"] == "resource").expect("an embedded resource");
    assert_eq!(res["resource"]["uri"], format!("ui://chess/{}", sc["game_id"].as_str().unwrap()));
    assert_eq!(res["resource"]["mimeType"], "text/html");
    let html = res["resource"]["text"].as_str().unwrap();
    assert!(html.contains("window.__LUDUS_STATE__ = {\"game_id\":"), "the state rides along");
    let plain = c.call("chess_create_game", json!({"type": "computer"})).await;
    assert!(serde_json::to_value(&plain).unwrap()["content"].as_array().unwrap().iter().all(|c| c["type"] == "text"));
    c.close().await;
}

//! The replay page (`ludus verify --html`): every game played again, with a
//! picker and a step through its calls — who made each, with what and why,
//! and what the game answered: a chess board drawn from its position, a
//! Showdown decision's optimality beside it, any other game's answer as it
//! came. One self-contained file: the games are JSON inside it and a short
//! script draws them; it loads nothing.

use serde::Serialize;
use serde_json::Value;

use crate::records::{ReplayStep, Seat};

/// One game of the page.
#[derive(Serialize)]
pub struct ReplayedGame {
    pub record: String,
    pub game: String,
    pub outcome: String,
    /// What `ludus verify` found: `reproduced`, `differs: …`, `cannot: …`.
    pub verdict: String,
    pub seats: Vec<Seat>,
    pub parameters: Value,
    /// Showdown's optimality of each scored decision, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optimality: Vec<Value>,
    pub steps: Vec<ReplayStep>,
}

/// The page.
pub fn page(games: &[ReplayedGame]) -> String {
    // `</` would end the script element the data sits in.
    let data = serde_json::to_string(games).unwrap_or_else(|_| "[]".into()).replace("</", "<\\/");
    format!("{HEAD}<script type=\"application/json\" id=\"games\">{data}</script>\n<script>{SCRIPT}</script>\n</body>\n</html>\n")
}

const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Ludus replays</title>
<style>
body { font: 16px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin: 0 0 .5em; }
.bar { display: flex; gap: .6em; align-items: center; flex-wrap: wrap; margin: .6em 0; }
select, button, input { font: inherit; }
#about { color: #555; }
.step { display: grid; grid-template-columns: minmax(18em, 1fr) 2fr; gap: 1.2em; margin-top: 1em; }
.move { background: #f6f6f4; padding: .8em 1em; border-radius: 6px; }
.move .who { font-weight: 600; }
.move .why { margin-top: .6em; padding-left: .8em; border-left: 3px solid #b9b9ff; font-style: italic; white-space: pre-wrap; }
.refused { color: #a00; font-weight: 600; }
pre { white-space: pre-wrap; word-break: break-word; background: #fbfbfb; border: 1px solid #e3e3e3; padding: .6em; margin: 0; max-height: 32em; overflow: auto; font-size: 14px; }
table.board { border-collapse: collapse; margin-bottom: .6em; }
table.board td { width: 2.2em; height: 2.2em; text-align: center; font-size: 1.6em; line-height: 1; padding: 0; }
table.board td.light { background: #eeeed2; }
table.board td.dark { background: #769656; }
.opt { font-weight: 600; }
</style>
</head>
<body>
<h1>Ludus replays</h1>
<div class="bar"><label>Game <select id="pick"></select></label><span id="about"></span></div>
<div class="bar"><button id="first">⏮</button><button id="prev">◀</button><input id="at" type="range" min="0" max="0" value="0"><button id="next">▶</button><button id="last">⏭</button><span id="where"></span></div>
<div id="step" class="step"></div>
"#;

const SCRIPT: &str = r#"
const games = JSON.parse(document.getElementById('games').textContent);
const pick = document.getElementById('pick'), at = document.getElementById('at');
const pieces = {K:'♔',Q:'♕',R:'♖',B:'♗',N:'♘',P:'♙',k:'♚',q:'♛',r:'♜',b:'♝',n:'♞',p:'♟'};
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function board(fen) {
  const t = el('table', 'board'); t.dataset.fen = fen;
  fen.split(' ')[0].split('/').forEach((row, r) => {
    const tr = el('tr'); let c = 0;
    for (const ch of row) {
      if (/[1-8]/.test(ch)) { for (let i = 0; i < +ch; i++) { tr.appendChild(el('td', (r + c) % 2 ? 'dark' : 'light', '')); c++; } }
      else { tr.appendChild(el('td', (r + c) % 2 ? 'dark' : 'light', pieces[ch] || ch)); c++; }
    }
    t.appendChild(tr);
  });
  return t;
}
function show() {
  const g = games[pick.value]; if (!g) return;
  const i = +at.value, s = g.steps[i];
  document.getElementById('about').textContent = `${g.game} ${JSON.stringify(g.parameters)} · ${g.seats.map(x => `${x.seat}: ${x.player || 'open'}${x.result ? ' (' + x.result + ')' : ''}`).join(', ')} · ${g.outcome} · ${g.verdict}`;
  document.getElementById('where').textContent = g.steps.length ? `step ${i + 1} of ${g.steps.length}` : 'no steps';
  const box = document.getElementById('step'); box.replaceChildren();
  if (!s) return;
  const move = el('div', 'move');
  move.appendChild(el('div', 'who', `${s.by}: ${s.call}${s.again ? ' (its answer after waiting)' : ''}`));
  move.appendChild(el('pre', '', JSON.stringify(s.args)));
  if (s.refused) move.appendChild(el('div', 'refused', 'refused'));
  if (s.by_policy) move.appendChild(el('div', 'refused', 'a random legal move, played by the host under the illegal-move policy'));
  if (s.reasoning) move.appendChild(el('div', 'why', s.reasoning));
  if (g.optimality && s.call.endsWith('make_move') && !s.again && !s.refused) {
    const n = g.steps.slice(0, i + 1).filter(x => x.call.endsWith('make_move') && !x.again && !x.refused).length - 1;
    if (n < g.optimality.length) move.appendChild(el('div', 'opt', `optimality ${g.optimality[n]}`));
  }
  box.appendChild(move);
  const view = el('div');
  const fen = s.answer && (s.answer.fen || (s.answer.board && s.answer.board.fen));
  if (typeof fen === 'string') view.appendChild(board(fen));
  view.appendChild(el('pre', 'answer', typeof s.answer === 'string' ? s.answer : JSON.stringify(s.answer, null, 1)));
  box.appendChild(view);
}
games.forEach((g, i) => { const o = el('option', '', `${g.record} · ${g.game} · ${g.outcome}`); o.value = i; pick.appendChild(o); });
function load() { const g = games[pick.value]; at.max = Math.max(0, (g ? g.steps.length : 1) - 1); at.value = 0; show(); }
pick.onchange = load; at.oninput = show;
const go = d => { at.value = Math.min(+at.max, Math.max(0, +at.value + d)); show(); };
document.getElementById('prev').onclick = () => go(-1);
document.getElementById('next').onclick = () => go(1);
document.getElementById('first').onclick = () => { at.value = 0; show(); };
document.getElementById('last').onclick = () => { at.value = at.max; show(); };
document.addEventListener('keydown', e => { if (e.key === 'ArrowRight') go(1); if (e.key === 'ArrowLeft') go(-1); });
load();
"#;

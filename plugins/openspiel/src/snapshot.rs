//! What the bridge answers: after every request, the game as each seat sees
//! it. The plugin keeps the last snapshot (and saves it), so reading the
//! state never waits for the bridge.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Every action so far, chance outcomes included: what rebuilds the game.
    #[serde(default)]
    pub history: Vec<i64>,
    /// The seat to move; none once the game is over.
    #[serde(default)]
    pub current: Option<i64>,
    #[serde(default)]
    pub over: bool,
    /// Each seat's return, once the game is over.
    #[serde(default)]
    pub returns: Option<Vec<f64>>,
    /// Each seat's own view, by seat: shown to that seat alone.
    #[serde(default)]
    pub views: Vec<View>,
    /// What everyone may see: the whole game, where nothing is hidden or
    /// once it is over.
    #[serde(default)]
    pub public: Option<Public>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct View {
    #[serde(default)]
    pub observation: Option<String>,
    #[serde(default)]
    pub information_state: Option<String>,
    /// The seat's legal actions (number, text), when it is to move.
    #[serde(default)]
    pub legal: Option<Vec<(i64, String)>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Public {
    /// OpenSpiel's text of the whole state.
    pub state: String,
    /// Every action as (player, text); chance is player -1. The bridge
    /// sends the entries from `log_from` on; [`Snapshot::follow`] joins them
    /// to those kept.
    pub log: Vec<(i64, String)>,
    #[serde(default)]
    pub log_from: usize,
}

impl Snapshot {
    /// The seat to move, when one is.
    pub fn to_move(&self) -> Option<usize> {
        self.current.filter(|p| *p >= 0 && !self.over).map(|p| p as usize)
    }

    /// The legal actions of `seat`: empty unless it is to move.
    pub fn legal(&self, seat: usize) -> &[(i64, String)] {
        self.views.get(seat).and_then(|v| v.legal.as_deref()).unwrap_or_default()
    }

    /// This snapshot, which follows `before`: its log joined to the entries
    /// `before` kept (the bridge sends only the new ones).
    pub fn follow(mut self, before: Option<&Snapshot>) -> Snapshot {
        if let Some(public) = self.public.as_mut().filter(|p| p.log_from > 0) {
            let kept = before.and_then(|b| b.public.as_ref()).map(|p| &p.log[..p.log.len().min(public.log_from)]).unwrap_or_default();
            public.log.splice(0..0, kept.iter().cloned());
            public.log_from = 0;
        }
        self
    }

    /// The history as lines: `seat 0: e4`, `chance: Deal J`.
    pub fn history_lines(&self) -> Option<Vec<String>> {
        let public = self.public.as_ref()?;
        let who = |p: i64| if p < 0 { "chance".to_string() } else { format!("seat {p}") };
        Some(public.log.iter().map(|(p, text)| format!("{}: {text}", who(*p))).collect())
    }
}

/// How good an agent's move was (`Match.score` in the bridge): Kuhn and Leduc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
pub struct Scored {
    pub seat: usize,
    pub value: f64,
    pub best: f64,
    pub optimality: f64,
}

/// A line from the bridge.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// The answer to request `id`: the game after it, or why it was refused;
    /// and the score of the move it made, where the game has one.
    Answer {
        id: u64,
        result: Result<Snapshot, String>,
        scored: Option<Scored>,
    },
    /// What the bridge is busy with (installing OpenSpiel, solving a game).
    Notice(String),
    Garbage(String),
}

pub fn parse(line: &str) -> Incoming {
    let garbage = || Incoming::Garbage(line.chars().take(200).collect());
    let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(line) else { return garbage() };
    if let Some(Value::String(text)) = msg.remove("notice") {
        return Incoming::Notice(text);
    }
    let Some(id) = msg.get("id").and_then(Value::as_u64) else { return garbage() };
    // The score is the move's, not the game's: kept apart from the snapshot.
    let scored = msg.get_mut("ok").and_then(Value::as_object_mut).and_then(|ok| ok.remove("scored"));
    let scored = scored.and_then(|s| serde_json::from_value(s).ok());
    let result = match (msg.remove("ok"), msg.remove("error")) {
        (Some(ok), _) => serde_json::from_value(ok).map_err(|e| format!("the OpenSpiel bridge answered what this plugin cannot read: {e}")),
        (None, Some(Value::String(e))) => Err(e),
        _ => return garbage(),
    };
    Incoming::Answer { id, result, scored }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_notices_and_garbage_are_told_apart() {
        let line = r#"{"id":3,"ok":{"history":[0,1],"current":0,"over":false,"returns":null,"views":[{"observation":"0","legal":[[0,"Pass"],[1,"Bet"]]},{"observation":"1"}]}}"#;
        let Incoming::Answer { id: 3, result: Ok(snap), scored: None } = parse(line) else { panic!("{:?}", parse(line)) };
        assert_eq!(snap.to_move(), Some(0));
        assert_eq!(snap.legal(0)[1], (1, "Bet".to_string()));
        assert!(snap.legal(1).is_empty() && snap.history_lines().is_none());
        assert_eq!(parse(r#"{"id":4,"error":"no"}"#), Incoming::Answer { id: 4, result: Err("no".into()), scored: None });
        let scored = r#"{"id":5,"ok":{"history":[],"scored":{"seat":0,"value":-0.5,"best":-0.3,"optimality":0.0}}}"#;
        let Incoming::Answer { scored: Some(s), result: Ok(_), .. } = parse(scored) else { panic!("{:?}", parse(scored)) };
        assert_eq!((s.seat, s.best), (0, -0.3));
        assert_eq!(parse(r#"{"notice":"installing"}"#), Incoming::Notice("installing".into()));
        assert!(matches!(parse("Warning! quoridor"), Incoming::Garbage(_)));
    }

    #[test]
    fn a_log_sent_in_parts_is_joined_to_what_was_kept() {
        let public = |log: &[(i64, &str)], from| Public {
            state: String::new(),
            log: log.iter().map(|(p, t)| (*p, t.to_string())).collect(),
            log_from: from,
        };
        let first = Snapshot { public: Some(public(&[(0, "x(1,1)"), (1, "o(0,0)")], 0)), ..Snapshot::default() }.follow(None);
        let next = Snapshot { public: Some(public(&[(0, "x(2,2)")], 2)), ..Snapshot::default() }.follow(Some(&first));
        assert_eq!(next.history_lines().unwrap(), ["seat 0: x(1,1)", "seat 1: o(0,0)", "seat 0: x(2,2)"]);
        // A rebuilt game's bridge sends everything again.
        let rebuilt = Snapshot { public: Some(public(&[(0, "x(1,1)")], 0)), ..Snapshot::default() }.follow(Some(&next));
        assert_eq!(rebuilt.history_lines().unwrap(), ["seat 0: x(1,1)"]);
    }
}

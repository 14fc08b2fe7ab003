//! The Showdown protocol's framing, for both transports:
//!
//! - the `simulate-battle` sidecar writes blocks (`update`, `sideupdate` +
//!   player, `end`) separated by blank lines, one line per channel message;
//! - a server WebSocket frame is `>ROOMID` on its first line (absent for the
//!   global room) followed by `|TYPE|…` lines.
//!
//! Both become [`Event`]s. Secret `|split|` lines (exact HP for one player)
//! are dropped, so the battle tracker sees what a player online would see.

/// What one protocol line or block means for a client.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A battle log line (`|move|…`, `|turn|3`, …) for `room` (empty offline).
    Log { room: String, line: String },
    /// A decision request for player `side` (offline) or for us (online).
    Request { room: String, side: String, json: String },
    /// `|error|…` for a player: an invalid or unavailable choice.
    Error { room: String, side: String, text: String },
    /// A global line online (`|challstr|…`, `|pm|…`, `|updateuser|…`, `|popup|…`).
    Global { line: String },
    /// Offline: the battle ended; the simulator's summary JSON.
    End { json: String },
    /// Offline: what the sidecar is busy with before the simulator runs
    /// (`|ludus-notice|…`: installing it on first use). Not a simulator line.
    Notice { text: String },
}

/// The sidecar's own lines, outside the simulator's blocks.
const NOTICE: &str = "|ludus-notice|";

/// The fields of a `|a|b|c` line: `["a", "b", "c"]`. A line without the
/// leading `|` is plain text and has none.
pub fn fields(line: &str) -> Vec<&str> {
    match line.strip_prefix('|') {
        Some(rest) => rest.split('|').collect(),
        None => Vec::new(),
    }
}

/// Reads the sidecar's output a line at a time.
#[derive(Default, Debug)]
pub struct SimReader {
    state: SimState,
    /// The next update line is the secret half of a `|split|`: skip it.
    skip_secret: bool,
}

#[derive(Default, Debug, PartialEq)]
enum SimState {
    #[default]
    Between,
    Update,
    SideHeader,
    Side(String),
    End,
}

impl SimReader {
    pub fn line(&mut self, line: &str) -> Option<Event> {
        let line = line.trim_end_matches('\r');
        match std::mem::take(&mut self.state) {
            SimState::Between if line.starts_with(NOTICE) => Some(Event::Notice { text: line[NOTICE.len()..].to_string() }),
            SimState::Between => {
                self.state = match line {
                    "update" => SimState::Update,
                    "sideupdate" => SimState::SideHeader,
                    "end" => SimState::End,
                    _ => SimState::Between,
                };
                None
            }
            _ if line.is_empty() => None,
            SimState::Update => {
                self.state = SimState::Update;
                if std::mem::take(&mut self.skip_secret) {
                    return None;
                }
                if line.starts_with("|split|") {
                    self.skip_secret = true;
                    return None;
                }
                Some(Event::Log { room: String::new(), line: line.to_string() })
            }
            SimState::SideHeader => {
                self.state = SimState::Side(line.to_string());
                None
            }
            SimState::Side(side) => {
                let event = side_line(String::new(), side.clone(), line);
                self.state = SimState::Side(side);
                event
            }
            SimState::End => {
                self.state = SimState::End;
                Some(Event::End { json: line.to_string() })
            }
        }
    }
}

fn side_line(room: String, side: String, line: &str) -> Option<Event> {
    if let Some(json) = line.strip_prefix("|request|") {
        return (!json.is_empty()).then(|| Event::Request { room, side, json: json.to_string() });
    }
    line.strip_prefix("|error|").map(|text| Event::Error { room, side, text: text.to_string() })
}

/// Splits one server WebSocket frame into events.
pub fn server_frame(frame: &str) -> Vec<Event> {
    let mut lines = frame.split('\n');
    let room = match frame.strip_prefix('>') {
        Some(_) => lines.next().unwrap_or("").trim_start_matches('>').trim().to_string(),
        None => String::new(),
    };
    lines
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty())
        .filter_map(|line| {
            if room.is_empty() || room == "lobby" {
                return Some(Event::Global { line: line.to_string() });
            }
            if line.starts_with("|request|") || line.starts_with("|error|") {
                return side_line(room.clone(), String::new(), line);
            }
            Some(Event::Log { room: room.clone(), line: line.to_string() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_blocks_become_events_without_secrets() {
        let out = "update\n|t:|1\n|split|p1\n|switch|p1a: Mew|Mew, L80|300/300\n|switch|p1a: Mew|Mew, L80|100/100\n|turn|1\n\n\
                   sideupdate\np2\n|request|{\"wait\":true}\n\nsideupdate\np1\n|error|[Invalid choice] no\n\nend\n{\"winner\":\"A\"}\n";
        let mut r = SimReader::default();
        let events: Vec<Event> = out.split('\n').filter_map(|l| r.line(l)).collect();
        let log = |l: &str| Event::Log { room: String::new(), line: l.into() };
        assert_eq!(
            events,
            [
                log("|t:|1"),
                log("|switch|p1a: Mew|Mew, L80|100/100"),
                log("|turn|1"),
                Event::Request { room: String::new(), side: "p2".into(), json: "{\"wait\":true}".into() },
                Event::Error { room: String::new(), side: "p1".into(), text: "[Invalid choice] no".into() },
                Event::End { json: "{\"winner\":\"A\"}".into() },
            ]
        );
    }

    #[test]
    fn server_frames_split_by_room() {
        let e = server_frame("|challstr|4|abc");
        assert_eq!(e, [Event::Global { line: "|challstr|4|abc".into() }]);
        let e = server_frame(">battle-gen9randombattle-1\n|init|battle\n|request|{\"rqid\":2}\n");
        assert_eq!(e.len(), 2);
        assert!(matches!(&e[1], Event::Request { room, json, .. } if room == "battle-gen9randombattle-1" && json == "{\"rqid\":2}"));
    }

    #[test]
    fn fields_split_on_bars() {
        assert_eq!(fields("|move|p1a: Mew|Psychic|p2a: Ditto"), ["move", "p1a: Mew", "Psychic", "p2a: Ditto"]);
        assert!(fields("plain").is_empty());
    }
}

//! The chess plugin: one instance is one game (its `game_id` is the session
//! id). The computer thinks in a timer event after the agent's move, never
//! inside `finish_turn`; players are told apart by their MCP connection. A
//! human opponent is the person at the agent's own client: their move is
//! asked with a form (elicitation) within the agent's call.

ludus_sdk::bindings!(world: "ludus:chess/chess", contract: "../../wit/plugin", lifecycle, client, module: "crate::component");

use std::cell::RefCell;

use crate::engine;
use crate::rules::{Game, Notation, color_name};
use cozy_chess::Color;
use exports::ludus::chess::tools::{Board, Color as Side, GameType, Guest, TurnStatus};
use exports::ludus::plugin::access::{Audience, Grant};
use ludus_sdk::client::{self, ElicitReply};
use ludus_sdk::content::{Block, Media};
use ludus_sdk::types::EmbeddedResource;
use ludus_sdk::{PluginInfo, ResourceInfo, ToolHint, reply};

/// Who sits on one side.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum Seat {
    Open,
    Computer,
    Agent(String),
    /// The person at the keyboard of the creating agent's client.
    Human,
}

struct Match {
    game: Game,
    seats: [Seat; 2],
    difficulty: Option<u8>,
    engine: engine::Engine,
    /// Embed the board in every answer (for hosts without MCP Apps).
    show_ui: bool,
    /// Show the board as a PNG in every answer.
    image: bool,
    /// How the engine found its last move, for the next player call's log
    /// (the engine moves in a timer event, which has no client to tell).
    search_note: Option<String>,
    /// The creator's side: the result record's verdict is theirs.
    creator: Color,
    /// Moves refused as illegal, and the first one's place among the moves sent.
    illegal: u32,
    first_illegal: Option<u32>,
}

/// The MCP Apps board (self-contained: the default MCP Apps CSP allows nothing external).
const BOARD_URI: &str = "ui://chess/board";
const BOARD_HTML: &str = include_str!("board.html");

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '<' => out.push_str("\\u003c"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

thread_local! {
    static MATCH: RefCell<Option<Match>> = const { RefCell::new(None) };
}

/// Delay before the computer moves, so the agent's answer goes out first.
const THINK_DELAY_MS: u32 = 20;

fn side(c: Color) -> Side {
    match c {
        Color::White => Side::White,
        Color::Black => Side::Black,
    }
}

fn idx(c: Color) -> usize {
    c as usize
}

/// Runs `f` on the game; what the engine did since the last call goes to
/// the calling client's log first.
fn with_match<T>(f: impl FnOnce(&mut Match) -> Result<T, String>) -> Result<T, String> {
    MATCH.with_borrow_mut(|m| {
        let m = m.as_mut().ok_or("this game was not started")?;
        if let Some(note) = m.search_note.take() {
            ludus_sdk::log(ludus_sdk::LogLevel::Info, &note);
        }
        f(m)
    })
}

/// What a player waiting on an open seat is told.
fn open_seat_words(side: Color) -> String {
    format!(
        "{}'s seat is open: waiting for an agent to join with the join code (`chess_join_game`); nobody plays it until \
         then. To play both sides yourself, join with the code too.",
        color_name(side)
    )
}

impl Match {
    /// The side this caller moves now, if it may: the side to move, when
    /// the caller holds its seat. An open seat is played by nobody.
    fn may_move(&self, caller: &str) -> Result<Color, String> {
        let turn = self.game.turn();
        let mine = |s: &Seat| *s == Seat::Agent(caller.to_string());
        let seated = self.seats.iter().any(mine);
        match &self.seats[idx(turn)] {
            s if mine(s) => Ok(turn),
            _ if !seated => Err("you do not play in this game; call `chess_join_game` with its join code to take a free side".into()),
            Seat::Open => Err(open_seat_words(turn)),
            Seat::Computer => Err("it is the computer's move; call `chess_wait_for_next_turn`".into()),
            Seat::Human => Err("it is the human's move; call `chess_wait_for_next_turn` to ask them for it".into()),
            Seat::Agent(_) => Err(format!("it is {}'s move (the other agent); call `chess_wait_for_next_turn`", color_name(turn))),
        }
    }

    /// The caller's side: the side to move when it holds both (self-play).
    fn your_color(&self, caller: &str) -> Option<Color> {
        let turn = self.game.turn();
        let me = Seat::Agent(caller.to_string());
        if self.seats[idx(turn)] == me {
            return Some(turn);
        }
        if self.seats[idx(!turn)] == me {
            return Some(!turn);
        }
        None
    }

    /// The caller's sides, in words ("White", "White and Black", "no side").
    fn your_sides(&self, caller: &str) -> &'static str {
        let me = Seat::Agent(caller.to_string());
        match (self.seats[0] == me, self.seats[1] == me) {
            (true, true) => "White and Black",
            (true, false) => "White",
            (false, true) => "Black",
            (false, false) => "no side",
        }
    }

    /// The side whose seat is open, if one is.
    fn open_seat(&self) -> Option<Color> {
        [Color::White, Color::Black].into_iter().find(|c| self.seats[idx(*c)] == Seat::Open)
    }

    /// The number of the next move of the game (`decision`).
    fn decision_due(&self) -> u32 {
        self.game.uci.len() as u32 + 1
    }

    /// Tells the host who sits where, and each side's result once the game is over.
    fn tell_seats(&self) {
        use ludus_sdk::outcome::Verdict;
        use ludus_sdk::seats::{Holder, Seat as Told};
        let result = |c: Color| {
            self.game.outcome.as_ref().map(|o| match o.result {
                "1/2-1/2" => Verdict::Draw,
                "1-0" if c == Color::White => Verdict::Won,
                "0-1" if c == Color::Black => Verdict::Won,
                _ => Verdict::Lost,
            })
        };
        let seats: Vec<Told> = [Color::White, Color::Black]
            .into_iter()
            .map(|c| Told {
                name: color_name(c).to_lowercase(),
                holder: match &self.seats[idx(c)] {
                    Seat::Open => Holder::Open,
                    Seat::Agent(caller) => Holder::Agent(caller.clone()),
                    Seat::Computer => Holder::Builtin(format!("chess-engine/{}", self.difficulty.unwrap_or(5))),
                    Seat::Human => Holder::Builtin("human".into()),
                },
                result: result(c),
            })
            .collect();
        ludus_sdk::seats::tell(&seats);
    }

    fn player_name(&self, c: Color) -> String {
        match &self.seats[idx(c)] {
            Seat::Computer => format!("Ludus engine level {}", self.difficulty.unwrap_or(5)),
            Seat::Agent(_) => "agent".into(),
            Seat::Human => "human".into(),
            Seat::Open => "?".into(),
        }
    }

    /// Schedules the computer's move if it is its turn.
    fn wake_computer(&self) {
        if self.game.outcome.is_none() && self.seats[idx(self.game.turn())] == Seat::Computer {
            ludus_sdk::host::set_timer(THINK_DELAY_MS);
        }
    }

    /// Asks the human for their move with a form of the legal moves, plays
    /// it, and says what happened. A human who declines, or a client that
    /// cannot ask, leaves the move due: the agent asks again later.
    fn ask_human(&mut self) -> String {
        let side = color_name(self.game.turn());
        let mut legal = self.game.legal_in(Notation::San);
        legal.sort();
        let form = serde_json::json!({
            "type": "object",
            "properties": {"move": {"type": "string", "title": "Your move", "description": "A legal move in SAN", "enum": legal}},
            "required": ["move"],
        });
        let last = self.game.san.last().map_or("none", String::as_str);
        let message = format!(
            "Chess against your agent: you play {side}, to move. Last move: {last}.\n{}",
            self.game.diagram(self.game.turn() == Color::Black)
        );
        let asked = "Call `chess_wait_for_next_turn` to ask them again.";
        let played = match client::elicit(&message, &form.to_string()) {
            Err(e) => return format!("The human could not be asked for their move: {e}. {asked}"),
            Ok(ElicitReply::Decline | ElicitReply::Cancel) => return format!("The human did not choose a move. {asked}"),
            Ok(ElicitReply::Accept(json)) => serde_json::from_str::<serde_json::Value>(&json)
                .ok()
                .and_then(|v| v["move"].as_str().map(str::to_string))
                .unwrap_or_default(),
        };
        match self.game.parse(&played) {
            Ok((mv, _)) => {
                let san = self.game.san_of(mv);
                self.game.play_written(mv, san.clone());
                self.tell_standing();
                format!("The human ({side}) played {san}.")
            }
            Err(why) => format!("The human's move {played:?} was refused: {why}. {asked}"),
        }
    }

    /// The human's move, if it is due; what happened, for the answer.
    fn human_if_due(&mut self) -> Option<String> {
        (self.game.outcome.is_none() && self.seats[idx(self.game.turn())] == Seat::Human).then(|| self.ask_human())
    }

    /// The board as a PNG block, for games that asked for images.
    fn picture(&self, from_black: bool) -> Vec<Block> {
        if !self.image {
            return Vec::new();
        }
        let g = &self.game;
        let last_move = g.uci.last().and_then(|u| Some((u.get(0..2)?.parse().ok()?, u.get(2..4)?.parse().ok()?)));
        let check = (!g.board.checkers().is_empty()).then(|| g.board.king(g.turn()));
        let marks = crate::picture::Marks { last_move, check, from_black };
        match crate::picture::png(&g.board, &marks) {
            Ok(data) => vec![Block::Image(Media { mime_type: "image/png".into(), data })],
            Err(e) => {
                ludus_sdk::log(ludus_sdk::LogLevel::Warn, &format!("the board image failed: {e}"));
                Vec::new()
            }
        }
    }

    /// Tells the host where the game stands (`outcome`), and when it has
    /// ended (it then shows the seed and frees what the session holds),
    /// with each seat's result.
    fn tell_standing(&self) {
        ludus_sdk::outcome::tell(&self.statement());
        if self.game.outcome.is_some() {
            self.tell_seats();
            ludus_sdk::lifecycle::game_over();
        }
    }

    /// A move refused as illegal, counted for the result record.
    fn refused(&mut self) {
        self.first_illegal.get_or_insert(self.game.uci.len() as u32 + self.illegal);
        self.illegal += 1;
        ludus_sdk::outcome::tell(&self.statement());
    }

    /// The game for its result record: the creator's verdict; the opponent
    /// and level; the result, its reason and the PGN once it is over.
    fn statement(&self) -> ludus_sdk::outcome::Statement {
        use ludus_sdk::outcome::Verdict;
        let g = &self.game;
        let opponent = match &self.seats[idx(!self.creator)] {
            Seat::Computer => "computer",
            Seat::Human => "human",
            Seat::Agent(_) | Seat::Open => "agent",
        };
        let level = self.difficulty.map_or("null".into(), |d| d.to_string());
        let colour = color_name(self.creator).to_lowercase();
        let parameters = format!("{{\"opponent\":\"{opponent}\",\"level\":{level},\"colour\":\"{colour}\"}}");
        let (verdict, figures) = match &g.outcome {
            None => (Verdict::Playing, format!("{{\"level\":{level}}}")),
            Some(o) => {
                let won = if self.creator == Color::White { "1-0" } else { "0-1" };
                let verdict = match o.result {
                    "1/2-1/2" => Verdict::Draw,
                    r if r == won => Verdict::Won,
                    _ => Verdict::Lost,
                };
                let pgn = g.pgn(&self.player_name(Color::White), &self.player_name(Color::Black), &today());
                let figures = format!(
                    "{{\"result\":{},\"reason\":{},\"level\":{level},\"pgn\":{}}}",
                    json_str(o.result),
                    json_str(&o.reason),
                    json_str(&pgn)
                );
                (verdict, figures)
            }
        };
        ludus_sdk::outcome::Statement {
            verdict,
            parameters,
            moves: g.uci.len() as u32,
            illegal_moves: self.illegal,
            first_failing_move: self.first_illegal,
            optimum: None,
            figures,
        }
    }

    /// The board for `caller`, with `headline` and the next action.
    fn view(&self, caller: &str, headline: &str) -> Board {
        let g = &self.game;
        let yours = self.your_color(caller);
        let status = if g.outcome.is_some() {
            TurnStatus::GameOver
        } else if self.may_move(caller).is_ok() {
            TurnStatus::YourTurn
        } else {
            TurnStatus::OpponentTurn
        };
        let next = match status {
            TurnStatus::GameOver => "The game is over.".to_string(),
            TurnStatus::YourTurn => format!(
                "Your turn ({} to move): call `chess_finish_turn` with your move (UCI like e2e4 or SAN like Nf3) and \
                 `decision` {}.",
                color_name(g.turn()),
                self.decision_due()
            ),
            TurnStatus::OpponentTurn => match self.seats[idx(g.turn())] {
                Seat::Computer => "The computer is thinking: call `chess_wait_for_next_turn`.".into(),
                Seat::Human => "The human is to move: call `chess_wait_for_next_turn` to ask them.".into(),
                Seat::Open => format!("{} Call `chess_wait_for_next_turn` to wait for the joiner.", open_seat_words(g.turn())),
                Seat::Agent(_) => "Waiting for the other agent: call `chess_wait_for_next_turn`.".into(),
            },
        };
        let outcome = g.outcome.as_ref();
        let pgn = outcome.map(|_| g.pgn(&self.player_name(Color::White), &self.player_name(Color::Black), &today()));
        let fen = g.fen();
        // Pushed piece by piece rather than through `format!`: this runs on every answer.
        let mut body = String::with_capacity(512);
        if !headline.is_empty() {
            body.push_str(headline);
            body.push_str("\n\n");
        }
        body.push_str(&g.diagram(yours == Some(Color::Black)));
        for part in [
            "\n",
            color_name(g.turn()),
            " to move. Last move: ",
            g.san.last().map_or("none", String::as_str),
            ". You play: ",
            self.your_sides(caller),
            ".\nFEN: ",
            &fen,
        ] {
            body.push_str(part);
        }
        if let Some(o) = outcome {
            body.push_str(&format!("\n\nGame over: {} ({}).\n\n{}", o.result, o.reason, pgn.as_deref().unwrap_or("")));
        } else if !g.board.checkers().is_empty() {
            body.push('\n');
            body.push_str(color_name(g.turn()));
            body.push_str(" is in check.");
        }
        let game_id = ludus_sdk::session_id().unwrap_or_default();
        let legal_moves = if outcome.is_some() { Vec::new() } else { g.legal_in(Notation::Uci) };
        let embedded = self.show_ui.then(|| {
            // Hosts of the MCP-UI era render this HTML as is: the state rides along.
            let state = format!(
                "{{\"game_id\":{},\"fen\":{},\"your_color\":{},\"status\":{},\"last_move_uci\":{},\"legal_moves\":[{}]}}",
                json_str(&game_id),
                json_str(&fen),
                yours.map_or("null".into(), |c| json_str(&color_name(c).to_lowercase())),
                json_str(match status {
                    TurnStatus::YourTurn => "your-turn",
                    TurnStatus::OpponentTurn => "opponent-turn",
                    TurnStatus::GameOver => "game-over",
                }),
                g.uci.last().map_or("null".into(), |m| json_str(m)),
                legal_moves.iter().map(|m| json_str(m)).collect::<Vec<_>>().join(",")
            );
            EmbeddedResource {
                uri: format!("ui://chess/{game_id}"),
                mime_type: "text/html".into(),
                text: BOARD_HTML.replacen("<script>", &format!("<script>window.__LUDUS_STATE__ = {state};</script>\n<script>"), 1),
            }
        });
        Board {
            content: self.picture(yours == Some(Color::Black)),
            game_id,
            fen,
            turn: side(g.turn()),
            your_color: yours.map(side),
            status,
            last_move: g.san.last().cloned(),
            last_move_uci: g.uci.last().cloned(),
            embedded,
            legal_moves,
            legal_moves_for: outcome.is_none().then(|| side(g.turn())),
            decision: self.decision_due(),
            open_seat: self.open_seat().map(side),
            difficulty: self.difficulty,
            result: outcome.map(|o| o.result.to_string()),
            reason: outcome.map(|o| o.reason.clone()),
            pgn,
            text: reply(body, next),
        }
    }
}

/// Today's date for PGN headers (YYYY.MM.DD), from the WASI wall clock.
fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}.{month:02}.{day:02}")
}

struct Plugin;

impl exports::ludus::plugin::meta::Guest for Plugin {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "chess".into(),
            title: "Chess".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Chess against a built-in engine (levels 1–10) or another agent, with full rules, UCI and SAN.".into(),
            tools: vec![
                ToolHint::creates("create-game").title("Start a chess game").ui(BOARD_URI),
                ToolHint::uses("wait-for-next-turn", "game-id").title("Wait for your turn").read_only().waits(25_000, 25_000).ui(BOARD_URI),
                ToolHint::uses("finish-turn", "game-id").title("Play your move").ui(BOARD_URI),
                ToolHint::uses("join-game", "game-id").title("Join a game").ui(BOARD_URI),
            ],
            resources: vec![
                ResourceInfo {
                    uri: BOARD_URI.into(),
                    name: "board".into(),
                    description: "Interactive chess board (MCP Apps): shows the position of a chess tool result and plays moves through chess_finish_turn.".into(),
                    mime_type: "text/html;profile=mcp-app".into(),
                },
                ResourceInfo {
                    uri: "chess://game/{session}/pgn".into(),
                    name: "pgn".into(),
                    description: "The game so far in PGN (game id in place of {session}).".into(),
                    mime_type: "application/x-chess-pgn".into(),
                },
                ResourceInfo {
                    uri: "chess://game/{session}/fen".into(),
                    name: "fen".into(),
                    description: "The current position in FEN (game id in place of {session}).".into(),
                    mime_type: "text/plain".into(),
                },
            ],
            idle_timeout_ms: Some(60 * 60 * 1000),
        }
    }

    /// Per-game resources, read in the game's own instance.
    fn read_resource(uri: String) -> Result<String, String> {
        if uri == BOARD_URI {
            return Ok(BOARD_HTML.to_string());
        }
        with_match(|m| {
            if uri.ends_with("/pgn") {
                Ok(m.game.pgn(&m.player_name(Color::White), &m.player_name(Color::Black), &today()))
            } else if uri.ends_with("/fen") {
                Ok(m.game.fen())
            } else {
                Err(format!("chess has no resource {uri}"))
            }
        })
    }
}

impl Guest for Plugin {
    fn create_game(
        kind: GameType,
        color: Option<Side>,
        show_ui: Option<bool>,
        image: Option<bool>,
        difficulty: Option<u8>,
        _seed: Option<u64>,
    ) -> Result<Board, String> {
        let me = ludus_sdk::host::caller();
        let mine = match color.unwrap_or(Side::White) {
            Side::White => Color::White,
            Side::Black => Color::Black,
        };
        let (other, difficulty) = match kind {
            GameType::Computer => {
                let d = difficulty.unwrap_or(5);
                if !(1..=10).contains(&d) {
                    return Err(format!("difficulty must be between 1 and 10, got {d}"));
                }
                (Seat::Computer, Some(d))
            }
            GameType::Agent | GameType::Human if difficulty.is_some() => {
                return Err("difficulty applies only to games against the computer".into());
            }
            GameType::Agent => (Seat::Open, None),
            GameType::Human => (Seat::Human, None),
        };
        let mut seats = [Seat::Open, Seat::Open];
        seats[idx(mine)] = Seat::Agent(me.clone());
        seats[idx(!mine)] = other;
        let mut m = Match {
            game: Game::default(),
            seats,
            difficulty,
            engine: engine::Engine::new(engine::TT_ENTRIES, ludus_sdk::host::seed()),
            show_ui: show_ui.unwrap_or(false),
            image: image.unwrap_or(false),
            search_note: None,
            creator: mine,
            illegal: 0,
            first_illegal: None,
        };
        m.wake_computer();
        m.tell_standing();
        m.tell_seats();
        let headline = match kind {
            GameType::Computer => {
                format!("New game against the computer (level {}). You play {}.", difficulty.unwrap_or(5), color_name(mine))
            }
            GameType::Agent => format!(
                "New game between agents. You play {}. Give the other agent this game id and the join code below; it \
                 calls `chess_join_game`. {}'s seat is open until then, and nobody plays it.",
                color_name(mine),
                color_name(!mine)
            ),
            GameType::Human => {
                let first = m.human_if_due().map(|h| format!(" {h}")).unwrap_or_default();
                format!("New game against the human at your client. You play {}.{first}", color_name(mine))
            }
        };
        let view = m.view(&me, &headline);
        MATCH.set(Some(m));
        Ok(view)
    }

    fn wait_for_next_turn(_game_id: String) -> Result<Board, String> {
        let me = ludus_sdk::host::caller();
        with_match(|m| {
            // Chess hides nothing: anyone with the game id may watch (the
            // host lets spectators call this tool); they get the position at once.
            if m.your_color(&me).is_none() {
                return Ok(m.view(&me, "You are watching this game (to play, take a free side with `chess_join_game`)."));
            }
            if let Some(human) = m.human_if_due() {
                return Ok(m.view(&me, &human));
            }
            if m.game.outcome.is_some() || m.may_move(&me).is_ok() {
                return Ok(m.view(&me, ""));
            }
            if ludus_sdk::wait_timed_out() {
                return Ok(m.view(&me, "Timeout: the opponent has not moved yet. Call this tool again immediately to keep waiting."));
            }
            ludus_sdk::wait(0);
            Ok(m.view(&me, ""))
        })
    }

    fn finish_turn(_game_id: String, text: String, claim_win: Option<bool>, decision: Option<u32>) -> Result<Board, String> {
        let me = ludus_sdk::host::caller();
        with_match(|m| {
            // First: a move sent again after it was played gets its answer, even once the game is over.
            ludus_sdk::decision::check(decision, m.decision_due())?;
            if let Some(o) = &m.game.outcome {
                return Err(format!("the game is over: {} ({})", o.result, o.reason));
            }
            let mover = m.may_move(&me)?;
            let (mv, notation) = match m.game.parse(&text) {
                Ok(x) => x,
                Err(why) => {
                    m.refused();
                    let legal = m.game.legal_in(Notation::of(&text)).join(", ");
                    return Err(reply(
                        format!("Illegal move: {why}.\n\n{}", m.game.diagram(mover == Color::Black)),
                        format!("Legal moves: {legal}"),
                    ));
                }
            };
            let san = m.game.san_of(mv);
            // SAN marks a mate with `#`: no need to play the move on a copy to know.
            let mates = san.ends_with('#');
            if claim_win == Some(true) && !mates {
                return Err(format!(
                    "Claim rejected: {san} does not checkmate, so the move was not played. Play it without claim_win, or find the mate."
                ));
            }
            m.game.play_written(mv, san.clone());
            m.wake_computer();
            m.tell_standing();
            let shown = if notation == Notation::Uci { m.game.uci.last().cloned().unwrap_or_default() } else { san.clone() };
            let mut headline = if mates && claim_win == Some(true) {
                format!("{} played {shown}: checkmate, claim accepted.", color_name(mover))
            } else {
                format!("{} played {shown}.", color_name(mover))
            };
            if let Some(human) = m.human_if_due() {
                headline = format!("{headline} {human}");
            }
            Ok(m.view(&me, &headline))
        })
    }

    /// Takes the open side. The creator may take it too (self-play): it
    /// then plays whichever side is to move.
    fn join_game(_game_id: String) -> Result<Board, String> {
        let me = ludus_sdk::host::caller();
        with_match(|m| {
            if m.seats.contains(&Seat::Computer) {
                return Err("this is a game against the computer; it cannot be joined".into());
            }
            if m.seats.contains(&Seat::Human) {
                return Err("this is a game against a human at another agent's client; it cannot be joined".into());
            }
            let Some(free) = m.open_seat() else {
                return match m.your_color(&me) {
                    Some(_) => Err(format!("you already play {} in this game, and no seat is open", m.your_sides(&me))),
                    None => Err("this game is full: both sides are taken".into()),
                };
            };
            let both = m.your_color(&me).is_some();
            m.seats[idx(free)] = Seat::Agent(me.clone());
            m.tell_seats();
            let headline = if both {
                format!("You took {} too: you play both sides, each when it is to move.", color_name(free))
            } else {
                format!("You joined and play {}.", color_name(free))
            };
            Ok(m.view(&me, &headline))
        })
    }
}

// The illegal-move policy's random move: the caller's legal moves in UCI
// (as the board lists them), when it is that player's turn.
ludus_sdk::legal_moves!(Plugin, || {
    let me = ludus_sdk::host::caller();
    MATCH.with_borrow(|m| {
        let Some(m) = m.as_ref().filter(|m| m.game.outcome.is_none() && m.may_move(&me).is_ok()) else { return Vec::new() };
        let ucis = m.game.legal_moves().into_iter().map(|mv| m.game.uci_of(mv));
        ucis.map(|uci| ("finish-turn", format!("{{\"move\":\"{uci}\"}}"))).collect()
    })
});

impl exports::ludus::plugin::access::Guest for Plugin {
    /// Seats by join code; the position is public (chess hides nothing).
    fn grants() -> Vec<Grant> {
        vec![
            Grant { name: "join-game".into(), audience: Audience::Joins },
            Grant { name: "wait-for-next-turn".into(), audience: Audience::Spectators },
            Grant { name: "chess://game/{session}/pgn".into(), audience: Audience::Spectators },
            Grant { name: "chess://game/{session}/fen".into(), audience: Audience::Spectators },
        ]
    }
}

/// What a restart keeps of a match: the moves (the position and every rule
/// that ends a game follow from them), the seats, and where the engine's
/// random stream stands.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    start: String,
    moves: Vec<String>,
    seats: [Seat; 2],
    difficulty: Option<u8>,
    show_ui: bool,
    image: bool,
    rng: u64,
    creator_white: bool,
    illegal: u32,
    first_illegal: Option<u32>,
}

impl exports::ludus::plugin::durable::Guest for Plugin {
    fn save() -> Vec<u8> {
        MATCH.with_borrow(|m| {
            let saved = m.as_ref().map(|m| Saved {
                start: format!("{}", m.game.start),
                moves: m.game.uci.clone(),
                seats: m.seats.clone(),
                difficulty: m.difficulty,
                show_ui: m.show_ui,
                image: m.image,
                rng: m.engine.rng(),
                creator_white: m.creator == Color::White,
                illegal: m.illegal,
                first_illegal: m.first_illegal,
            });
            ludus_sdk::durable::write(&saved)
        })
    }

    /// Replays the moves; a computer move that was due is made again after
    /// the restore (same position, same random stream: the same move).
    fn restore(state: Vec<u8>) -> Result<(), String> {
        let Some(saved) = ludus_sdk::durable::read::<Option<Saved>>(&state)? else { return Ok(()) };
        let mut game = Game::from_fen(&saved.start)?;
        for uci in &saved.moves {
            let (mv, _) = game.parse(uci).map_err(|e| format!("stored move {uci}: {e}"))?;
            game.play(mv);
        }
        let mut engine = engine::Engine::new(engine::TT_ENTRIES, 0);
        engine.resume_at(saved.rng);
        let m = Match {
            game,
            seats: saved.seats,
            difficulty: saved.difficulty,
            engine,
            show_ui: saved.show_ui,
            image: saved.image,
            search_note: None,
            creator: if saved.creator_white { Color::White } else { Color::Black },
            illegal: saved.illegal,
            first_illegal: saved.first_illegal,
        };
        m.wake_computer();
        MATCH.set(Some(m));
        Ok(())
    }
}

impl exports::ludus::plugin::events::Guest for Plugin {
    /// The computer's move: searched here, in a timer event, not in a tool call.
    fn on_timer(_id: u64) {
        MATCH.with_borrow_mut(|m| {
            let Some(m) = m.as_mut() else { return };
            if m.game.outcome.is_some() || m.seats[idx(m.game.turn())] != Seat::Computer {
                return;
            }
            let history = m.game.history_hashes();
            let lvl = engine::level(m.difficulty.unwrap_or(5));
            if let Some(mv) = m.engine.choose(&m.game.board, &history, lvl) {
                let san = m.game.san_of(mv);
                m.search_note = Some(format!(
                    "the engine (level {}) played {san} after searching {} positions to depth {}",
                    m.difficulty.unwrap_or(5),
                    m.engine.last_nodes,
                    m.engine.last_depth
                ));
                m.game.play_written(mv, san);
            }
            m.tell_standing();
        });
    }

    fn on_message(_channel: u32, _data: String) {}

    fn on_closed(_channel: u32, _reason: String) {}
}

// Exports only exist in the component; native builds (unit tests) skip them.
#[cfg(target_arch = "wasm32")]
export!(Plugin);

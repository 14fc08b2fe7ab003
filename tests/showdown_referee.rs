//! The referee: `@pkmn/client` 0.7.3 (npm, MIT; the Showdown client's own
//! battle engine) reads our seat's protocol stream, the same lines the plugin
//! reads, and at every decision of ours the test compares what
//! `showdown_get_battle_state` reports with what the referee tracked. Our own
//! side is also checked against the simulator's truth, the `|request|` JSON:
//! exact HP, item, ability, the active Pokémon's stats and PP.
//!
//! Seeded offline battles through the real binary and the real
//! `pokemon-showdown@0.11.11`, bots in turn random, heuristic and search, our
//! side choosing at random (seeded). Differences the plugin makes on purpose
//! are named in [`DELIBERATE`] with the reason; anything else fails the test.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;

use common::showdown::*;
use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

const BATTLES: u64 = 50;
const BOTS: [&str; 3] = ["random", "heuristic", "search"];

/// `REFEREE_BATTLES=n` plays fewer (or more) while debugging.
fn battles() -> u64 {
    std::env::var("REFEREE_BATTLES").ok().and_then(|n| n.parse().ok()).unwrap_or(BATTLES)
}

/// `tests/fixtures/showdown-referee/referee.js` as a child process.
struct Referee {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Referee {
    fn start() -> Referee {
        let mut child = tokio::process::Command::new("node")
            .arg(referee_dir().join("referee.js"))
            .env("NODE_PATH", referee_modules())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the referee (node)");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Referee { _child: child, stdin, stdout }
    }

    /// Feeds the battle's new protocol lines; the referee's view after them.
    async fn view(&mut self, battle: &str, lines: &[&str]) -> Value {
        let msg = json!({"battle": battle, "lines": lines});
        self.stdin.write_all(format!("{msg}\n").as_bytes()).await.unwrap();
        let answer = self.stdout.next_line().await.unwrap().expect("the referee stopped");
        let mut v: Value = serde_json::from_str(&answer).unwrap();
        assert!(v["error"].is_null(), "the referee failed: {}", v["error"].as_str().unwrap_or_default());
        v["view"].take()
    }
}

/// Showdown's ids: lowercase letters and digits only.
fn id(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

fn id_of(v: &Value) -> Option<String> {
    v.as_str().map(id).filter(|s| !s.is_empty())
}

/// One disagreement: which field, and the two readings.
struct Difference {
    field: String,
    detail: String,
}

/// Where the plugin differs from the referee on purpose, and why. Each is
/// applied only where the readings differ, and counted in the report.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "fainted",
        "a fainted Pokémon's status, Tera type and maximum HP: @pkmn/client keeps the status, drops the Tera type and \
         reads `0 fnt` as 0/100; the plugin shows no status and keeps the Tera type and the real maximum",
    ),
    ("itemremoved", "`itemremoved` is @pkmn/client's own note (for Acrobatics and the like), not a condition on the Pokémon"),
    (
        "illusion",
        "before Zoroark's Illusion is revealed, the disguise and the Pokémon it imitates are one Pokémon to the plugin, as \
         to a player watching; @pkmn/client keeps two when their details differ (the real one had terastallized)",
    ),
    (
        "as one",
        "Calyrex's As One announces itself, then the Unnerve and Chilling/Grim Neigh it includes: the plugin keeps As \
         One, the ability the Pokémon has; @pkmn/client keeps the last name announced",
    ),
    (
        "no pp",
        "when the request offers only moves without PP (Struggle, or a move it is locked into), @pkmn/client empties the \
         active Pokémon's move list; the plugin keeps its moves",
    ),
    (
        "natural cure",
        "Natural Cure names itself when it cures (`-curestatus|…|[from] ability: Natural Cure`): the plugin keeps the \
         ability it saw; @pkmn/client's `-curestatus` does not read `[from]`",
    ),
    (
        "own illusion",
        "our own Zoroark in disguise: the request names the real Pokémon, so the plugin gives it what the disguise \
         gained (a Tera type, a boost from Sticky Web); @pkmn/client gives it to the Pokémon the disguise imitated",
    ),
    (
        "transform",
        "a transformed Pokémon of ours: the plugin lists the moves it can use now (the request's copies) and marks it \
         Transform; @pkmn/client lists its own move (Transform) and marks its types changed as well",
    ),
];

/// What the request says about our active Pokémon that explains a difference.
#[derive(Default, Clone, Copy)]
struct Context {
    /// The request offers only moves without PP (Struggle, a locked move).
    no_pp: bool,
}

/// The differences found, and how often each deliberate one applied.
#[derive(Default)]
struct Tally {
    found: Vec<Difference>,
    excused: BTreeMap<&'static str, usize>,
}

/// Compares the readings of one decision into the tally.
struct Check<'a> {
    at: String,
    tally: &'a mut Tally,
}

impl Check<'_> {
    fn excuse(&mut self, key: &'static str) {
        assert!(DELIBERATE.iter().any(|(k, _)| *k == key), "no reason recorded for {key}");
        *self.tally.excused.entry(key).or_default() += 1;
    }

    fn same<T: PartialEq + std::fmt::Debug>(&mut self, field: &str, who: &str, ours: T, theirs: T) {
        self.same_unless(None, field, who, ours, theirs);
    }

    /// Like `same`, but a difference is expected when `excuse` (a [`DELIBERATE`] key) applies.
    fn same_unless<T: PartialEq + std::fmt::Debug>(&mut self, excuse: Option<&'static str>, field: &str, who: &str, ours: T, theirs: T) {
        if ours == theirs {
            return;
        }
        match excuse {
            Some(key) => self.excuse(key),
            None => self.tally.found.push(Difference {
                field: field.to_string(),
                detail: format!("{}: {who}: {field}: ours {ours:?}, referee {theirs:?}", self.at),
            }),
        }
    }
}

/// Our state against the referee's view of the same moment.
fn compare(check: &mut Check, ours: &Value, view: &Value, context: Context) {
    let me = view["me"].as_str().expect("the referee saw our request");
    let foe = if me == "p1" { "p2" } else { "p1" };
    check.same("turn", "battle", ours["turn"].as_u64(), view["turn"].as_u64());
    for (team, side, mine) in [("your_team", me, true), ("opponent_team", foe, false)] {
        let theirs = view[side]["team"].as_array().unwrap();
        let ours = ours[team].as_array().unwrap();
        let names = |t: &[Value]| t.iter().map(|m| m["name"].as_str().unwrap().to_string()).collect::<BTreeSet<_>>();
        check.same("team", team, names(ours), names(theirs));
        for o in ours {
            let mut same_name = theirs.iter().filter(|t| t["name"] == o["name"]);
            let Some(t) = same_name.next() else { continue };
            if same_name.next().is_some() {
                check.excuse("illusion");
                continue;
            }
            let context = if mine && o["active"] == true { context } else { Context::default() };
            compare_mon(check, &format!("{team} {}", o["name"].as_str().unwrap()), o, t, mine, context);
        }
    }
    compare_field(check, ours, view, me, foe);
}

fn compare_mon(check: &mut Check, who: &str, o: &Value, t: &Value, mine: bool, context: Context) {
    for key in ["species", "level", "fainted", "active"] {
        check.same(key, who, &o[key], &t[key]);
    }
    let fainted = (o["fainted"] == true).then_some("fainted");
    check.same_unless(fainted, "status", who, &o["status"], &t["status"]);
    let own_zoroark = mine && id_of(&o["ability"]).as_deref() == Some("illusion");
    let own_illusion = (own_zoroark && t["tera"].is_null()).then_some("own illusion");
    check.same_unless(fainted.or(own_illusion), "tera", who, &o["tera"], &t["tera"]);
    check.same("hp_percent", who, &o["hp_percent"], &t["hp_percent"]);
    if mine {
        check.same("hp", who, &o["hp"], &t["hp"]);
        check.same_unless(fainted, "max_hp", who, &o["max_hp"], &t["max_hp"]);
    }
    check.same("item", who, id_of(&o["item"]), id_of(&t["item"]));
    let part_of_as_one = |a: Option<String>| matches!(a.as_deref(), Some("unnerve" | "chillingneigh" | "grimneigh"));
    let as_one = (id_of(&o["ability"]).is_some_and(|a| a.starts_with("asone")) && part_of_as_one(id_of(&t["ability"]))).then_some("as one");
    let natural_cure = (id_of(&o["ability"]).as_deref() == Some("naturalcure") && t["ability"].is_null()).then_some("natural cure");
    check.same_unless(as_one.or(natural_cure), "ability", who, id_of(&o["ability"]), id_of(&t["ability"]));
    let set = |v: &Value| v.as_array().unwrap().iter().filter_map(id_of).collect::<BTreeSet<_>>();
    let transformed = (mine && set(&o["volatiles"]).contains("transform")).then_some("transform");
    let no_pp = (context.no_pp && set(&t["moves"]).is_empty()).then_some("no pp");
    check.same_unless(transformed.or(no_pp), "moves", who, set(&o["moves"]), set(&t["moves"]));
    let ours: BTreeSet<String> = set(&o["volatiles"]).iter().map(|v| volatile(v)).collect();
    let mut theirs = set(&t["volatiles"]);
    // A temporary forme is the species above; Heal Block's id carries its kind in @pkmn/client.
    theirs.remove("formechange");
    if theirs.remove("movehealblock") {
        theirs.insert("healblock".into());
    }
    if theirs.remove("itemremoved") {
        check.excuse("itemremoved");
    }
    if transformed.is_some() && theirs.remove("typechange") {
        check.excuse("transform");
    }
    check.same("volatiles", who, ours, theirs);
    let boosts: BTreeMap<String, i64> = o["boosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let b = b.as_str().unwrap();
            let at = b.find(['+', '-']).unwrap();
            (b[..at].to_string(), b[at..].trim_start_matches('+').parse().unwrap())
        })
        .collect();
    let theirs: BTreeMap<String, i64> = t["boosts"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_i64().unwrap())).collect();
    check.same_unless(own_zoroark.then_some("own illusion"), "boosts", who, boosts, theirs);
}

/// A volatile condition as @pkmn/client names it: one entry for the counting
/// and stat-naming ones (`perish2` → `perishsong`, `protosynthesisatk` →
/// `protosynthesis`), which the plugin names as the protocol does.
fn volatile(id: &str) -> String {
    for (prefix, name) in
        [("perish", "perishsong"), ("stockpile", "stockpile"), ("protosynthesis", "protosynthesis"), ("quarkdrive", "quarkdrive")]
    {
        if id.starts_with(prefix) {
            return name.to_string();
        }
    }
    id.to_string()
}

/// Weather, terrain, room effects and each side's conditions with their layers.
fn compare_field(check: &mut Check, ours: &Value, view: &Value, me: &str, foe: &str) {
    let weather = match view["weather"].as_str() {
        Some("Rain") => Some("raindance".to_string()),
        Some("Sun") => Some("sunnyday".into()),
        Some("Sand") => Some("sandstorm".into()),
        Some("Snow") => Some("snowscape".into()),
        Some("Harsh Sunshine") => Some("desolateland".into()),
        Some("Heavy Rain") => Some("primordialsea".into()),
        Some("Strong Winds") => Some("deltastream".into()),
        other => other.map(id),
    };
    check.same("weather", "field", id_of(&ours["weather"]), weather);
    let mut field: BTreeMap<String, u64> = BTreeMap::new();
    let mut sides: BTreeMap<&str, BTreeMap<String, u64>> = BTreeMap::new();
    for f in ours["field"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()) {
        let (what, side) = match f.strip_suffix(" (your side)") {
            Some(w) => (w, Some(me)),
            None => match f.strip_suffix(" (opponent's side)") {
                Some(w) => (w, Some(foe)),
                None => (f, None),
            },
        };
        let into = match side {
            Some(s) => sides.entry(s).or_default(),
            None => &mut field,
        };
        // `Spikes ×2`: layers.
        let (what, layers) = match what.rsplit_once(" ×") {
            Some((w, n)) => (w, n.parse().unwrap()),
            None => (what, 1),
        };
        *into.entry(id(what)).or_default() += layers;
    }
    let mut theirs: BTreeMap<String, u64> =
        view["pseudo_weather"].as_array().unwrap().iter().map(|p| (id(p.as_str().unwrap()), 1)).collect();
    if let Some(t) = view["terrain"].as_str() {
        theirs.insert(format!("{}terrain", id(t)), 1);
    }
    check.same("field", "field", field, theirs);
    for side in [me, foe] {
        let theirs: BTreeMap<String, u64> =
            view[side]["conditions"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap())).collect();
        check.same("side conditions", side, sides.remove(side).unwrap_or_default(), theirs);
    }
}

/// Our side against the simulator's own account of it.
fn against_request(check: &mut Check, ours: &Value, request: &Value, actions: &Value, active_stats: Option<(&str, &Value)>) {
    for p in request["side"]["pokemon"].as_array().unwrap() {
        let name = p["ident"].as_str().unwrap().split_once(": ").unwrap().1;
        let who = format!("request {name}");
        let Some(o) = ours["your_team"].as_array().unwrap().iter().find(|o| o["name"] == name) else {
            check.same("request team", &who, None, Some(name));
            continue;
        };
        let condition = p["condition"].as_str().unwrap();
        let hp = condition.split_whitespace().next().unwrap();
        let exact = match hp.split_once('/') {
            Some((cur, max)) => (cur.parse::<u64>().ok(), max.parse::<u64>().ok()),
            None => (Some(0), o["max_hp"].as_u64()),
        };
        check.same("request hp", &who, (o["hp"].as_u64(), o["max_hp"].as_u64()), exact);
        check.same("request item", &who, id_of(&o["item"]), id_of(&p["item"]));
        check.same("request ability", &who, id_of(&o["ability"]), id_of(&p["ability"]).or(id_of(&p["baseAbility"])));
        if p["active"] == true
            && let Some((of, stats)) = active_stats
            && of == name
        {
            let truth: Vec<u64> = ["atk", "def", "spa", "spd", "spe"].iter().map(|k| p["stats"][k].as_u64().unwrap()).collect();
            let stats: Vec<u64> = stats.as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
            check.same("request stats", &who, stats, truth);
        }
    }
    // PP: the moves the request offers, as the available actions describe
    // them (in doubles, each position's own; a targeted move's first target).
    for (pos, active) in request["active"].as_array().into_iter().flatten().enumerate() {
        if request["side"]["pokemon"][pos]["condition"].as_str().is_some_and(|c| c.ends_with(" fnt")) {
            continue;
        }
        for m in active["moves"].as_array().unwrap() {
            let (Some(pp), Some(id)) = (m["pp"].as_u64(), m["id"].as_str()) else {
                continue;
            };
            if m["disabled"] == true {
                continue;
            }
            let named = |a: &&Value| {
                let name = a["action"].as_str().unwrap();
                a["position"] == pos as u64 + 1 && (name == id || name.split_once(' ').is_some_and(|(n, _)| n == id))
            };
            let described = actions["actions"].as_array().unwrap().iter().find(named).map(|a| a["details"].as_str().unwrap().to_string());
            let pp_text = described
                .as_deref()
                .and_then(|d| d.rsplit_once(" PP"))
                .and_then(|(before, _)| before.rsplit(", ").next())
                .map(str::to_string);
            check.same("request pp", &format!("request move {id}"), pp_text, Some(pp.to_string()));
        }
    }
}

/// A small seeded generator for our side's choices.
struct Choices(u64);

impl Choices {
    fn pick(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Plays one battle to its end, checking every decision; the decisions checked.
async fn referee_battle(c: &Client, referee: &mut Referee, bot: &str, seed: u64, tally: &mut Tally) -> usize {
    let id = offline(c, bot, seed).await;
    referee_play(c, referee, &id, &format!("{bot} seed {seed}"), seed, tally).await
}

/// Plays the battle `id` to its end, checking every decision; the decisions checked.
async fn referee_play(c: &Client, referee: &mut Referee, id: &str, label: &str, seed: u64, tally: &mut Tally) -> usize {
    let bot = label;
    let mut choices = Choices(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut seen = 0;
    for decision in 0..600 {
        let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
        if s["status"] == "finished" {
            return decision;
        }
        assert_eq!(s["status"], "active", "{s}");
        if s["awaiting_decision"] != true {
            continue;
        }
        let protocol = c.read_resource(&format!("showdown://battle/{id}/protocol")).await.unwrap().0;
        if let Ok(dir) = std::env::var("REFEREE_DUMP") {
            // To replay a battle into the referee by hand.
            std::fs::write(format!("{dir}/{}.txt", id_of(&json!(bot)).unwrap_or_default()), &protocol).unwrap();
        }
        let lines: Vec<&str> = protocol.lines().collect();
        let view = referee.view(id, &lines[seen..]).await;
        seen = lines.len();
        let request: Value =
            lines.iter().rev().find_map(|l| l.strip_prefix("|request|")).map(|j| serde_json::from_str(j).unwrap()).unwrap();
        let actions = c.ok("showdown_get_available_actions", json!({"battle_id": id})).await;
        let active = s["your_team"].as_array().unwrap().iter().find(|p| p["active"] == true && p["fainted"] == false);
        let stats = match active {
            Some(p) => Some((
                p["name"].as_str().unwrap().to_string(),
                c.ok("showdown_get_pokemon_details", json!({"battle_id": id, "pokemon_name": p["name"]})).await["stats"].clone(),
            )),
            None => None,
        };
        let at = format!("{bot} turn {}", s["turn"]);
        let mut check = Check { at: at.clone(), tally };
        let offered = request["active"][0]["moves"].as_array();
        let no_pp = offered.is_some_and(|m| m.iter().all(|m| m["pp"].is_null() || m["id"] == "struggle"));
        compare(&mut check, &s, &view, Context { no_pp });
        against_request(&mut check, &s, &request, &actions, stats.as_ref().map(|(n, v)| (n.as_str(), v)));

        let action = common::decision::decision(&actions, |free| choices.pick(free.len()));
        let r = c.call("showdown_make_move", json!({"battle_id": id, "action": action, "reasoning": "referee test"})).await;
        if r.is_error == Some(true) {
            // The one refusal a legal-looking action can meet: a trap the request could not show.
            let why = text(&r);
            assert!(why.contains("[Unavailable choice]"), "{action}: {why}");
            eprintln!("{at}: {action} refused: {why}");
        }
    }
    panic!("battle {id} did not end in 600 decisions");
}

#[tokio::test]
async fn the_tracked_battle_agrees_with_pkmn_client_at_every_decision() {
    // Whole seeds: the same battles on every run, so a difference found is
    // found again.
    let (_work, c) = sim_client_with("whole_seeds = true").await;
    let mut referee = Referee::start();

    let mut tally = Tally::default();
    let mut decisions = 0;
    for seed in 1..=battles() {
        decisions += referee_battle(&c, &mut referee, BOTS[seed as usize % BOTS.len()], seed, &mut tally).await;
    }
    c.close().await;

    // Per field: how many, and the first difference in each of a few battles.
    let mut by_field: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for d in &tally.found {
        by_field.entry(&d.field).or_default().push(&d.detail);
    }
    let mut report = String::new();
    for (field, details) in &by_field {
        report.push_str(&format!("\n{field}: {} differences, e.g.\n", details.len()));
        let mut battles_shown = BTreeSet::new();
        for d in details.iter().filter(|d| battles_shown.insert(d.split(" turn ").next().unwrap())).take(5) {
            report.push_str(&format!("  {d}\n"));
        }
    }
    if let Ok(dir) = std::env::var("REFEREE_DUMP") {
        let all: Vec<&str> = tally.found.iter().map(|d| d.detail.as_str()).collect();
        std::fs::write(format!("{dir}/differences.txt"), all.join("\n")).unwrap();
    }
    eprintln!("{} battles, {decisions} decisions checked, {} differences{report}", battles(), tally.found.len());
    for (key, reason) in DELIBERATE {
        eprintln!("deliberate, {key} ({} times): {reason}", tally.excused.get(key).unwrap_or(&0));
    }
    assert!(tally.found.is_empty(), "the plugin and @pkmn/client disagree:{report}");
}

/// Two legal gen9ou teams of three (export form) for the fixed-team battles.
const OU_TEAMS: [&str; 2] = [
    "Great Tusk @ Leftovers\nAbility: Protosynthesis\nTera Type: Steel\nEVs: 252 HP / 4 Atk / 252 Spe\nJolly Nature\n- Headlong Rush\n- Ice Spinner\n- Knock Off\n- Rapid Spin\n\n\
     Gholdengo @ Choice Scarf\nAbility: Good as Gold\nTera Type: Steel\nEVs: 252 SpA / 4 SpD / 252 Spe\nTimid Nature\nIVs: 0 Atk\n- Make It Rain\n- Shadow Ball\n- Trick\n- Focus Blast\n\n\
     Dragonite @ Heavy-Duty Boots\nAbility: Multiscale\nTera Type: Normal\nEVs: 252 Atk / 4 SpD / 252 Spe\nAdamant Nature\n- Dragon Dance\n- Extreme Speed\n- Earthquake\n- Roost\n",
    "Kingambit @ Black Glasses\nAbility: Supreme Overlord\nTera Type: Dark\nEVs: 252 HP / 252 Atk / 4 SpD\nAdamant Nature\n- Swords Dance\n- Kowtow Cleave\n- Sucker Punch\n- Iron Head\n\n\
     Garchomp @ Rocky Helmet\nAbility: Rough Skin\nTera Type: Steel\nEVs: 252 HP / 4 Def / 252 Spe\nJolly Nature\n- Earthquake\n- Dragon Tail\n- Stealth Rock\n- Spikes\n\n\
     Corviknight @ Leftovers\nAbility: Pressure\nTera Type: Dragon\nEVs: 252 HP / 168 Def / 88 SpD\nImpish Nature\n- Brave Bird\n- Roost\n- U-turn\n- Defog\n",
];

/// Doubles (random doubles battles, both active Pokémon a side) and fixed
/// teams (gen9ou with team preview) against the referee, as the singles test.
#[tokio::test]
async fn doubles_and_fixed_team_battles_agree_with_pkmn_client() {
    // Whole seeds, as in singles: a difference found is found again.
    let (_work, c) = sim_client_with("whole_seeds = true").await;
    let mut referee = Referee::start();
    let mut tally = Tally::default();
    let mut decisions = 0;
    let n = (battles() / 5).max(2);
    for seed in 1..=n {
        let bot = BOTS[seed as usize % BOTS.len()];
        let (args, label) = if seed % 2 == 0 {
            (json!({"bot": bot, "format": "gen9ou", "seed": seed, "team": OU_TEAMS[0], "opponent_team": OU_TEAMS[1]}), "gen9ou")
        } else {
            (json!({"bot": bot, "format": "gen9randomdoublesbattle", "seed": seed}), "doubles")
        };
        let v = c.ok("showdown_start_offline_battle", args).await;
        let id = v["battle_id"].as_str().unwrap().to_string();
        decisions += referee_play(&c, &mut referee, &id, &format!("{label} {bot} seed {seed}"), seed, &mut tally).await;
    }
    c.close().await;
    let report: Vec<&str> = tally.found.iter().map(|d| d.detail.as_str()).take(20).collect();
    eprintln!("{n} doubles and fixed-team battles, {decisions} decisions checked, {} differences", tally.found.len());
    assert!(tally.found.is_empty(), "the plugin and @pkmn/client disagree:\n{}", report.join("\n"));
}

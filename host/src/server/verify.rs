//! `ludus verify`: every record of the given files played again on the
//! build that played it (`Sessions::replay`), one line per record as it is
//! checked, and a tally at the end. The builds are the ones a server with
//! the same options would load (the built-in games, the plugins directory);
//! a record whose build is not among them is reported, never played on
//! another build. Each file's seals are checked first (`seal`): a line
//! that is unsigned, altered, a copy, out of place or (with `--key`)
//! another key's is named, and fails the verification.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{ServeOptions, start};
use crate::config::Config;
use crate::plugin::Plugin;
use crate::records::ResultRecord;
use crate::report::replays::ReplayedGame;
use crate::session::Verdict;

pub struct VerifyOptions {
    pub plugins: Option<PathBuf>,
    pub config: Config,
    pub files: Vec<PathBuf>,
    /// Where to write the replay page (none: no page).
    pub html: Option<PathBuf>,
    /// The servers' public keys the lines must be signed by (none: each
    /// line's own signer).
    pub trusted: crate::seal::Trusted,
}

/// How the records fared.
#[derive(Debug, Default)]
pub struct Tally {
    pub reproduced: u64,
    pub differ: u64,
    pub cannot: u64,
    /// Lines that are not records, and files that cannot be read.
    pub unreadable: u64,
    /// Lines whose seal does not hold.
    pub unsealed: u64,
}

impl Tally {
    /// Every record reproduced.
    pub fn all_good(&self) -> bool {
        self.differ == 0 && self.cannot == 0 && self.unreadable == 0 && self.unsealed == 0
    }

    pub fn summary(&self) -> String {
        let total = self.reproduced + self.differ + self.cannot;
        let mut parts = vec![format!("{} reproduced", self.reproduced)];
        if self.differ > 0 {
            parts.push(format!("{} did not reproduce", self.differ));
        }
        if self.cannot > 0 {
            parts.push(format!("{} could not be checked", self.cannot));
        }
        if self.unreadable > 0 {
            parts.push(format!("{} lines or files unreadable", self.unreadable));
        }
        if self.unsealed > 0 {
            parts.push(format!("{} lines whose seal does not hold", self.unsealed));
        }
        format!("{total} record{}: {}", if total == 1 { "" } else { "s" }, parts.join(", "))
    }
}

/// Checks every record of `opts.files`, saying each verdict to `say` as it comes.
pub async fn verify(opts: VerifyOptions, say: &mut dyn FnMut(&str)) -> Result<Tally> {
    let serve = ServeOptions {
        plugins: opts.plugins,
        http: None,
        config: opts.config,
        builtins: true,
        store: crate::store::StoreSpec::Memory,
        records: None,
        run: None,
    };
    let registry = start(&serve).await?;
    registry.settled(Duration::from_secs(600)).await;
    let builds: HashMap<String, Arc<Plugin>> = registry.plugins().into_iter().map(|p| (p.sha256.clone(), p)).collect();
    let mut tally = Tally::default();
    let mut page = opts.html.as_ref().map(|_| Vec::new());
    for path in &opts.files {
        let lines = match read_lines(path) {
            Ok(lines) => lines,
            Err(e) => {
                say(&format!("unreadable  {}: {e}", path.display()));
                tally.unreadable += 1;
                continue;
            }
        };
        let flaws = seal_flaws(&lines, &opts.trusted);
        for ((n, line), flaw) in lines.iter().zip(flaws) {
            let record: ResultRecord = match serde_json::from_str(line) {
                Ok(record) => record,
                Err(e) => {
                    say(&format!("unreadable  {}:{n}: not a record: {e}", path.display()));
                    tally.unreadable += 1;
                    continue;
                }
            };
            if let Some(flaw) = flaw {
                say(&format!("UNSEALED    {}:{n}: {}: {}", path.display(), record.record, flaw.said()));
                tally.unsealed += 1;
            }
            let (line, replayed) = check(&registry.sessions, &builds, &record, &mut tally).await;
            say(&line);
            if let Some(page) = &mut page {
                page.push(replayed);
            }
        }
    }
    if let (Some(out), Some(games)) = (&opts.html, page) {
        let html = crate::report::replays::page(&games);
        std::fs::write(out, html).map_err(|e| anyhow::anyhow!("{}: cannot be written: {e}", out.display()))?;
        say(&format!("wrote the replay page {}", out.display()));
    }
    Ok(tally)
}

/// A file's lines that are not blank, with their numbers.
fn read_lines(path: &std::path::Path) -> std::io::Result<Vec<(usize, String)>> {
    let file = std::fs::File::open(path)?;
    let mut lines = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if !line.trim().is_empty() {
            lines.push((n + 1, line));
        }
    }
    Ok(lines)
}

/// What is wrong with each line's seal, if anything (`seal::Chain`); a
/// line out of place that repeats an earlier one is named as its copy.
fn seal_flaws(lines: &[(usize, String)], trusted: &crate::seal::Trusted) -> Vec<Option<crate::seal::Flaw>> {
    use crate::seal::{Chain, Facts, Flaw};
    let mut chain = Chain::new(trusted);
    let mut verdicts = Vec::with_capacity(lines.len());
    for (i, (_, line)) in lines.iter().enumerate() {
        verdicts.extend(chain.next(Facts::of(line.as_bytes()), i.checked_sub(1).map(|j| lines[j].1.as_bytes())));
    }
    verdicts.extend(lines.last().and_then(|(_, line)| chain.last(line.as_bytes())));
    let mut first: HashMap<&str, usize> = HashMap::new();
    verdicts
        .into_iter()
        .zip(lines)
        .map(|(verdict, (n, line))| {
            let earlier = *first.entry(line.as_str()).or_insert(*n);
            match verdict.err()? {
                Flaw::OutOfPlace { copy_of: None } if earlier != *n => Some(Flaw::OutOfPlace { copy_of: Some(earlier as u64) }),
                flaw => Some(flaw),
            }
        })
        .collect()
}

/// One record's verdict, as its line says it, and the game for the replay page.
async fn check(
    sessions: &crate::session::Sessions,
    builds: &HashMap<String, Arc<Plugin>>,
    record: &ResultRecord,
    tally: &mut Tally,
) -> (String, ReplayedGame) {
    let what = format!("{}  {}", record.record, record.game);
    let started = Instant::now();
    let (verdict, steps) = match builds.get(&record.build) {
        Some(plugin) => sessions.replay_with_steps(plugin.clone(), record).await,
        None => (Verdict::Cannot(missing_build(builds, record)), Vec::new()),
    };
    let (line, short) = match verdict {
        Verdict::Reproduced { actions } => {
            tally.reproduced += 1;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let line =
                format!("reproduced  {what}: {} after {} moves ({actions} actions, {ms:.1} ms)", record.outcome.name(), record.moves);
            (line, "reproduced".to_string())
        }
        Verdict::Differs(why) => {
            tally.differ += 1;
            (format!("DIFFERS     {what}: {why}"), format!("did not reproduce: {why}"))
        }
        Verdict::Cannot(why) => {
            tally.cannot += 1;
            (format!("CANNOT      {what}: {why}"), format!("could not be checked: {why}"))
        }
    };
    let replayed = ReplayedGame {
        record: record.record.clone(),
        game: record.game.clone(),
        outcome: record.outcome.name().into(),
        verdict: short,
        seats: record.seats.clone(),
        parameters: record.parameters.clone(),
        optimality: record.figures["optimality"].as_array().cloned().unwrap_or_default(),
        steps,
    };
    (line, replayed)
}

/// Why a record's build is not here, with the builds of its game that are.
fn missing_build(builds: &HashMap<String, Arc<Plugin>>, record: &ResultRecord) -> String {
    if record.build.is_empty() {
        return "it does not name the build that played it (written before records did)".into();
    }
    let here: Vec<String> =
        builds.values().filter(|p| p.name == record.game).map(|p| format!("{} {}", p.version, short(&p.sha256))).collect();
    let here = if here.is_empty() { format!("no build of {} is loaded", record.game) } else { format!("here: {}", here.join(", ")) };
    format!(
        "the build that played it ({} {}) is not here ({here}); give its plugins directory with --plugins",
        record.plugin_version,
        short(&record.build)
    )
}

fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

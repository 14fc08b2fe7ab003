use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use ludus::config::Config;

/// One MCP server through which AI agents play games.
///
/// Every game is a sandboxed WebAssembly component. The built-in games
/// (chess, Pokémon Showdown, Magic: The Gathering on the phase rules engine,
/// and the puzzles of The Illusion of Thinking: Tower of Hanoi, River
/// Crossing, Checker Jumping and Blocks World) are loaded unless
/// --no-builtin; components dropped into the --plugins directory are added,
/// replace a built-in of the same name, and are reloaded when their file
/// changes.
#[derive(Parser)]
#[command(name = "ludus", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP: stdio by default, Streamable HTTP with --http.
    Serve {
        /// Directory of extra game components (*.wasm), watched for changes.
        #[arg(long, value_name = "DIR")]
        plugins: Option<PathBuf>,
        /// Serve Streamable HTTP at this address (e.g. 127.0.0.1:8765, or
        /// localhost:8765) instead of stdio. The endpoint is http://ADDR/mcp.
        /// On a loopback address without tokens in the config, the server
        /// issues one at start and prints the URL a client connects with.
        #[arg(long, value_name = "ADDR", value_parser = http_address)]
        http: Option<SocketAddr>,
        /// TOML file with limits and per-plugin settings (docs/configuration.md).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Do not load the built-in games.
        #[arg(long)]
        no_builtin: bool,
        /// Where games are kept so that they survive a restart: an SQLite
        /// file (created if missing), or `memory` to keep them in this
        /// process only. Default: the config's `store`, else
        /// $XDG_DATA_HOME/ludus/sessions.db (~/.local/share/ludus/sessions.db).
        /// (`redis://HOST:PORT`: a Redis that several servers share, any of
        /// them serving any game; `redis+cluster://HOST:PORT,HOST:PORT`: a
        /// Redis Cluster; see docs/operations.md, "Several servers".)
        #[arg(long, value_name = "PATH")]
        store: Option<String>,
        /// This server's name among several behind one proxy: its MCP
        /// session ids start with `NAME-` so the proxy can route by them.
        /// Default: the config's `server_name`.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Serve only these games (comma-separated names, e.g.
        /// `chess,hanoi`): the others are not loaded and their tools are not
        /// listed, so a client that plays one game is not sent the others'
        /// definitions. Default: the config's `games`, else every game.
        #[arg(long, value_name = "GAMES", value_delimiter = ',')]
        games: Option<Vec<String>>,
        /// Append one JSON line per finished game to FILE (created if
        /// missing): game, parameters, seed, caller, moves, illegal moves,
        /// optimum, outcome, duration and the game's own figures. A game
        /// left unfinished is recorded as abandoned when its session ends.
        /// Summarise with `ludus report FILE`. Default: the config's
        /// `records`, else none.
        #[arg(long, value_name = "FILE")]
        records: Option<PathBuf>,
        /// A run file: the matches of an evaluation (games, players, seeds,
        /// arguments), checked at start; each player asks for its next game
        /// with the tool `ludus_next_game`, which starts it when first asked
        /// (docs/evaluation.md, "Matches and runs"). Default: the config's
        /// `run`, else none.
        #[arg(long, value_name = "FILE")]
        run: Option<PathBuf>,
    },
    /// Say whether each built-in game is ready to play on this machine, and
    /// what it lacks (Node.js for Showdown's offline battles, Python 3.11+
    /// for Magic). Exits 1 when a game is not ready.
    Doctor {
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Print what the host derives from a component (tools, schemas, hints,
    /// imports) as JSON, or why it cannot be loaded.
    Inspect {
        /// The component to inspect: a file, or the name of a built-in game
        /// (`chess`, `hanoi`, …).
        #[arg(value_name = "FILE|GAME")]
        file: PathBuf,
        /// The server's config: the component is shown as that server
        /// would load it (its tool names and prefix, limits, cache dir).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Issue a bearer token for HTTP clients: prints a new random token (give
    /// it to the client, once: it is not stored) and the `[[tokens]]` lines
    /// to add to the server's config, which keep only its SHA-256. With any
    /// token configured, every HTTP request must carry one
    /// (`Authorization: Bearer TOKEN`), and a client keeps its games across
    /// reconnects and on stateless requests: its caller is NAME.
    Token {
        /// The caller the token stands for (games and `ludus_sessions` show it).
        name: String,
    },
    /// Print the public key this server signs its result records with (64
    /// hex digits), making the key if it has none yet: give it to whoever
    /// checks the records (`ludus verify --key`, `ludus report --key`). The
    /// key is kept in the config's `records_key`, else `records.key` in
    /// $XDG_DATA_HOME/ludus (~/.local/share/ludus), readable by its owner only.
    Key {
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Summarise result records (`serve --records FILE`): a table per game
    /// and parameters (games, solved or won, mean moves over the optimum,
    /// illegal moves per game, Showdown's mean optimality, score against
    /// decided games); ratings of every player that met another (callers
    /// and built-in opponents: Bradley–Terry on the Elo scale with 95 %
    /// bootstrap intervals, per game and across games, the chess engine's
    /// levels anchored at their measured Elo); puzzle accuracy per size with
    /// Wilson intervals and the size where it first falls below 50 %. With
    /// --html, also one self-contained page with the plots: accuracy against
    /// size per caller, moves against the optimum, chess score against
    /// engine level, Showdown's optimality per decision. Lines that are not
    /// records are named (file:line), skipped and counted. Exits 1 when a
    /// file cannot be read.
    Report {
        /// Records files (JSON Lines), read in order, one line at a time.
        #[arg(required = true, value_name = "RECORDS")]
        files: Vec<PathBuf>,
        /// Also write the HTML page with the plots here.
        #[arg(long, value_name = "OUT")]
        html: Option<PathBuf>,
        /// Fix a player's rating (repeatable): a built-in opponent measured
        /// elsewhere, or a reference agent, e.g. `--anchor chess-engine/6=1400`.
        /// Replaces the built-in anchor of the same name.
        #[arg(long = "anchor", value_name = "NAME=ELO", value_parser = parse_anchor)]
        anchors: Vec<(String, f64)>,
        /// The public key of a server whose records these are (repeatable;
        /// `ludus key` prints it): every line's signature is checked, and a
        /// line another key signed is left out. Without it, lines are
        /// checked against the chain and their own signer, which catches
        /// edits but not a forger with a key of their own.
        #[arg(long = "key", value_name = "PUBLIC_KEY")]
        keys: Vec<String>,
        /// Also count the lines whose seal does not hold (unsigned, altered,
        /// copies, another key's), still naming them. By default they are
        /// left out, and how many is said.
        #[arg(long)]
        include_unverified: bool,
    },
    /// Play every recorded game again and check that it ends as recorded:
    /// each record's game is started on the build that played it (the
    /// record names its SHA-256) from the record's seed and secret, and its
    /// action log (every call that could change the game, every timer,
    /// every line from the game's processes) runs in order. Prints one line
    /// per record: `reproduced`, `DIFFERS` with the first action or figure
    /// that went otherwise, or `CANNOT` with why (no log; a build that is
    /// not here, which is never replaced by another). The builds are the
    /// built-in games and those of --plugins. Exits 1 unless every record
    /// reproduced.
    Verify {
        /// Records files (JSON Lines, as `serve --records` writes them).
        #[arg(required = true, value_name = "RECORDS")]
        files: Vec<PathBuf>,
        /// Directory of game components besides the built-in games (the
        /// plugins directory the records' server ran with).
        #[arg(long, value_name = "DIR")]
        plugins: Option<PathBuf>,
        /// The config the server ran with (its sidecar grants and plugin
        /// settings; limits do not change a replay).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Also write a replay page here: one self-contained HTML file with
        /// a game picker that steps through each game's calls, each with
        /// its player's reasoning and the game's answer (a chess board per
        /// move, a Showdown decision's optimality).
        #[arg(long, value_name = "OUT")]
        html: Option<PathBuf>,
        /// The public key of the server that wrote the records (repeatable;
        /// `ludus key` prints it): each line must be signed by one of them.
        /// Every file's seals are checked either way: a line altered,
        /// removed, copied or moved is named, and fails the verification.
        #[arg(long = "key", value_name = "PUBLIC_KEY")]
        keys: Vec<String>,
    },
    /// Copy a game component with its WIT doc comments embedded, so the host
    /// can turn them into tool descriptions, parameter docs and ranges.
    /// Component toolchains (cargo, componentize-py, componentize-js) drop
    /// the docs; run this on what they build.
    Pack {
        /// The component as the toolchain built it.
        input: PathBuf,
        /// Where to write the packaged component (may equal INPUT).
        output: PathBuf,
        /// WIT directories: the Ludus plugin WIT first, your game's WIT last
        /// (its doc comments are the ones embedded).
        #[arg(required = true, value_name = "WIT_DIR")]
        wit: Vec<PathBuf>,
    },
}

/// `HOST:PORT` with an IP address or a name (`localhost:8765`); a name's
/// IPv4 address is preferred, which is what `127.0.0.1` clients reach.
fn http_address(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("{text:?} is not HOST:PORT with a host this machine can resolve (e.g. 127.0.0.1:8765): {e}"))?
        .collect();
    addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()).copied().ok_or_else(|| format!("{text:?} resolves to no address"))
}

fn load_config(path: Option<&PathBuf>) -> anyhow::Result<Config> {
    path.map(|p| Config::load(p)).transpose().map(Option::unwrap_or_default)
}

/// `LUDUS_LOG` (default `info`; `warn` for `verify`), with rmcp held to warnings unless named:
/// rmcp's own lines stay at warnings unless the filter names it: what it
/// logs at info belongs to its service loop, which Ludus does not run, and
/// a span it opened per MCP session, pooled by the log after the session
/// ended, pinned the pages freed around it (10,000 deleted sessions kept
/// 70 MiB).
fn log_filter(setting: Option<String>, default_level: &str) -> tracing_subscriber::EnvFilter {
    let setting = setting.filter(|s| !s.trim().is_empty()).unwrap_or_else(|| default_level.into());
    let directives = if setting.contains("rmcp") { setting } else { format!("{setting},rmcp=warn") };
    tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("ludus: LUDUS_LOG={directives:?} is not a log filter ({e}); logging at info");
        tracing_subscriber::EnvFilter::new("info,rmcp=warn")
    })
}

fn main() {
    ludus::runtime::limit_allocator_arenas();
    ludus::capability::channels::install_tls_provider();
    let cli = Cli::parse();
    // `verify` says what it found on stdout; the server it starts inside
    // logs only what goes wrong, unless asked for more.
    let default_level = if matches!(cli.command, Command::Verify { .. }) { "warn" } else { "info" };
    // Logs go to stderr: in stdio mode stdout carries only MCP messages.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(log_filter(std::env::var("LUDUS_LOG").ok(), default_level))
        .init();
    let code = match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ludus: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // Blocking threads (instances start there, slow tools run there) end
    // after 2 s idle rather than tokio's 10 s, taking their stacks with them:
    // a burst of new sessions leaves dozens behind otherwise.
    // Their ending hands their allocator caches back; the session sweep
    // then returns those pages to the system (runtime::release_freed_memory_after_sweep).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_keep_alive(std::time::Duration::from_secs(2))
        .on_thread_stop(ludus::runtime::note_thread_end)
        .build()?;
    match cli.command {
        Command::Serve { plugins, http, config, no_builtin, store, name, games, records, run } => {
            let mut config = load_config(config.as_ref())?;
            if games.is_some() {
                config.games = games;
            }
            if let Some(name) = name {
                ludus::config::check_server_name(&name)?;
                config.server_name = Some(name);
            }
            let store = ludus::store::StoreSpec::parse(store.as_deref().or(config.store.as_deref()).unwrap_or_default());
            let records = records.or_else(|| config.records.clone());
            let run = run.or_else(|| config.run.clone());
            let opts = ludus::server::ServeOptions { plugins, http, config, builtins: !no_builtin, store, records, run };
            rt.block_on(ludus::server::serve(opts))
        }
        Command::Doctor { config } => {
            let config = load_config(config.as_ref())?;
            let verdicts = ludus::server::doctor::check(&config);
            let width = verdicts.iter().map(|v| v.game.len()).max().unwrap_or(0);
            for v in &verdicts {
                println!("{:width$}  {}  {}", v.game, if v.ready { "ok " } else { "NO " }, v.detail);
            }
            if verdicts.iter().all(|v| v.ready) {
                Ok(())
            } else {
                anyhow::bail!("some games are not ready; the lines marked NO say what they lack")
            }
        }
        Command::Inspect { file, config } => {
            let config = load_config(config.as_ref())?;
            let cache = config.cache_dir.clone().or_else(ludus::runtime::default_cache_dir);
            let runtime = ludus::runtime::Runtime::new(cache, &config.engines)?;
            let _guard = rt.enter();
            let builtin = ludus::server::bundled::component(&file.to_string_lossy()).filter(|_| !file.exists());
            if builtin.is_none() && !file.exists() {
                let names: Vec<&str> = ludus::server::bundled::BUNDLED.iter().map(|g| g.name).collect();
                anyhow::bail!(
                    "{}: no such file, and no built-in game of that name (the built-in games are {})",
                    file.display(),
                    names.join(", ")
                );
            }
            let out = match builtin {
                Some(bytes) => ludus::mcp::inspect::inspect_builtin(bytes, &ludus::server::with_builtin_engines(config), &runtime),
                None => ludus::mcp::inspect::inspect(&file, &config, &runtime),
            };
            let out = out.map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(())
        }
        Command::Token { name } => {
            let (token, lines) = ludus::config::issue_token(&name)?;
            println!("token for {name} (give it to the client; it is not stored anywhere):\n\n    {token}\n");
            println!("add to the server's config (--config FILE):\n\n{lines}");
            Ok(())
        }
        Command::Key { config } => {
            let config = load_config(config.as_ref())?;
            let path = ludus::server::records_key_path(&config);
            let key = ludus::seal::SigningKey::load_or_create(&path).map_err(anyhow::Error::msg)?;
            println!("{}", key.public());
            eprintln!("ludus: the records' signing key is {}", path.display());
            Ok(())
        }
        Command::Report { files, html, anchors, keys, include_unverified } => {
            let trusted = ludus::seal::Trusted::parse(&keys).map_err(anyhow::Error::msg)?;
            let reading = ludus::report::Reading { trusted: &trusted, include_unverified };
            let mut report = ludus::report::Report::read(&files, &reading, &mut |warning| eprintln!("ludus: {warning}"));
            report.anchors = anchors;
            // The ratings first: they are what an evaluator comparing agents reads.
            // Each section ends with a blank line.
            let accuracy = match report.accuracy_text() {
                accuracy if accuracy.is_empty() => "\n".to_string(),
                accuracy => format!("\n{accuracy}"),
            };
            let usage = match report.usage.text() {
                usage if usage.is_empty() => usage,
                usage => format!("{usage}\n"),
            };
            let text =
                format!("{}{}{accuracy}{usage}{}{}\n", report.ratings_text(), report.table(), report.policies_text(), report.totals());
            // A reader that stops early (`| head`) is no error.
            if let Err(e) = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                return Err(e.into());
            }
            if let Some(out) = html {
                let page = report.html().map_err(anyhow::Error::msg)?;
                std::fs::write(&out, page).map_err(|e| anyhow::anyhow!("{}: cannot be written: {e}", out.display()))?;
                eprintln!("ludus: wrote {}", out.display());
            }
            if !report.unreadable.is_empty() {
                anyhow::bail!("{} of the records files could not be read (said above)", report.unreadable.len());
            }
            Ok(())
        }
        Command::Verify { files, plugins, config, html, keys } => {
            let config = load_config(config.as_ref())?;
            let trusted = ludus::seal::Trusted::parse(&keys).map_err(anyhow::Error::msg)?;
            let opts = ludus::server::verify::VerifyOptions { plugins, config, files, html, trusted };
            // A reader that stops early (`| head`) is no error.
            let mut out = std::io::stdout().lock();
            let tally = rt.block_on(ludus::server::verify::verify(opts, &mut |line| {
                let _ = writeln!(out, "{line}");
            }))?;
            let _ = writeln!(out, "{}", tally.summary());
            if tally.all_good() { Ok(()) } else { anyhow::bail!("not every record reproduced (said above)") }
        }
        Command::Pack { input, output, wit } => {
            let dirs: Vec<&std::path::Path> = wit.iter().map(PathBuf::as_path).collect();
            ludus_pack::pack_file(&input, &dirs, &output)
        }
    }
}

/// `--anchor NAME=ELO`.
fn parse_anchor(s: &str) -> Result<(String, f64), String> {
    let (name, elo) = s.rsplit_once('=').ok_or("an anchor is NAME=ELO, e.g. chess-engine/6=1400")?;
    let elo: f64 = elo.trim().parse().map_err(|_| format!("`{elo}` is not a number (an anchor is NAME=ELO)"))?;
    if name.trim().is_empty() || !elo.is_finite() {
        return Err("an anchor is NAME=ELO with a name and a finite number".into());
    }
    Ok((name.trim().to_string(), elo))
}

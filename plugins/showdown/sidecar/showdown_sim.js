#!/usr/bin/env node
// Pokémon Showdown's battle simulator for the Ludus `showdown` plugin's
// offline battles: `pokemon-showdown simulate-battle` at a pinned version,
// installed with npm into the user's cache on first use and reused after.
//
// The plugin talks to the simulator on stdin/stdout; this program makes
// sure it is there (or takes the package given with `--package DIR`), then
// runs it in this process, checking the teams players bring with the
// simulator's own validator. Only the simulator commands a battle needs
// reach it (`COMMANDS`): `>eval` and the rest of its debugging commands run
// JavaScript, and never pass. Everything it says itself goes to stderr (the
// server's log). When it cannot run the simulator, its last line on stderr
// says why and how to fix it, and the server passes that line on to the agent.
//
// `--install-only` installs the simulator and exits: the server runs that
// step first, where the battle's own process may reach no registry.
//
// Shared (`LUDUS_ENGINE_SHARED=1`): one process runs many battles, each a
// `BattleTextStream` of its own, as Showdown's own server runs them. Every
// line in is `TAG LINE` for the battle the host numbered TAG, every line out
// `TAG LINE` from it; `-TAG` ends battle TAG. A battle that throws ends alone
// (`-TAG REASON` to the host), and the others play on.

"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawnSync } = require("child_process");

// The simulator version the plugin's protocol reading is tested against.
const VERSION = "0.11.11";
const NODE_MAJOR = 18;
// The longest a first-use install may take before it is given up: a
// registry that never answers, or a proxy whose certificate this machine
// lacks, must not hold a battle silently for ever.
const INSTALL_LIMIT_S = Number(process.env.LUDUS_INSTALL_TIMEOUT_S) || 300;
// The simulator commands a battle is played with (`sim/SIM-PROTOCOL.md`):
// start it, seat the players, make their choices, end it. Any other line is
// refused before it reaches the simulator.
const COMMANDS = new Set(["start", "player", "p1", "p2", "p3", "p4", "forcewin", "forcetie", "forcelose"]);

function fail(why) {
  process.stderr.write(`${why}\n`);
  process.exit(1);
}

function say(what) {
  process.stderr.write(`showdown-sim: ${what}\n`);
}

// What this program is busy with before the simulator runs, for the plugin
// (which tells the agent, with how long it has taken so far) and the log.
function notice(what) {
  say(what);
  process.stdout.write(`|ludus-notice|${what.replace(/[\r\n]/g, " ")}\n`);
}

// What a failing program said that explains it: its last line naming an
// error (npm's `FetchError: … reason: …`), else its last lines.
function lastWords(text) {
  const lines = String(text || "").split("\n").map((l) => l.trim()).filter((l) => l && !/^(npm error\s+)?at /.test(l));
  const telling = lines.filter((l) => /Error:|reason:/.test(l)).pop();
  return (telling || lines.slice(-3).join(" / ")).slice(-600);
}

function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  return path.join(base, "ludus", "showdown-sim");
}

function installedVersion(pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
  } catch {
    return null;
  }
}

// Sleeps without a timer (this program has nothing else to do meanwhile).
function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// Installed means: the package at our version, and the marker written after
// npm finished. npm writes package.json early, so an install killed half-way
// leaves a right-looking version and missing files; without the marker it is
// installed again.
function installed(dir, pkg) {
  return installedVersion(pkg) === VERSION && fs.existsSync(path.join(dir, `.installed-${VERSION}`));
}

// Whether the process that wrote a lock is gone (killed mid-install).
function holderGone(lock) {
  try {
    process.kill(Number(fs.readFileSync(lock, "utf8")), 0);
    return false;
  } catch (e) {
    return e.code === "ESRCH";
  }
}

// One install at a time across servers and battles: an exclusive lock file;
// a lock whose writer is gone, or older than ten minutes, is taken over.
function withLock(dir, work) {
  const lock = path.join(dir, ".install.lock");
  let announced = false;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: "wx" });
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      try {
        if (holderGone(lock) || Date.now() - fs.statSync(lock).mtimeMs > 10 * 60 * 1000) fs.unlinkSync(lock);
      } catch {}
      if (!announced) notice("first use: another battle is installing the simulator; waiting for it");
      announced = true;
      sleep(250);
    }
  }
  try {
    return work();
  } finally {
    try {
      fs.unlinkSync(lock);
    } catch {}
  }
}

function install(dir, pkg) {
  notice(`first use: installing pokemon-showdown@${VERSION} with npm into ${dir} (a few MB; usually under a minute; given up after ${INSTALL_LIMIT_S} s)`);
  const started = Date.now();
  // What a killed install left behind would make npm believe it is done.
  fs.rmSync(path.join(dir, "node_modules"), { recursive: true, force: true });
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(
    npm,
    ["install", "--prefix", dir, "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", `pokemon-showdown@${VERSION}`],
    { stdio: ["ignore", "pipe", "pipe"], timeout: INSTALL_LIMIT_S * 1000, killSignal: "SIGKILL", maxBuffer: 16 << 20 }
  );
  // npm's own words go to the server's log, and the last of them into the reason.
  process.stderr.write(r.stdout || "");
  process.stderr.write(r.stderr || "");
  const words = lastWords(`${r.stdout || ""}\n${r.stderr || ""}`);
  const said = words ? `; npm's last words: ${words}` : "; npm said nothing";
  if (r.error && r.error.code === "ENOENT") {
    fail("npm is not installed, so the battle simulator cannot be installed: install it (Debian: apt-get install npm), or grant your own `sim` endpoint in the config");
  }
  if (r.error && r.error.code === "ETIMEDOUT") {
    fail(`npm had not installed pokemon-showdown@${VERSION} after ${INSTALL_LIMIT_S} s and was stopped (is the npm registry reachable, through your proxy, with its certificate?)${said}`);
  }
  if (r.status !== 0) {
    fail(`npm could not install pokemon-showdown@${VERSION} (is the npm registry reachable?)${said}`);
  }
  if (installedVersion(pkg) !== VERSION) {
    fail(`after npm install, ${pkg} is not version ${VERSION}; delete ${dir} and try again`);
  }
  fs.writeFileSync(path.join(dir, `.installed-${VERSION}`), `${new Date().toISOString()}\n`);
  fs.appendFileSync(path.join(dir, "installs.log"), `${new Date().toISOString()} pokemon-showdown@${VERSION} in ${Date.now() - started} ms\n`);
  say(`installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

function main() {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < NODE_MAJOR) {
    fail(`the battle simulator needs Node.js ${NODE_MAJOR} or newer; this is ${process.versions.node} (install a newer nodejs)`);
  }
  // `--package DIR`: a pokemon-showdown the operator installed, used as it is.
  const given = process.argv.indexOf("--package");
  if (given > 0) {
    const pkg = path.resolve(process.argv[given + 1] || "");
    if (!installedVersion(pkg)) fail(`--package ${pkg} is not a pokemon-showdown package (no package.json there)`);
    return simulate(pkg);
  }
  const dir = cacheDir();
  const pkg = path.join(dir, "node_modules", "pokemon-showdown");
  if (!installed(dir, pkg)) {
    fs.mkdirSync(dir, { recursive: true });
    withLock(dir, () => {
      if (!installed(dir, pkg)) install(dir, pkg);
    });
  }
  if (process.argv.includes("--install-only")) return;
  simulate(pkg);
}

// The simulator runs in this process (as `pokemon-showdown simulate-battle`
// would run it) so that a team can be checked before its battle starts: a
// `>player` line carrying a team is read with the simulator's own importer
// (export, packed or JSON form) and checked by its own validator for the
// battle's format. A legal team goes on packed; an illegal one never reaches
// the battle, and the player's side is told why, as the simulator tells an
// invalid choice: `|error|[Invalid team] …`, one problem per `|`-free line.
function simulate(pkg) {
  const dist = path.join(pkg, "dist");
  const sim = {
    BattleTextStream: require(path.join(dist, "sim", "battle-stream.js")).BattleTextStream,
    Teams: require(path.join(dist, "sim", "teams.js")).Teams,
    TeamValidator: require(path.join(dist, "sim", "team-validator.js")).TeamValidator,
  };
  const input = require("readline").createInterface({ input: process.stdin, terminal: false });
  if (process.env.LUDUS_ENGINE_SHARED === "1") {
    simulateShared(sim, input);
  } else {
    const Streams = require(path.join(dist, "lib", "streams.js"));
    const battle = new Battle(sim, { noCatch: true }, (text) => process.stdout.write(text));
    void battle.stream.pipeTo(Streams.stdout());
    input.on("line", (line) => battle.take(line));
    input.on("close", () => void battle.stream.writeEnd());
  }
  // The server ends a battle's process with SIGKILL; stdin closing ends it too.
  for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => process.exit(0));
}

// Many battles in this process, by the host's tags. A battle's simulator
// errors are caught (`noCatch: false`): it says it crashed and ends, alone.
function simulateShared(sim, input) {
  const battles = new Map();
  const out = (tag, text) => {
    const lines = text.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    process.stdout.write(lines.map((l) => `${tag} ${l}\n`).join(""));
  };
  input.on("line", (line) => {
    const space = line.indexOf(" ");
    const tag = space < 0 ? line : line.slice(0, space);
    if (!/^-?[0-9]+$/.test(tag)) return say("refused a line without a battle's tag");
    if (tag.startsWith("-")) {
      const gone = battles.get(tag.slice(1));
      battles.delete(tag.slice(1));
      if (gone) void gone.stream.writeEnd();
      return;
    }
    let battle = battles.get(tag);
    if (!battle) {
      battle = new Battle(sim, { noCatch: false }, (text) => out(tag, text));
      battles.set(tag, battle);
      void (async () => {
        for (let chunk; (chunk = await battle.stream.read()) != null; ) out(tag, chunk);
      })().catch((e) => {
        // This battle alone ends: the host closes its channel with the reason.
        const why = String((e && e.message) || e).replace(/[\r\n]/g, " ").slice(0, 300);
        say(`battle ${tag} failed: ${why}`);
        battles.delete(tag);
        process.stdout.write(`-${tag} the simulator failed in this battle: ${why}\n`);
      });
    }
    battle.take(line.slice(space + 1));
  });
  input.on("close", () => process.exit(0));
}

// One battle: the simulator's stream, and the format its teams are checked for.
class Battle {
  constructor(sim, options, write) {
    this.sim = sim;
    this.stream = new sim.BattleTextStream(options);
    this.write = write;
    this.format = "";
  }

  refuse(side, problems) {
    const text = problems.map((p) => p.replace(/[|\n]/g, " ")).join(" / ");
    this.write(`sideupdate\n${side}\n|error|[Invalid team] ${text}\n\n`);
  }

  take(line) {
    const command = /^>([a-z0-9]+)(?: |$)/.exec(line);
    if (!command || !COMMANDS.has(command[1])) {
      say(`refused a line that is no battle command: ${JSON.stringify(line.slice(0, 80))}`);
      return;
    }
    if (line.startsWith(">start ")) {
      try {
        this.format = JSON.parse(line.slice(7)).formatid || "";
      } catch {}
    }
    const player = /^>player (p[1-4]) (.*)$/.exec(line);
    if (player) {
      let options;
      try {
        options = JSON.parse(player[2]);
      } catch {}
      if (options && typeof options.team === "string") {
        let sets = null;
        try {
          sets = this.sim.Teams.import(options.team);
        } catch {}
        if (!sets || !sets.length) return this.refuse(player[1], ["the team could not be read (give it in Showdown's export or packed form)"]);
        let problems;
        try {
          problems = this.sim.TeamValidator.get(this.format).validateTeam(sets);
        } catch (e) {
          problems = [`the validator failed: ${e.message}`];
        }
        if (problems && problems.length) return this.refuse(player[1], problems);
        options.team = this.sim.Teams.pack(sets);
        line = `>player ${player[1]} ${JSON.stringify(options)}`;
      }
    }
    void this.stream.write(`${line}\n`);
  }
}

main();

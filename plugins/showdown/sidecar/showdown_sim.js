#!/usr/bin/env node
// Pokémon Showdown's battle simulator for the Ludus `showdown` plugin's
// offline battles: `pokemon-showdown simulate-battle` at a pinned version,
// installed with npm into the user's cache on first use and reused after.
//
// The plugin talks to the simulator on stdin/stdout; this program only makes
// sure it is there, then runs it with the same stdio. Everything it says
// itself goes to stderr (the server's log). When it cannot run the
// simulator, its last line on stderr says why and how to fix it, and the
// server passes that line on to the agent.

"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawn, spawnSync } = require("child_process");

// The simulator version the plugin's protocol reading is tested against.
const VERSION = "0.11.11";
const NODE_MAJOR = 18;

function fail(why) {
  process.stderr.write(`${why}\n`);
  process.exit(1);
}

function say(what) {
  process.stderr.write(`showdown-sim: ${what}\n`);
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
      if (!announced) say("another battle is installing the simulator; waiting for it");
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
  say(`first use: installing pokemon-showdown@${VERSION} with npm into ${dir} (a few MB; usually under a minute)`);
  const started = Date.now();
  // What a killed install left behind would make npm believe it is done.
  fs.rmSync(path.join(dir, "node_modules"), { recursive: true, force: true });
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(
    npm,
    ["install", "--prefix", dir, "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", `pokemon-showdown@${VERSION}`],
    { stdio: ["ignore", 2, 2] }
  );
  if (r.error && r.error.code === "ENOENT") {
    fail("npm is not installed, so the battle simulator cannot be installed: install it (Debian: apt-get install npm), or grant your own `sim` endpoint in the config");
  }
  if (r.status !== 0) {
    fail(`npm could not install pokemon-showdown@${VERSION} (is the npm registry reachable? npm's messages are in the server's log)`);
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
  const dir = cacheDir();
  const pkg = path.join(dir, "node_modules", "pokemon-showdown");
  if (!installed(dir, pkg)) {
    fs.mkdirSync(dir, { recursive: true });
    withLock(dir, () => {
      if (!installed(dir, pkg)) install(dir, pkg);
    });
  }
  const sim = spawn(process.execPath, [path.join(pkg, "pokemon-showdown"), "simulate-battle", "--skip-build"], { stdio: "inherit" });
  sim.on("error", (e) => fail(`the simulator did not start: ${e.message}`));
  sim.on("exit", (code, signal) => process.exit(code === null ? 1 : code));
  // The server ends a battle's process with SIGKILL, which reaches only this
  // program: the simulator notices its stdin closing and ends too.
  for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => sim.kill(s));
}

main();

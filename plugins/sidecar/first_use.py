"""First use of a Python sidecar's engine: install it from PyPI into a venv
in the user's cache, then run the sidecar again inside that venv.

With `--install-only` the sidecar installs its engine and exits: the server
runs that step first, in a process that may reach the index and write the
venv, and then the game's own process, which may do neither, finds the
engine installed.

Shared by the bundled Python sidecars (the phase bridge, the OpenSpiel
bridge); the server writes this file beside each of them. The venv sits in
the user cache (`$XDG_CACHE_HOME/ludus/NAME`), not a server's cache
directory, so every server of the user shares one install, and an install
happens once under a file lock however many games start at the same time.
"""

import os
import sys
import time

# The longest one install step may take before it is given up: a registry
# that never answers, or a proxy whose certificate this machine lacks, must
# not hold a game silently for ever.
INSTALL_LIMIT_S = int(os.environ.get("LUDUS_INSTALL_TIMEOUT_S") or 300)


def venv_dir(name):
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ludus", name)


def ensure(requirement, module, venv_name, engine, size, notice, script):
    """Makes `module` importable: already there, or `requirement` installed on
    first use into the venv `venv_name`, then `script` runs again inside it
    (this call does not return then). Returns None when ready, else why not
    and how to fix it. `notice` tells the agent and the log what takes long.
    With `--install-only` it exits instead of returning: 0 when installed,
    else 1 with the reason as its last line on stderr."""
    problem = prepare(requirement, module, venv_name, engine, size, notice, script)
    if "--install-only" in sys.argv:
        if problem:
            sys.stderr.write(problem + "\n")
        sys.exit(1 if problem else 0)
    return problem


def prepare(requirement, module, venv_name, engine, size, notice, script):
    if sys.version_info < (3, 11):
        return f"{engine} needs Python 3.11 or newer; this is {sys.version.split()[0]} (install a newer python3)"
    try:
        __import__(module)
        return None
    except ImportError:
        pass
    reexec = "LUDUS_REEXEC_" + venv_name.upper().replace("-", "_")
    venv = venv_dir(venv_name)
    if os.environ.get(reexec):
        return f"{requirement} is not importable even inside {venv}; delete that directory to reinstall"
    python = os.path.join(venv, "bin", "python")
    # Named for the requirement: a server that needs another version sees at
    # once that it is not installed (and installs it before the game).
    marker = os.path.join(venv, f".installed-{requirement}")
    if not is_installed(marker, requirement):
        try:
            failed = install(requirement, venv, python, marker, engine, size, notice)
        except OSError as e:
            failed = f"{engine} is not installed, and this process cannot install it ({e}); the server installs it before a game starts"
        if failed or "--install-only" in sys.argv:
            return failed
    if "--install-only" in sys.argv:
        return None
    os.environ[reexec] = "1"
    os.execv(python, [python, os.path.abspath(script)] + [a for a in sys.argv[1:] if a != "--install-only"])


def is_installed(marker, requirement):
    try:
        with open(marker) as f:
            return f.read() == requirement
    except OSError:
        return False


def install(requirement, venv, python, marker, engine, size, notice):
    """Installs `requirement` into `venv` once, under a file lock; None when
    done, else why not."""
    import fcntl

    os.makedirs(os.path.dirname(venv), exist_ok=True)
    # One install at a time: a second game started meanwhile waits here and
    # then finds the engine installed.
    with open(venv + ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            notice(f"first use: another game is installing {engine}; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not is_installed(marker, requirement):
            started = time.time()
            steps = [
                (f"first use: creating a Python venv for {engine} in {venv}", [sys.executable, "-m", "venv", "--clear", venv],
                 "creating the venv failed (Debian: apt-get install python3-venv)"),
                (f"first use: installing {requirement} from PyPI ({size}, usually under a minute; given up after {INSTALL_LIMIT_S} s)",
                 [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", requirement],
                 f"pip could not install {requirement} (is PyPI reachable?)"),
            ]
            for what, cmd, why in steps:
                notice(what)
                failed = run_step(cmd, why)
                if failed:
                    return failed
            with open(marker, "w") as f:
                f.write(requirement)
            notice(f"{engine} is installed ({time.time() - started:.0f} s); starting the game")
    return None


def run_step(cmd, why):
    """Runs one install step within INSTALL_LIMIT_S, its output going to the
    server's log; None when it succeeded, else why it failed with the
    program's last words."""
    import shutil
    import subprocess
    import tempfile

    # The step's temporary files go in a directory of its own, removed after
    # it: pip stopped at the time limit is killed and cleans up nothing.
    scratch = tempfile.mkdtemp(prefix="ludus-install-")
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=INSTALL_LIMIT_S,
                              env={**os.environ, "TMPDIR": scratch})
        output, late = done.stdout, None
    except subprocess.TimeoutExpired as e:
        output, late = e.output, f"it had not finished after {INSTALL_LIMIT_S} s and was stopped (is the index reachable, through your proxy, with its certificate?)"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = (output or b"").decode("utf-8", "replace")
    sys.stderr.write(text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    telling = [line for line in lines if "Error:" in line or "reason:" in line]
    words = (telling[-1] if telling else " / ".join(lines[-3:]))[-600:]
    said = f"; its last words: {words}" if words else "; it said nothing"
    if late:
        return f"{why}: {late}{said}"
    if done.returncode != 0:
        return f"{why}{said}"
    return None

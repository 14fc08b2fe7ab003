//! An engine's Landlock ruleset: the kernel refuses it every file outside
//! the directories it may read or write, every TCP port it was not granted,
//! and signals and abstract sockets outside its own processes. Built in the
//! server (it opens the directories), applied by the child before exec
//! (`restrict_self`), which adds its own `/proc` entry: the server's, and
//! every other process's, stay out of reach (Landlock does not keep a
//! process from reading another's `/proc/PID/environ`; a rule does).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules,
};

/// The rights asked for: those of this ABI, which the crate lowers to what
/// the running kernel has (best effort; `Sandbox::describe` says what is missing).
const WANTED: ABI = ABI::V6;

/// What every engine may read: the system's programs and libraries, the
/// few files of `/etc` a program needs to start, resolve names and trust
/// certificates, and the machine-wide files of `/proc` (its own entry is
/// added by the child itself).
pub const SYSTEM: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys/kernel",
    "/proc/sys/vm/overcommit_memory",
    "/sys/devices/system/cpu",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/alternatives",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/npmrc",
];

/// The kernel's Landlock ABI version; 0 where it has none (or it is off).
pub fn abi() -> i32 {
    // SAFETY: the documented version query: no ruleset, size 0, the VERSION flag.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, 1u32) };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// What a ruleset confines: an engine, or a built-in engine's first-use
/// install (our own npm or pip run, which nothing the game sends reaches: it
/// may read what the user's registry settings name, wherever they are, and
/// reach the network, but write only its package and scratch directories).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Confines {
    Engine,
    Install,
}

/// The ruleset for one process, or none where the kernel has no Landlock.
/// `connect`: the TCP ports an engine may connect to.
pub fn ruleset(abi: i32, confines: Confines, read: &[PathBuf], write: &[PathBuf], connect: &[u16]) -> std::io::Result<Option<OwnedFd>> {
    if abi == 0 {
        return Ok(None);
    }
    let fail = |e: landlock::RulesetError| std::io::Error::other(format!("preparing the engine's Landlock rules: {e}"));
    let handled = match confines {
        Confines::Engine => AccessFs::from_all(WANTED),
        Confines::Install => AccessFs::from_write(WANTED),
    };
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(handled).map_err(fail)?;
    if confines == Confines::Engine {
        ruleset = ruleset.handle_access(AccessNet::from_all(WANTED)).map_err(fail)?;
    }
    let mut created = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal).map_err(fail)?.create().map_err(fail)?;
    if confines == Confines::Engine {
        created = created.add_rules(path_beneath_rules(read, AccessFs::from_read(WANTED))).map_err(fail)?;
    }
    created = created.add_rules(path_beneath_rules(write, handled)).map_err(fail)?;
    for port in connect {
        created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp)).map_err(fail)?;
    }
    Ok(Option::<OwnedFd>::from(created))
}

/// Landlock's rule for a directory and what beneath it may be done
/// (`struct landlock_path_beneath_attr`, packed as the kernel has it).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Execute, read a file, read a directory: the reading rights of every
/// Landlock ABI, so the kernel takes them whatever it handles beyond.
const READ_ANY_ABI: u64 = 1 | (1 << 2) | (1 << 3);

/// Restricts the calling process by `ruleset`, after adding a rule for its
/// own `/proc` entry. Runs between fork and exec: system calls only, on a
/// path that is a constant and an attribute on the stack.
pub fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
    const PROC_SELF: &[u8] = b"/proc/self\0";
    let fd = ruleset.as_raw_fd();
    // SAFETY: open of a NUL-terminated constant; the descriptor is closed below.
    let own = unsafe { libc::open(PROC_SELF.as_ptr().cast(), libc::O_PATH | libc::O_CLOEXEC) };
    if own >= 0 {
        let rule = PathBeneathAttr { allowed_access: READ_ANY_ABI, parent_fd: own };
        // SAFETY: the kernel reads the attribute during the call, from the stack.
        // A refusal leaves its own /proc entry out of reach, which programs survive.
        unsafe { libc::syscall(libc::SYS_landlock_add_rule, fd, 1, &rule as *const PathBeneathAttr, 0) };
        // SAFETY: the descriptor opened above.
        unsafe { libc::close(own) };
    }
    // SAFETY: a plain system call on a ruleset descriptor this process holds.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

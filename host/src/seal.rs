//! Seals on result records. The server signs every line it writes to a
//! records file (Ed25519, with a key made at its first start and kept with
//! its data), and every line carries the SHA-256 of the line before it in
//! its file (`prev`). A reader then names a line that was altered, removed,
//! copied or moved, and, given the server's public key, one that the server
//! did not write. Ed25519 and SHA-256 come from `ring`, which the TLS stack
//! builds already. Why a chain and signatures, and what each proves:
//! docs/evaluation.md, "Records that cannot be altered unseen".
//!
//! A line's signature covers the line as JSON without its `sig` field
//! (serde_json's own serialization of the parsed line, so a reader
//! re-serializes exactly what was signed).

use std::path::Path;

use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use serde_json::{Map, Value};

/// The fields a seal adds to a record.
pub const PREV: &str = "prev";
pub const SIGNER: &str = "signer";
pub const SIG: &str = "sig";

/// The server's signing key.
pub struct SigningKey {
    pair: Ed25519KeyPair,
    public: String,
}

/// Shows the public half only.
impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.public)
    }
}

impl SigningKey {
    /// The key kept at `path`, made there (readable by its owner only) when
    /// there is none yet.
    pub fn load_or_create(path: &Path) -> Result<SigningKey, String> {
        let shown = path.display();
        match std::fs::read_to_string(path) {
            Ok(text) => return SigningKey::from_text(&text).map_err(|e| format!("{shown}: not a records key: {e}")),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{shown}: cannot be read: {e}")),
            Err(_) => {}
        }
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|_| "the system gave no random bytes for a key".to_string())?;
        let text = format!("{}\n", hex(pkcs8.as_ref()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot be made: {e}", dir.display()))?;
        }
        match write_new_private(path, text.as_bytes()) {
            Ok(()) => SigningKey::from_text(&text),
            // Another server made it at the same moment: that one is the key.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => SigningKey::load_or_create(path),
            Err(e) => Err(format!("{shown}: cannot be written: {e}")),
        }
    }

    fn from_text(text: &str) -> Result<SigningKey, String> {
        let der = unhex(text.trim()).ok_or("not hexadecimal")?;
        let pair = Ed25519KeyPair::from_pkcs8(&der).map_err(|e| format!("not an Ed25519 key ({e})"))?;
        let public = hex(pair.public_key().as_ref());
        Ok(SigningKey { pair, public })
    }

    /// The public half, as `ludus key` prints it and `--key` takes it.
    pub fn public(&self) -> &str {
        &self.public
    }

    /// The line (without its line break) that records `record` after a line
    /// whose digest is `prev` ("" for a file's first line): the record with
    /// `prev`, `signer` and `sig`.
    pub fn seal(&self, record: Value, prev: &str) -> Result<Vec<u8>, String> {
        let Value::Object(mut map) = record else { return Err("a record is a JSON object".into()) };
        map.remove(SIG);
        map.insert(PREV.into(), Value::String(prev.into()));
        map.insert(SIGNER.into(), Value::String(self.public.clone()));
        let body = serde_json::to_vec(&map).map_err(|e| e.to_string())?;
        let sig = self.pair.sign(&body);
        map.insert(SIG.into(), Value::String(hex(sig.as_ref())));
        serde_json::to_vec(&map).map_err(|e| e.to_string())
    }
}

/// Creates `path` with `bytes`, readable and writable by its owner only;
/// fails if it exists.
fn write_new_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A line's digest, as the next line's `prev` names it: SHA-256 in hex.
pub fn digest(line: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, line).as_ref())
}

/// What a reader makes of one line's seal, before the lines around it are known.
#[derive(Clone, Debug)]
pub struct Facts {
    pub digest: String,
    /// Its `prev`; none: the line carries no seal at all.
    pub prev: Option<String>,
}

impl Facts {
    /// Reads `prev` from a line without parsing the whole of it.
    pub fn of(line: &[u8]) -> Facts {
        #[derive(serde::Deserialize)]
        struct Prev {
            prev: Option<String>,
            sig: Option<serde::de::IgnoredAny>,
        }
        let prev = serde_json::from_slice::<Prev>(line).ok().filter(|p| p.sig.is_some()).and_then(|p| p.prev);
        Facts { digest: digest(line), prev }
    }
}

/// What is wrong with a line's seal.
#[derive(Clone, Debug, PartialEq)]
pub enum Flaw {
    /// It has no seal (written by a server that signs nothing, or stripped).
    Unsigned,
    /// Its content is not what was signed: it was edited.
    Altered,
    /// Signed, but by a key not among those given (`--key`).
    Untrusted(String),
    /// It does not follow the line before it: a line before it was removed,
    /// or it was moved or copied here (`copy_of`: the line it repeats).
    OutOfPlace { copy_of: Option<u64> },
}

impl Flaw {
    /// In words, for `file:line: …`.
    pub fn said(&self) -> String {
        match self {
            Flaw::Unsigned => "not signed (no seal)".into(),
            Flaw::Altered => "altered: its content is not what the server signed".into(),
            Flaw::Untrusted(key) => format!("signed by a key not given with --key ({})", key.get(..16).unwrap_or(key)),
            Flaw::OutOfPlace { copy_of: Some(line) } => format!("a copy of line {line}"),
            Flaw::OutOfPlace { copy_of: None } => {
                "does not follow the line before it: a line there was removed, or this one was moved".into()
            }
        }
    }

    /// Whether a report leaves the line out (unless told to include it):
    /// a line merely out of place is still the server's record.
    pub fn refused(&self) -> bool {
        !matches!(self, Flaw::OutOfPlace { copy_of: None })
    }
}

/// The public keys a reader trusts (`--key`); none given: every line's own
/// signer is taken as given, which catches edits but not a forger.
#[derive(Debug, Default)]
pub struct Trusted(Vec<Vec<u8>>);

impl Trusted {
    /// Keys in hex, as `ludus key` prints them.
    pub fn parse(keys: &[String]) -> Result<Trusted, String> {
        let parsed = keys.iter().map(|k| {
            unhex(k.trim())
                .filter(|b| b.len() == 32)
                .ok_or_else(|| format!("{k:?} is not a public key (64 hex digits, as `ludus key` prints)"))
        });
        Ok(Trusted(parsed.collect::<Result<_, _>>()?))
    }

    /// Whether any key was given: then every line's signature is checked.
    pub fn any(&self) -> bool {
        !self.0.is_empty()
    }

    /// Checks `line`'s signature: by its own signer, and that signer among
    /// the trusted keys when any were given.
    pub fn check(&self, line: &[u8]) -> Result<(), Flaw> {
        let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(line) else { return Err(Flaw::Unsigned) };
        let (Some(Value::String(sig)), Some(Value::String(signer))) = (map.remove(SIG), map.get(SIGNER).cloned()) else {
            return Err(Flaw::Unsigned);
        };
        let (Some(sig), Some(key)) = (unhex(&sig), unhex(&signer)) else { return Err(Flaw::Altered) };
        if self.any() && !self.0.contains(&key) {
            return Err(Flaw::Untrusted(signer));
        }
        let body = serde_json::to_vec(&Map::clone(&map)).map_err(|_| Flaw::Altered)?;
        UnparsedPublicKey::new(&ED25519, &key).verify(&body, &sig).map_err(|_| Flaw::Altered)
    }
}

/// Follows one file's lines in order. A line's place is known when it is
/// read (its `prev` against the line before); whether it is intact, when
/// the next line is read (that line's `prev` names its digest) or, for the
/// last line, a line after a gap and with `--key`, by its signature. So each
/// line's verdict comes one line late: [`Chain::next`] answers for the line
/// before, [`Chain::last`] for the last.
pub struct Chain<'t> {
    trusted: &'t Trusted,
    /// The digest of the line before the one held (none: at the file's start).
    before: Option<String>,
    held: Option<Held>,
    /// The line judged last was altered: the line after it names its
    /// digest as written, so it is in its place.
    after_altered: bool,
}

struct Held {
    facts: Facts,
    in_place: bool,
}

impl<'t> Chain<'t> {
    pub fn new(trusted: &'t Trusted) -> Chain<'t> {
        Chain { trusted, before: None, held: None, after_altered: false }
    }

    /// Takes the next line's facts; the verdict on the line before it,
    /// whose bytes are `held_line` (none for a file's first line).
    pub fn next(&mut self, facts: Facts, held_line: Option<&[u8]>) -> Option<Result<(), Flaw>> {
        let verdict = match (self.held.take(), held_line) {
            (Some(held), Some(line)) => Some(self.judge(held, line, facts.prev.as_deref())),
            _ => None,
        };
        let in_place = facts.prev.as_deref().is_some_and(|p| p == self.before.as_deref().unwrap_or(""));
        self.before = Some(facts.digest.clone());
        self.held = Some(Held { facts, in_place });
        verdict
    }

    /// The verdict on the file's last line, `line`.
    pub fn last(&mut self, line: &[u8]) -> Option<Result<(), Flaw>> {
        let held = self.held.take()?;
        Some(self.judge(held, line, None))
    }

    fn judge(&mut self, held: Held, line: &[u8], next_prev: Option<&str>) -> Result<(), Flaw> {
        let after_altered = std::mem::take(&mut self.after_altered);
        let in_place = held.in_place || after_altered;
        if held.facts.prev.is_none() {
            return Err(Flaw::Unsigned);
        }
        // The next line names this one's digest: it is as it was written,
        // unless a key is given (then its signer is checked too).
        let vouched = next_prev == Some(held.facts.digest.as_str());
        if !vouched || self.trusted.any() {
            let checked = self.trusted.check(line);
            self.after_altered = checked == Err(Flaw::Altered);
            checked?;
        }
        if in_place { Ok(()) } else { Err(Flaw::OutOfPlace { copy_of: None }) }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(dir: &Path) -> SigningKey {
        SigningKey::load_or_create(&dir.join("records.key")).unwrap()
    }

    /// Lines sealed one after another, as a records file holds them.
    fn file(key: &SigningKey, n: usize) -> Vec<Vec<u8>> {
        let mut prev = String::new();
        (0..n)
            .map(|i| {
                let line = key.seal(serde_json::json!({"record": format!("s/{i}"), "outcome": "won"}), &prev).unwrap();
                prev = digest(&line);
                line
            })
            .collect()
    }

    fn verdicts(lines: &[Vec<u8>], trusted: &Trusted) -> Vec<Result<(), Flaw>> {
        let mut chain = Chain::new(trusted);
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            out.extend(chain.next(Facts::of(line), i.checked_sub(1).map(|j| lines[j].as_slice())));
        }
        out.extend(lines.last().and_then(|l| chain.last(l)));
        out
    }

    #[test]
    fn a_key_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (key(dir.path()), key(dir.path()));
        assert_eq!(a.public(), b.public());
        assert_eq!(a.public().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("records.key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join("bad.key"), "zz").unwrap();
        assert!(SigningKey::load_or_create(&dir.path().join("bad.key")).unwrap_err().contains("not a records key"));
    }

    #[test]
    fn every_tampering_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let k = key(dir.path());
        let none = Trusted::default();
        let lines = file(&k, 5);
        assert!(verdicts(&lines, &none).iter().all(Result::is_ok));

        let mut edited = lines.clone();
        edited[2] = String::from_utf8(edited[2].clone()).unwrap().replace("won", "lost").into_bytes();
        assert_eq!(verdicts(&edited, &none)[2], Err(Flaw::Altered), "an edited line");
        let mut last = lines.clone();
        last[4] = String::from_utf8(last[4].clone()).unwrap().replace("won", "lost").into_bytes();
        assert_eq!(verdicts(&last, &none)[4], Err(Flaw::Altered), "an edited last line");

        let mut removed = lines.clone();
        removed.remove(2);
        let v = verdicts(&removed, &none);
        assert_eq!((v[1].clone(), v[2].clone()), (Ok(()), Err(Flaw::OutOfPlace { copy_of: None })), "{v:?}");

        let mut copied = lines.clone();
        copied.push(lines[1].clone());
        assert_eq!(verdicts(&copied, &none)[5], Err(Flaw::OutOfPlace { copy_of: None }));

        let mut swapped = lines.clone();
        swapped.swap(1, 2);
        let v = verdicts(&swapped, &none);
        assert!(v[1].is_err() && v[2].is_err() && v[3].is_err(), "{v:?}");

        let unsigned = vec![br#"{"record":"s/0"}"#.to_vec()];
        assert_eq!(verdicts(&unsigned, &none), [Err(Flaw::Unsigned)]);
    }

    #[test]
    fn a_forger_with_another_key_passes_only_without_the_servers_key() {
        let dir = tempfile::tempdir().unwrap();
        let (server, forger) = (key(dir.path()), SigningKey::load_or_create(&dir.path().join("other.key")).unwrap());
        let forged = file(&forger, 3);
        assert!(verdicts(&forged, &Trusted::default()).iter().all(Result::is_ok));
        let trusted = Trusted::parse(&[server.public().to_string()]).unwrap();
        assert!(verdicts(&forged, &trusted).iter().all(|v| matches!(v, Err(Flaw::Untrusted(_)))));
        assert!(verdicts(&file(&server, 3), &trusted).iter().all(Result::is_ok));
        assert!(Trusted::parse(&["abc".into()]).unwrap_err().contains("64 hex digits"));
    }
}

//! Reading a records file line by line, each line's seal checked on the
//! way (`seal::Chain`): a line whose seal holds is counted; one that is
//! unsigned, altered, a copy or another key's is named and left out unless
//! the reader includes such lines; one merely out of place (a line before
//! it was removed, or it was moved) is named and counted, since it is still
//! the server's record. A line's verdict comes when the next line is read,
//! so one line is held back; a line out of place is kept aside until the
//! file is read, then looked for earlier in the file: found, it is a copy.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::{Line, MAX_LINE, NAMED_BAD_LINES, Report};
use crate::seal::{Chain, Facts, Flaw, Trusted};

/// How a report reads its files.
pub struct Reading<'t> {
    /// The servers' public keys it checks each line against (none: each
    /// line's own signer, which catches edits, not a forger).
    pub trusted: &'t Trusted,
    /// Lines whose seal does not hold are counted too (still named).
    pub include_unverified: bool,
}

/// The lines whose seal did not hold, by flaw.
#[derive(Default, Debug)]
pub struct Unverified {
    pub unsigned: u64,
    pub altered: u64,
    pub copies: u64,
    pub untrusted: u64,
    pub out_of_place: u64,
    /// Of these, the lines left out of every figure.
    pub left_out: u64,
    named: u64,
}

impl Unverified {
    fn count(&mut self, flaw: &Flaw) {
        let n = match flaw {
            Flaw::Unsigned => &mut self.unsigned,
            Flaw::Altered => &mut self.altered,
            Flaw::Untrusted(_) => &mut self.untrusted,
            Flaw::OutOfPlace { copy_of: Some(_) } => &mut self.copies,
            Flaw::OutOfPlace { copy_of: None } => &mut self.out_of_place,
        };
        *n += 1;
    }

    /// The closing warning: how many lines of each flaw, and what became of them.
    pub fn said(&self, included: bool) -> Option<String> {
        let parts: Vec<String> = [
            (self.unsigned, "unsigned"),
            (self.altered, "altered"),
            (self.copies, "copies of another line"),
            (self.untrusted, "signed by a key not given"),
            (self.out_of_place, "out of place (counted)"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            return None;
        }
        let then = match (self.left_out, included) {
            (0, _) => String::new(),
            (n, false) => format!("; {n} lines left out of every figure (--include-unverified counts them)"),
            (n, true) => format!("; {n} of them counted, as --include-unverified asks"),
        };
        Some(format!("lines whose seal does not hold: {}{then}", parts.join(", ")))
    }
}

/// A line read and not yet judged.
struct Held {
    number: u64,
    bytes: Vec<u8>,
    whole: bool,
}

impl Report {
    pub(super) fn read_file(&mut self, path: &Path, reading: &Reading<'_>, warn: &mut dyn FnMut(&str)) -> std::io::Result<()> {
        let file = std::fs::File::open(path)?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut chain = Chain::new(reading.trusted);
        let mut held: Option<Held> = None;
        let mut spare = Vec::new();
        // Lines out of place, kept until the file is read: copies or not.
        let mut misplaced: Vec<Held> = Vec::new();
        let mut number = 0u64;
        loop {
            spare.clear();
            let (read, whole) = read_line(&mut reader, &mut spare)?;
            if read == 0 {
                break;
            }
            number += 1;
            if spare.trim_ascii().is_empty() {
                continue;
            }
            let verdict = chain.next(Facts::of(&spare), held.as_ref().map(|h| h.bytes.as_slice()));
            let next = Held { number, bytes: std::mem::take(&mut spare), whole };
            if let (Some(line), Some(verdict)) = (held.replace(next), verdict) {
                // Its buffer takes the next line, unless the line is kept aside.
                spare = self.judged(path, line, verdict, reading, &mut misplaced, warn).unwrap_or_default();
            }
        }
        if let Some(line) = held.take() {
            let verdict = chain.last(&line.bytes).unwrap_or(Ok(()));
            self.judged(path, line, verdict, reading, &mut misplaced, warn);
        }
        if !misplaced.is_empty() {
            self.place(path, misplaced, reading, warn)?;
        }
        Ok(())
    }

    /// Counts `line`, or names and (unless included) leaves it out, as its
    /// verdict says; its buffer back, unless the line is kept aside.
    fn judged(
        &mut self,
        path: &Path,
        line: Held,
        verdict: Result<(), Flaw>,
        reading: &Reading<'_>,
        misplaced: &mut Vec<Held>,
        warn: &mut dyn FnMut(&str),
    ) -> Option<Vec<u8>> {
        let parsed = if line.whole {
            serde_json::from_slice::<Line>(line.bytes.trim_ascii()).map_err(|e| e.to_string())
        } else {
            Err(format!("longer than {} MiB", MAX_LINE >> 20))
        };
        let record = match parsed {
            Ok(record) => record,
            Err(why) => {
                self.bad_lines += 1;
                if self.bad_lines <= NAMED_BAD_LINES {
                    warn(&format!("{}:{}: not a result record ({why}); skipped", path.display(), line.number));
                }
                return Some(line.bytes);
            }
        };
        match verdict {
            Ok(()) => self.add(record),
            Err(Flaw::OutOfPlace { copy_of: None }) => {
                drop(record);
                misplaced.push(line);
                return None;
            }
            Err(flaw) => {
                let counted = reading.include_unverified;
                self.flawed(path, line.number, &flaw, counted, warn);
                if counted {
                    self.add(record);
                }
            }
        }
        Some(line.bytes)
    }

    fn flawed(&mut self, path: &Path, number: u64, flaw: &Flaw, counted: bool, warn: &mut dyn FnMut(&str)) {
        self.unverified.count(flaw);
        if flaw.refused() && !counted {
            self.unverified.left_out += 1;
        }
        // Unsigned lines are counted, not named: a file from a server that
        // signs nothing would name every line.
        if *flaw == Flaw::Unsigned {
            return;
        }
        self.unverified.named += 1;
        if self.unverified.named <= NAMED_BAD_LINES {
            let then = if flaw.refused() && !counted { "left out" } else { "counted" };
            warn(&format!("{}:{number}: {}; {then}", path.display(), flaw.said()));
        }
    }

    /// Lines out of place: a copy of an earlier line of the file (the same
    /// bytes) is left out; any other is counted, and named.
    fn place(&mut self, path: &Path, misplaced: Vec<Held>, reading: &Reading<'_>, warn: &mut dyn FnMut(&str)) -> std::io::Result<()> {
        let wanted: Vec<String> = misplaced.iter().map(|l| crate::seal::digest(&l.bytes)).collect();
        let mut first: Vec<Option<u64>> = vec![None; misplaced.len()];
        let mut reader = BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
        let (mut buf, mut number) = (Vec::new(), 0u64);
        let last = misplaced.iter().map(|l| l.number).max().unwrap_or(0);
        while number < last {
            buf.clear();
            if read_line(&mut reader, &mut buf)?.0 == 0 {
                break;
            }
            number += 1;
            let digest = crate::seal::digest(&buf);
            for (i, line) in misplaced.iter().enumerate() {
                if number < line.number && first[i].is_none() && wanted[i] == digest {
                    first[i] = Some(number);
                }
            }
        }
        for (line, copy_of) in misplaced.into_iter().zip(first) {
            let flaw = Flaw::OutOfPlace { copy_of };
            let counted = copy_of.is_none() || reading.include_unverified;
            self.flawed(path, line.number, &flaw, counted, warn);
            if counted && let Ok(record) = serde_json::from_slice::<Line>(line.bytes.trim_ascii()) {
                self.add(record);
            }
        }
        Ok(())
    }
}

/// Reads one line (without its line break) into `buf`, at most
/// [`MAX_LINE`] bytes of it: (bytes read, whether the line fit).
pub(super) fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
    let read = reader.by_ref().take(MAX_LINE as u64 + 1).read_until(b'\n', buf)?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok((read, true));
    }
    if buf.len() <= MAX_LINE {
        return Ok((read, true));
    }
    // Too long: the rest of the line is read past, not kept.
    let mut rest = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                rest += i + 1;
                break;
            }
            None => {
                let n = chunk.len();
                reader.consume(n);
                rest += n;
            }
        }
    }
    Ok((read + rest, false))
}

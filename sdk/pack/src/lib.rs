//! Doc comments for Ludus game components.
//!
//! Rust toolchains do not keep WIT doc comments in a built component, yet the
//! host turns them into MCP tool descriptions. Packaging appends them as a
//! top-level `package-docs` custom section in the format wit-component uses
//! (a version byte followed by JSON), and the host reads that section back
//! with [`package_docs`] without parsing anything else of the component.

/// Name of the custom section, as wit-component spells it.
pub const SECTION: &str = "package-docs";

/// The 8-byte preamble of a component binary (magic, version 0x0d, layer 1).
const COMPONENT_PREAMBLE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// A top-level section of a component: its id, and where its payload lies.
struct Section {
    id: u8,
    #[cfg_attr(not(feature = "pack"), allow(dead_code))]
    start: usize,
    payload: std::ops::Range<usize>,
}

fn read_leb_u32(bytes: &[u8], pos: &mut usize) -> Option<u32> {
    let mut result: u32 = 0;
    for shift in (0..35).step_by(7) {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        result |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(result);
        }
    }
    None
}

fn sections(bytes: &[u8]) -> Option<Vec<Section>> {
    if bytes.get(..8)? != COMPONENT_PREAMBLE {
        return None;
    }
    let mut pos = 8;
    let mut out = Vec::new();
    while pos < bytes.len() {
        let start = pos;
        let id = bytes[pos];
        pos += 1;
        let len = read_leb_u32(bytes, &mut pos)? as usize;
        let end = pos.checked_add(len).filter(|&e| e <= bytes.len())?;
        out.push(Section { id, start, payload: pos..end });
        pos = end;
    }
    Some(out)
}

/// The name and data of a custom section payload.
fn custom_section(payload: &[u8]) -> Option<(&str, &[u8])> {
    let mut pos = 0;
    let len = read_leb_u32(payload, &mut pos)? as usize;
    let name = std::str::from_utf8(payload.get(pos..pos.checked_add(len)?)?).ok()?;
    Some((name, &payload[pos + len..]))
}

/// The JSON of the component's top-level `package-docs` section (without its
/// version byte), if it has one.
pub fn package_docs(component: &[u8]) -> Option<&[u8]> {
    sections(component)?.into_iter().find_map(|s| {
        let (name, data) = custom_section(&component[s.payload]).filter(|_| s.id == 0)?;
        (name == SECTION).then(|| data.get(1..)).flatten()
    })
}

#[cfg(feature = "pack")]
mod pack;
#[cfg(feature = "pack")]
pub use pack::{pack, pack_file};

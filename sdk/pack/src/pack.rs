use std::path::Path;

use anyhow::{Context, Result, bail};
use wit_parser::{PackageMetadata, Resolve};

use crate::{COMPONENT_PREAMBLE, SECTION, custom_section, sections};

/// Returns `component` with a `package-docs` section holding the doc comments
/// of the WIT package in the last of `wit_dirs` (earlier directories hold the
/// packages it depends on, such as `ludus:plugin`). An existing section is
/// replaced, so packing twice gives the same bytes.
pub fn pack(component: &[u8], wit_dirs: &[&Path]) -> Result<Vec<u8>> {
    let Some(found) = sections(component) else {
        bail!("not a WebAssembly component (build for wasm32-wasip2)");
    };
    let mut resolve = Resolve::new();
    let mut main = None;
    for dir in wit_dirs {
        let (pkg, _) = resolve.push_dir(dir).with_context(|| format!("reading WIT in {}", dir.display()))?;
        main = Some(pkg);
    }
    let Some(main) = main else { bail!("no WIT directory given") };
    let docs = with_all_members(&resolve, main, PackageMetadata::extract(&resolve, main).encode()?)?;

    let mut out = COMPONENT_PREAMBLE.to_vec();
    for s in &found {
        let is_docs = s.id == 0 && custom_section(&component[s.payload.clone()]).is_some_and(|(n, _)| n == SECTION);
        if !is_docs {
            out.extend_from_slice(&component[s.start..s.payload.end]);
        }
    }
    let mut payload = Vec::new();
    write_leb_u32(&mut payload, SECTION.len() as u32);
    payload.extend_from_slice(SECTION.as_bytes());
    payload.extend_from_slice(&docs);
    out.push(0);
    write_leb_u32(&mut out, payload.len() as u32);
    out.extend_from_slice(&payload);
    Ok(out)
}

/// [`pack`] from one file to another.
pub fn pack_file(input: &Path, wit_dirs: &[&Path], output: &Path) -> Result<()> {
    let bytes = std::fs::read(input).with_context(|| format!("reading {}", input.display()))?;
    let packed = pack(&bytes, wit_dirs).with_context(|| format!("packing {}", input.display()))?;
    // Write beside the target and rename, so a watching host never reads half a file.
    let tmp = output.with_extension("wasm.tmp");
    std::fs::write(&tmp, packed).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, output).with_context(|| format!("renaming to {}", output.display()))?;
    Ok(())
}

/// wit-component lists only documented members of a type. The host finds a
/// type's docs by its member names (component types carry no type names), so
/// every record field, variant case, enum case and flag is listed, undocumented
/// ones with empty docs. The result is still a valid package-docs section.
fn with_all_members(resolve: &Resolve, pkg: wit_parser::PackageId, encoded: Vec<u8>) -> Result<Vec<u8>> {
    use serde_json::{Map, Value};
    use wit_parser::TypeDefKind;
    let mut json: Value = serde_json::from_slice(&encoded[1..])?;
    for (iname, iid) in &resolve.packages[pkg].interfaces {
        for (tname, tid) in &resolve.interfaces[*iid].types {
            let members: Vec<&str> = match &resolve.types[*tid].kind {
                TypeDefKind::Record(r) => r.fields.iter().map(|f| f.name.as_str()).collect(),
                TypeDefKind::Variant(v) => v.cases.iter().map(|c| c.name.as_str()).collect(),
                TypeDefKind::Enum(e) => e.cases.iter().map(|c| c.name.as_str()).collect(),
                TypeDefKind::Flags(f) => f.flags.iter().map(|f| f.name.as_str()).collect(),
                _ => continue,
            };
            let root = json.as_object_mut().expect("package docs are an object");
            let entry = root
                .entry("interfaces")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("interfaces")
                .entry(iname.as_str())
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("interface")
                .entry("types")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("types")
                .entry(tname.as_str())
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("type")
                .entry("items")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("items");
            for m in members {
                entry.entry(m).or_insert_with(|| Value::String(String::new()));
            }
        }
    }
    let mut out = vec![encoded[0]];
    serde_json::to_writer(&mut out, &json)?;
    Ok(out)
}

fn write_leb_u32(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

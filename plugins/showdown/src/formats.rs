//! The formats of the pinned simulator (`formats.tsv`, written from its
//! `Dex.formats`; a test compares it with the installed package), and which
//! of them an offline battle can play.

/// One format as the simulator knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub id: &'static str,
    pub name: &'static str,
    /// singles, doubles, triples, multi or freeforall.
    pub game_type: &'static str,
    /// Teams are generated (random formats); otherwise players bring them.
    pub random: bool,
}

const TABLE: &str = include_str!("formats.tsv");

pub fn all() -> impl Iterator<Item = Format> {
    TABLE.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter_map(|l| {
        let mut f = l.split('\t');
        Some(Format { id: f.next()?, name: f.next()?, game_type: f.next()?, random: f.next()? == "random" })
    })
}

pub fn get(id: &str) -> Option<Format> {
    all().find(|f| f.id == id)
}

/// The `n` format ids nearest to `id` (by edit distance).
pub fn nearest(id: &str, n: usize) -> Vec<&'static str> {
    let mut scored: Vec<(usize, &'static str)> = all().map(|f| (strsim::levenshtein(id, f.id), f.id)).collect();
    scored.sort();
    scored.into_iter().take(n).map(|(_, id)| id).collect()
}

/// Whether an offline battle can play `id`, and if not, why.
pub fn check_offline(id: &str) -> Result<Format, String> {
    let Some(f) = get(id) else {
        return Err(format!(
            "unknown format `{id}`; the nearest are {} (every format: resource showdown://formats)",
            nearest(id, 3).iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ));
    };
    if !matches!(f.game_type, "singles" | "doubles" | "triples") {
        return Err(format!("{} is a {} format for four players; offline battles have two", f.name, f.game_type));
    }
    Ok(f)
}

/// The formats as the resource lists them (JSON).
pub fn listing() -> String {
    let rows: Vec<serde_json::Value> = all()
        .map(|f| {
            serde_json::json!({"id": f.id, "name": f.name, "game_type": f.game_type, "team": if f.random { "random" } else { "bring your own" },
                               "offline": check_offline(f.id).is_ok()})
        })
        .collect();
    serde_json::Value::Array(rows).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_found_refused_with_the_nearest_names_and_listed() {
        assert!(check_offline("gen9randombattle").is_ok());
        let e = check_offline("gen9randombatle").unwrap_err();
        assert!(e.starts_with("unknown format `gen9randombatle`; the nearest are `gen9randombattle`"), "{e}");
        assert_eq!(check_offline("gen9randomdoublesbattle").unwrap().game_type, "doubles");
        assert!(!check_offline("gen9ou").unwrap().random);
        assert!(check_offline("gen9freeforallrandombattle").unwrap_err().contains("for four players"));
        let listed: serde_json::Value = serde_json::from_str(&listing()).unwrap();
        assert!(listed.as_array().unwrap().len() > 300);
    }
}

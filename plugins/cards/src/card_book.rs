//! Cards looked up by name by a caller with no game: the card data bundled
//! with the bridge (its `cards.json`), compiled into the component, since a
//! call without a game runs in the plugin's shared instance, which may not
//! start the engine. A game's own lookups go to its engine, which also reads
//! the operator's card data.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

const BUNDLED: &str = include_str!("../bridge/cards.json");

/// Card name → its faces (MTGJSON's AtomicCards `data`).
fn cards() -> &'static Map<String, Value> {
    static CARDS: OnceLock<Map<String, Value>> = OnceLock::new();
    CARDS.get_or_init(|| {
        let file: Value = serde_json::from_str(BUNDLED).unwrap_or_default();
        file["data"].as_object().cloned().unwrap_or_default()
    })
}

/// A card's rules text by its name (any case), shaped as the engine answers
/// `get_oracle_text`; an unknown name gets the nearest ones.
pub fn by_name(name: &str) -> Result<Value, String> {
    let wanted = name.trim().to_lowercase();
    let found = cards().iter().find(|(n, _)| n.to_lowercase() == wanted);
    let Some((_, faces)) = found else { return Err(unknown(name)) };
    let card = &faces[0];
    let text = card["text"].as_str().unwrap_or("");
    let mut answer = json!({
        "success": true,
        "source": "database",
        "name": card["name"],
        "rules": text.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>(),
        "oracle_text": oracle_text(card),
    });
    if let Some(set) = card["printings"][0].as_str() {
        answer["set_code"] = json!(set);
    }
    Ok(answer)
}

/// Name and cost, type line, rules, then power/toughness or loyalty.
fn oracle_text(card: &Value) -> String {
    let s = |key: &str| card[key].as_str().unwrap_or("");
    let mut lines = vec![format!("{} {}", s("name"), s("manaCost")).trim().to_string(), s("type").to_string()];
    if !s("text").is_empty() {
        lines.push(s("text").to_string());
    }
    if card.get("power").is_some() {
        lines.push(format!("{}/{}", s("power"), s("toughness")));
    }
    if card.get("loyalty").is_some() {
        lines.push(format!("Loyalty {}", s("loyalty")));
    }
    lines.join("\n")
}

fn unknown(name: &str) -> String {
    let wanted = name.trim().to_lowercase();
    let mut near: Vec<(usize, &str)> = cards()
        .keys()
        .map(|n| (distance(&wanted, &n.to_lowercase()), n.as_str()))
        .filter(|(d, _)| *d <= wanted.chars().count() / 3 + 1)
        .collect();
    near.sort();
    let near: Vec<&str> = near.iter().take(3).map(|(_, n)| *n).collect();
    let hint = if near.is_empty() { String::new() } else { format!("; did you mean {}?", near.join(", ")) };
    let theirs = if std::env::var("LUDUS_CARDS_DATA").is_ok() {
        " (the operator's card data is read in a game: ask with its `game_id`)"
    } else {
        ""
    };
    format!("{name:?} is not in the bundled card data ({} cards){hint}{theirs}", cards().len())
}

/// Levenshtein distance: the edits from one name to the other.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundled_card_is_found_in_any_case_and_a_typo_is_helped() {
        let bolt = by_name("lightning bolt").unwrap();
        assert_eq!(bolt["name"], "Lightning Bolt");
        assert!(bolt["oracle_text"].as_str().unwrap().starts_with("Lightning Bolt {R}\nInstant\n"), "{bolt}");
        let e = by_name("Lightning Bolts").unwrap_err();
        assert!(e.contains("did you mean Lightning Bolt, "), "the nearest first: {e}");
        assert_eq!((distance("kitten", "sitting"), distance("", "abc"), distance("bolt", "bolt")), (3, 3, 0));
    }
}

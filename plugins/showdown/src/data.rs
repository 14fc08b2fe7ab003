//! Generation 9 battle data (moves, species, type chart, random-battle sets), extracted from the
//! `pokemon-showdown` npm package (MIT) by `data/extract.js` into
//! `data/gen9.json` and embedded. Parsed once per instance on first use.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

#[derive(Deserialize)]
struct Raw {
    moves: HashMap<String, (String, String, String, u32, u32, i32)>,
    species: HashMap<String, (String, Vec<String>, [u32; 6], f64)>,
    types: HashMap<String, HashMap<String, f64>>,
    sets: HashMap<String, (u32, Vec<RawSet>)>,
    items: HashMap<String, String>,
    abilities: HashMap<String, String>,
}

/// One random-battle set as the data file has it: (moves, abilities, items).
type RawSet = (Vec<String>, Vec<String>, Vec<String>);

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Category {
    Physical,
    Special,
    Status,
}

#[derive(Debug, Clone)]
pub struct Move {
    pub name: String,
    pub kind: String,
    pub category: Category,
    pub base_power: u32,
    /// Percent; 100 for moves that never miss.
    pub accuracy: u32,
    pub priority: i32,
}

#[derive(Debug, Clone)]
pub struct Species {
    pub name: String,
    pub types: Vec<String>,
    /// hp, atk, def, spa, spd, spe.
    pub base: [u32; 6],
    pub weight_kg: f64,
}

/// One role of a species in the random-battle generator's pool
/// (`data/random-battles/gen9/sets.json`): the generator picks four moves,
/// an ability and a Tera type from these.
#[derive(Debug, Clone)]
pub struct RandomSet {
    pub movepool: Vec<String>,
    pub abilities: Vec<String>,
    pub tera_types: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct RandomSpecies {
    pub level: u32,
    pub sets: Vec<RandomSet>,
}

pub struct Data {
    moves: HashMap<String, Move>,
    species: HashMap<String, Species>,
    types: HashMap<String, HashMap<String, f64>>,
    sets: HashMap<String, RandomSpecies>,
    /// Species ids of `sets`, sorted: a stable order for seeded draws.
    set_ids: Vec<String>,
    items: HashMap<String, String>,
    abilities: HashMap<String, String>,
}

/// Showdown's ids: lower-case letters and digits only ("Iron Valiant" → "ironvaliant").
pub fn to_id(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

pub fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let raw: Raw = serde_json::from_str(include_str!("../data/gen9.json")).expect("embedded gen9.json is valid");
        let category = |c: &str| match c {
            "P" => Category::Physical,
            "S" => Category::Special,
            _ => Category::Status,
        };
        Data {
            moves: raw
                .moves
                .into_iter()
                .map(|(id, (name, kind, cat, bp, acc, priority))| {
                    let accuracy = if acc == 0 { 100 } else { acc };
                    (id, Move { name, kind, category: category(&cat), base_power: bp, accuracy, priority })
                })
                .collect(),
            species: raw
                .species
                .into_iter()
                .map(|(id, (name, types, base, weight_kg))| (id, Species { name, types, base, weight_kg }))
                .collect(),
            types: raw.types,
            items: raw.items,
            abilities: raw.abilities,
            set_ids: {
                let mut ids: Vec<String> = raw.sets.keys().cloned().collect();
                ids.sort();
                ids
            },
            sets: raw
                .sets
                .into_iter()
                .map(|(id, (level, sets))| {
                    let sets =
                        sets.into_iter().map(|(movepool, abilities, tera_types)| RandomSet { movepool, abilities, tera_types }).collect();
                    (id, RandomSpecies { level, sets })
                })
                .collect(),
        }
    })
}

impl Data {
    pub fn move_(&self, name: &str) -> Option<&Move> {
        self.moves.get(&to_id(name))
    }

    /// A species by name; cosmetic formes fall back to the base species.
    pub fn species(&self, name: &str) -> Option<&Species> {
        let id = to_id(name);
        self.species.get(&id).or_else(|| {
            let base = name.split('-').next().map(to_id)?;
            self.species.get(&base)
        })
    }

    /// The random-battle pool of a species (formes fall back as in `species`).
    pub fn random_sets(&self, name: &str) -> Option<&RandomSpecies> {
        let id = to_id(name);
        self.sets.get(&id).or_else(|| self.sets.get(&name.split('-').next().map(to_id)?))
    }

    /// The ability every random-battle set of exactly this forme has, if
    /// there is one (no fallback to the base species: a forme may differ).
    pub fn sole_ability(&self, forme: &str) -> Option<&str> {
        let sets = &self.sets.get(&to_id(forme))?.sets;
        let first = sets.first()?.abilities.first()?;
        sets.iter().all(|s| s.abilities == [first.clone()]).then_some(first.as_str())
    }

    /// An item's name as the log writes it (`heavydutyboots` → `Heavy-Duty
    /// Boots`); an unknown one as it is.
    pub fn item_name(&self, id: &str) -> String {
        self.items.get(&to_id(id)).cloned().unwrap_or_else(|| id.to_string())
    }

    /// An ability's name as the log writes it (`goodasgold` → `Good as Gold`).
    pub fn ability_name(&self, id: &str) -> String {
        self.abilities.get(&to_id(id)).cloned().unwrap_or_else(|| id.to_string())
    }

    /// Every species of the random-battle pool, in a stable order.
    pub fn random_species_ids(&self) -> &[String] {
        &self.set_ids
    }

    /// Damage multiplier of an attack of type `attacking` on `defending` types.
    pub fn effectiveness(&self, attacking: &str, defending: &[String]) -> f64 {
        defending.iter().map(|d| self.types.get(d).and_then(|row| row.get(attacking)).copied().unwrap_or(1.0)).product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_species_and_types_are_there() {
        let d = data();
        let tb = d.move_("Thunderbolt").unwrap();
        assert_eq!((tb.kind.as_str(), tb.category, tb.base_power, tb.accuracy), ("Electric", Category::Special, 90, 100));
        assert_eq!(d.move_("swordsdance").unwrap().category, Category::Status);
        assert_eq!(d.species("Gyarados").unwrap().types, ["Water", "Flying"]);
        assert_eq!(d.effectiveness("Electric", &d.species("Gyarados").unwrap().types), 4.0);
        assert_eq!(d.effectiveness("Ground", &d.species("Gyarados").unwrap().types), 0.0);
        assert_eq!(d.effectiveness("Fire", &["Water".into(), "Dragon".into()]), 0.25);
        assert!(d.species("Iron Valiant").is_some());
        let pool = d.random_sets("Venusaur").unwrap();
        assert_eq!(pool.level, 84);
        assert!(pool.sets.iter().any(|s| s.movepool.contains(&"sleeppowder".to_string())));
        assert!(d.random_species_ids().len() > 400);
    }
}

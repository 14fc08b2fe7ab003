//! A whole Showdown decision composed from `get_available_actions`, for the
//! tests and the Showdown benchmark (which includes this file by path).

/// A whole decision from `get_available_actions`' answer: for each open
/// position in order, `choose` picks among the actions still free there (no
/// Pokémon sent in twice, a once-a-battle mechanic at one position, a pass
/// only where nothing is left to send in); joined as `make_move` takes it.
pub fn decision(actions: &serde_json::Value, mut choose: impl FnMut(&[&str]) -> usize) -> String {
    let mut per: Vec<(u64, Vec<&str>)> = Vec::new();
    for a in actions["actions"].as_array().unwrap() {
        let (p, name) = (a["position"].as_u64().unwrap(), a["action"].as_str().unwrap());
        match per.iter_mut().find(|(q, _)| *q == p) {
            Some((_, names)) => names.push(name),
            None => per.push((p, vec![name])),
        }
    }
    let once = |n: &str| ["-tera", "-mega", "-zmove", "-dynamax"].into_iter().find(|m| n.split(' ').next().unwrap_or("").ends_with(m));
    let mut chosen: Vec<&str> = Vec::new();
    for (_, names) in &per {
        let free: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !(n.starts_with("switch ") && chosen.contains(n)))
            .filter(|n| once(n).is_none_or(|m| chosen.iter().all(|c| once(c) != Some(m))))
            .collect();
        let free = if free.len() > 1 { free.into_iter().filter(|n| *n != "pass").collect() } else { free };
        chosen.push(free[choose(&free)]);
    }
    chosen.join(", ")
}

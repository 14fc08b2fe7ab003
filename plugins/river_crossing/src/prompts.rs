//! The paper's prompts for River Crossing (The Illusion of Thinking,
//! appendix A.1.3) as its authors wrote them, the instance filled in (what
//! differs from the appendix's text, and why: docs/games.md).

use ludus_sdk::puzzle_prompts::Paper;

use crate::rules::{MAX_CAPACITY, MAX_PAIRS, default_capacity};

pub const PAPER: Paper = Paper {
    puzzle: "River Crossing",
    system: SYSTEM,
    user,
    n: (1, MAX_PAIRS),
    n_means: "the number of actor/agent pairs",
    k_means: Some("the boat's capacity (default as in the paper: 2 for n ≤ 3, else 3)"),
    moves_format: "moves = [[\"A_2\", \"a_2\"], [\"A_2\"], ...]",
};

const SYSTEM: &str = "You are a helpful assistant. Solve this puzzle for me.
You can represent actors with a_1, a_2, ... and agents with A_1, A_2, ... . Your solution must be a list of boat moves where each move indicates the people on the boat. For example, if there were two actors and two agents, you should return:
moves = [[\"A_2\", \"a_2\"], [\"A_2\"], [\"A_1\", \"A_2\"], [\"A_1\"], [\"A_1\", \"a_1\"]]
which indicates that in the first move, A_2 and a_2 row from left to right, and in the second move, A_2 rows from right to left and so on.
Requirements:
• When exploring potential solutions in your thinking process, always include the corresponding complete list of boat moves.
• The list shouldn't have comments.
• Ensure your final answer also includes the complete list of moves for final solution.";

fn user(n: u32, k: Option<u32>) -> Result<String, String> {
    let k = k.unwrap_or_else(|| default_capacity(n));
    if !(1..=MAX_CAPACITY).contains(&k) {
        return Err(format!("`k` (the boat's capacity) must be 1–{MAX_CAPACITY}; {k} is out of range"));
    }
    Ok(format!(
        "{n} actors and their {n} agents want to cross a river in a boat that is capable of holding only {k} people at a \
         time, with the constraint that no actor can be in the presence of another agent, including while riding the \
         boat, unless their own agent is also present, because each agent is worried their rivals will poach their \
         client. Initially, all actors and agents are on the left side of the river with the boat. How should they cross \
         the river? (Note: the boat cannot travel empty)"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_instance_is_filled_in_with_the_papers_boat() {
        assert!(
            super::user(3, None)
                .unwrap()
                .starts_with("3 actors and their 3 agents want to cross a river in a boat that is capable of holding only 2 people")
        );
        assert!(super::user(5, None).unwrap().contains("only 3 people at a time"));
        assert!(super::user(5, Some(4)).unwrap().contains("only 4 people at a time"));
        assert!(super::user(5, Some(0)).is_err());
    }
}

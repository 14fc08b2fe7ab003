//! The paper's prompts for Checker Jumping (The Illusion of Thinking,
//! appendix A.1.2) as its authors wrote them, the instance filled in (what
//! differs from the appendix's text, and why: docs/games.md).

use ludus_sdk::puzzle_prompts::Paper;

use crate::rules::MAX_N;

pub const PAPER: Paper = Paper {
    puzzle: "Checker Jumping",
    system: SYSTEM,
    user,
    n: (1, MAX_N),
    n_means: "the number of red (and of blue) checkers",
    k_means: None,
    moves_format: "moves = [[checker_color, position_from, position_to], ...]",
};

const SYSTEM: &str = "You are a helpful assistant. Solve this puzzle for me.
On a one-dimensional board, there are red checkers ('R'), blue checkers ('B'), and one empty space ('_'). A checker can move by either:
1. Sliding forward into an adjacent empty space, or
2. Jumping over exactly one checker of the opposite color to land in an empty space.
The goal is to swap the positions of all red and blue checkers, effectively mirroring the initial state.
Example: If the initial state is ['R', '_', 'B'], the goal is to reach ['B', '_', 'R']. Your solution should be a list of moves where each move is represented as [checker_color, position_from, position_to]. For example:
moves = [['R', 0, 1], ['B', 2, 0], ['R', 1, 2]]
This means: Move the red checker from position 0 to 1, then move the blue checker from position 2 to 0, and so on.
Requirements:
• When exploring potential solutions in your thinking process, always include the corresponding complete list of moves.
• The positions are 0-indexed (the leftmost position is 0).
• Ensure your final answer includes the complete list of moves for final solution in the format: moves = [[checker_color, position_from, position_to], ...]";

fn user(n: u32, _k: Option<u32>) -> Result<String, String> {
    let row = |left: &str, right: &str| {
        let side = |c: &str| vec![c; n as usize].join(" ");
        format!("{} _ {}", side(left), side(right))
    };
    Ok(format!(
        "I have a puzzle with {} positions, where {n} red checkers ('R') on left, {n} blue checkers ('B') on right, and one \
         empty space ('_') in between are arranged in a line.
Initial board: {}
Goal board: {}
Rules:
• A checker can slide into an adjacent empty space.
• A checker can jump over exactly one checker of the opposite color to land in an empty space.
• Checkers cannot move backwards (towards their starting side).
Find the minimum sequence of moves to transform the initial board into the goal board.",
        2 * n + 1,
        row("R", "B"),
        row("B", "R")
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_instance_is_written_out() {
        let u = super::user(3, None).unwrap();
        assert!(u.starts_with("I have a puzzle with 7 positions, where 3 red checkers"), "{u}");
        assert!(u.contains("Initial board: R R R _ B B B\nGoal board: B B B _ R R R\n"), "{u}");
    }
}
